// The GGUF checkpoint of --tune scales (see checkpoint_scales.h).
#include "train/checkpoint_scales.h"

#include <filesystem>
#include <vector>

#include "common/check.h"
#include "common/sha256.h"
#include "formats/gguf_patch.h"
#include "formats/safetensors.h"
#include "run/summary.h"
#include "smezo/version.h"
#include "train/checkpoint.h"

namespace smezo {

nlohmann::json scales_describe(const Model& model, const std::string& base_path) {
  return {{"mode", "scales"}, {"with_m", model.scales_with_m()}, {"base_sha256", file_sha256_hex(base_path)}};
}

bool scales_with_m_from_json(const nlohmann::json& tune, const std::string& source) {
  SMEZO_REQUIRE(tune.is_object() && tune.value("mode", "") == "scales" && tune.contains("with_m") &&
                    tune["with_m"].is_boolean() && tune.contains("base_sha256") && tune["base_sha256"].is_string(),
                "%s: the run header's tune %s is not a --tune scales record (mode, with_m, base_sha256)",
                source.c_str(), printable(tune.dump(), 120).c_str());
  return tune["with_m"].get<bool>();
}

void scales_require_base(const nlohmann::json& tune, const std::string& base_path, const std::string& source) {
  scales_with_m_from_json(tune, source);
  const std::string logged = tune["base_sha256"].get<std::string>();
  const std::string mine = file_sha256_hex(base_path);
  SMEZO_REQUIRE(mine == logged, "%s: the run tuned the scales of a GGUF with sha256 %s, but %s has sha256 %s (a "
                "different, changed or truncated file) ---> HINT: give the exact base file the run started from",
                source.c_str(), printable(logged, 80).c_str(), base_path.c_str(), mine.c_str());
}

nlohmann::json scales_provenance(const nlohmann::json& header, const std::string& base_path, int64_t step,
                                 const std::string& seed_log, const char* written_by) {
  const nlohmann::json tune = header.value("tune", nlohmann::json::object());
  nlohmann::json spsa = header.value("spsa", nlohmann::json::object());
  spsa.erase("thresholds_f32_bits");  // one per tensor: the seed log has them
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(base_path, ec);
  return {{"written_by", written_by},
          {"smezo_version", SMEZO_VERSION},
          {"base_file", std::filesystem::path(base_path).filename().string()},
          {"base_path", ec ? base_path : abs.lexically_normal().string()},
          {"base_sha256", tune.value("base_sha256", "")},
          {"tune", tune},
          {"method", spsa.value("method", nlohmann::json())},
          {"spsa", spsa},
          {"steps", step},
          {"seed_log", seed_log}};
}

namespace {

// One patch per packed weight with master scales, with the f32 masters for the safetensors beside it.
void collect_scales(Model& model, std::vector<GgufScalePatch>* patches, std::vector<std::vector<float>>* masters,
                    std::vector<SafetensorsEntry>* entries) {
  for (const Param* p : model.params()) {
    if (!p->scales) continue;
    const Param& s = *p->scales;
    masters->emplace_back(static_cast<size_t>(s.w.numel()));
    model.backend().download(s.w, masters->back().data());
    const std::vector<float>& v = masters->back();
    GgufScalePatch patch;
    patch.tensor = model.packed_file_name(p->info.name);
    patch.d.assign(v.begin(), v.begin() + s.w.cols);
    if (s.w.rows == 2) patch.m.assign(v.begin() + s.w.cols, v.end());
    patches->push_back(std::move(patch));
    // a moved vector keeps its buffer: the pointer stays good as masters grows
    entries->push_back({s.info.name, DTYPE_F32, {s.w.rows, s.w.cols}, masters->back().data()});
  }
}

}  // namespace

void save_scales_checkpoint(Model& model, const std::string& dir, const std::string& base_path,
                            const nlohmann::json& provenance, const nlohmann::json& run_settings) {
  SMEZO_REQUIRE(model.has_scales(), "save_scales_checkpoint: the model has no master scales (--tune scales)");
  std::vector<GgufScalePatch> patches;
  std::vector<std::vector<float>> masters;
  std::vector<SafetensorsEntry> entries;
  collect_scales(model, &patches, &masters, &entries);
  write_folder_swapped(dir, "checkpoint", [&](const std::string& tmp) {  // as full checkpoints are
    write_scale_patched_gguf(base_path, tmp + "/" + kScalesGgufFile, patches);
    write_safetensors(tmp + "/" + kScalesMastersFile, entries, {{"format", "pt"}});
    run_write_file_atomic(tmp + "/" + kScalesProvenanceFile, provenance.dump(2) + "\n");
    if (run_settings.is_object()) run_write_file_atomic(tmp + "/" + kRunSettingsFile, run_settings.dump(2) + "\n");
  });
}

}  // namespace smezo
