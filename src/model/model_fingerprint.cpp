// The base model's fingerprint for seed logs (see model_fingerprint.h).
#include "model/model_fingerprint.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "common/check.h"

namespace smezo {

namespace {

struct Fnv1a {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  }
  void add_int(int64_t v) { add(&v, sizeof v); }
  std::string hex() const {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
  }
};

const char* qk_rows_name(const ModelConfig& c) {
  if (c.position == POSITION_LEARNED) return "none";  // learned positions: no RoPE rows
  return c.rope_style == ROPE_INTERLEAVED ? "interleaved" : "rotate-half";
}

bool is_hex16(const nlohmann::json& j) {
  if (!j.is_string()) return false;
  const std::string& s = j.get_ref<const std::string&>();
  return s.size() == 16 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

nlohmann::json model_fingerprint_parts(Model& model) {
  nlohmann::json parts = nlohmann::json::object();
  std::vector<float> row;
  for (Param* p : model.params()) {
    if (p->info.adapter != ADAPTER_NONE) continue;
    Fnv1a f;
    f.add(p->info.name.data(), p->info.name.size());
    f.add_int(p->w.rows);
    f.add_int(p->w.cols);
    row.resize(static_cast<size_t>(p->w.cols));
    for (int64_t r : {int64_t{0}, p->w.rows - 1}) {  // both fixed by the RoPE row permutation
      model.backend().download(tensor_rows(p->w, r, 1), row.data());
      f.add(row.data(), row.size() * sizeof(float));
    }
    parts[p->info.name] = f.hex();
  }
  return parts;
}

nlohmann::json model_fingerprint(const nlohmann::json& parts, const ModelConfig& config) {
  Fnv1a f;
  for (auto& kv : parts.items()) {  // nlohmann's object: sorted by name
    f.add(kv.key().data(), kv.key().size() + 1);  // with the terminating NUL: no two names run together
    const std::string v = kv.value().get<std::string>();
    f.add(v.data(), v.size());
  }
  return {{"weights", f.hex()}, {"qk_rows", qk_rows_name(config)}};
}

std::string model_fingerprint_difference(const nlohmann::json& logged, const nlohmann::json& mine,
                                         const std::string& model_path) {
  if (logged.is_null()) return "";  // a log from before the fingerprint
  SMEZO_REQUIRE(logged.is_object() && is_hex16(logged.value("weights", nlohmann::json())) &&
                    logged.value("qk_rows", nlohmann::json()).is_string(),
                "the run header's model_fingerprint %s is malformed (expected {\"weights\": 16 hex digits, "
                "\"qk_rows\": ...}): was the seed log edited?", printable(logged.dump(), 120).c_str());
  const std::string weights = mine.value("weights", std::string()), qk_rows = mine.value("qk_rows", std::string());
  if (logged["weights"] != weights)
    return format_string("the model differs: %s is not the base model the run started from (weights fingerprint %s "
                         "in the run, %s here)", model_path.c_str(), logged["weights"].get<std::string>().c_str(),
                         weights.c_str());
  if (logged["qk_rows"] != qk_rows)
    return format_string("%s holds the run's weights with the Q and K rows in %s order, the run's were %s (a "
                         "conversion between GGUF/llama2.c and Hugging Face reorders them): the noise would land on "
                         "other entries", model_path.c_str(), qk_rows.c_str(),
                         printable(logged["qk_rows"].get<std::string>(), 40).c_str());
  return "";
}

}  // namespace smezo
