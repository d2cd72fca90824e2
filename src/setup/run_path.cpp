// The run's path record (see run_path.h).
#include "setup/run_path.h"

#include <cstdint>

#include "common/check.h"
#include "common/device_names.h"
#include "cuda/cuda_plan.h"  // fused_crossover_table, cuda_weight_chunk_bytes (host-only)

namespace smezo {

namespace {

// FNV-1a over the crossover table's rows: which shapes `auto` sends to the fused kernel.
std::string table_fingerprint(const std::vector<FusedCrossoverRow>& table) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](int64_t v) {
    for (int b = 0; b < 8; ++b) h = (h ^ ((static_cast<uint64_t>(v) >> (8 * b)) & 0xffu)) * 0x100000001b3ull;
  };
  for (const FusedCrossoverRow& r : table) {
    mix(r.storage);
    mix(r.pair);
    mix(r.max_rows_per_probe);
    mix(r.min_weight_elems);
  }
  return format_string("%016llx", static_cast<unsigned long long>(h));
}

std::string cuda_linear_path(LinearPathMode mode) {
  enum_require_known(linear_mode_names(), mode, "linear path");
  if (mode == LINEAR_MODE_AUTO)
    return fused_crossover_table().empty() ? "wprime" : "auto:" + table_fingerprint(fused_crossover_table());
  return linear_mode_name(mode);
}

// The options that make an invocation resolve to the logged linear path.
std::string linear_path_option(const std::string& logged, const std::string& mine_device) {
  if (logged == "cpu") return "pass --device cpu";
  if (logged == "wprime" || logged == "fused")
    return (mine_device == "cuda" ? "pass " : "pass --device cuda ") + std::string("--linear-path ") + logged;
  return "another build's choice: resume with the smezo that wrote the run";
}

}  // namespace

nlohmann::json run_path_record(Device device, LinearPathMode linear_path, bool graphs) {
  const bool cuda = device == DEVICE_CUDA;
  return {{"linear_path", cuda ? cuda_linear_path(linear_path) : "cpu"},
          {"weight_block_bytes", cuda ? nlohmann::json(cuda_weight_chunk_bytes()) : nlohmann::json(nullptr)},
          {"graphs", cuda && graphs ? "on" : "off"}};
}

bool run_path_recorded(const nlohmann::json& header) { return header.is_object() && header.contains("linear_path"); }

std::vector<std::string> run_path_differences(const nlohmann::json& logged, const nlohmann::json& mine) {
  std::vector<std::string> out;
  if (!run_path_recorded(logged)) return out;
  const nlohmann::json& theirs = logged["linear_path"];
  if (theirs != mine["linear_path"]) {
    const std::string option = linear_path_option(theirs.is_string() ? theirs.get<std::string>() : "",
                                                  mine["linear_path"] == "cpu" ? "cpu" : "cuda");
    out.push_back(format_string("linear path %s in the run, %s here (%s)", theirs.dump().c_str(),
                                mine["linear_path"].dump().c_str(), option.c_str()));
  }
  const nlohmann::json block = logged.value("weight_block_bytes", nlohmann::json());
  if (block != mine["weight_block_bytes"])
    out.push_back(format_string("W' block of %s bytes in the run, %s here (set %s to the run's size in MiB)", block.dump().c_str(),
                                mine["weight_block_bytes"].dump().c_str(), kWeightBlockEnv));
  const nlohmann::json graphs = logged.value("graphs", nlohmann::json("off"));
  if (graphs != mine["graphs"]) {
    const std::string value = graphs.is_string() ? graphs.get<std::string>() : graphs.dump();
    out.push_back(format_string("graphs %s in the run, %s here (pass --graphs %s)", graphs.dump().c_str(),
                                mine["graphs"].dump().c_str(), printable(value).c_str()));
  }
  return out;
}

std::string run_path_describe(const nlohmann::json& header) {
  if (!run_path_recorded(header)) return "no recorded path (a log written before smezo recorded the linear path)";
  const nlohmann::json block = header.value("weight_block_bytes", nlohmann::json());
  const std::string blocks = block.is_null() ? "no W' blocks"
                             : block.is_number_integer() && block.get<int64_t>() % (int64_t(1) << 20) == 0
                                 ? format_string("W' blocks of %lld MiB", (long long)(block.get<int64_t>() >> 20))
                                 : "W' blocks of " + block.dump() + " bytes";
  return "linear path " + header["linear_path"].dump() + ", " + blocks + ", graphs " +
         header.value("graphs", nlohmann::json("off")).dump();
}

}  // namespace smezo
