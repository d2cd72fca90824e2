// LoRA adapter folders in Hugging Face PEFT's layout (see checkpoint_lora.h).
#include "train/checkpoint_lora.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "common/check.h"
#include "common/input_file.h"
#include "formats/json_read.h"
#include "formats/safetensors.h"
#include "model/model_params.h"
#include "run/summary.h"
#include "train/adapter_base.h"
#include "train/checkpoint.h"  // kRunSettingsFile

namespace smezo {

namespace {

const std::string kPeftPrefix = "base_model.model.";

// B's rows of q/k follow the model's RoPE layout; Hugging Face files hold rotate-half rows.
bool permutes_b(const Model& model, ParamRole role) {
  const ModelConfig& c = model.config();
  return rope_rows_interleaved(c) && rope_permutes_rows(role, false);
}

ParamRole role_of_module(const std::string& module) {
  for (ParamRole r : {ROLE_ATTN_Q, ROLE_ATTN_K, ROLE_ATTN_V, ROLE_ATTN_O, ROLE_MLP_GATE, ROLE_MLP_UP, ROLE_MLP_DOWN})
    if (module == lora_module_name(r)) return r;
  return ROLE_OTHER;
}

// "base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight" -> layer 3, q, A; else false.
bool parse_peft_name(const std::string& name, LoraAdapterTensor* t) {
  const std::string head = kPeftPrefix + "model.layers.";
  if (name.compare(0, head.size(), head) != 0) return false;
  std::istringstream in(name.substr(head.size()));
  std::string part;
  std::vector<std::string> parts;
  while (std::getline(in, part, '.')) parts.push_back(part);
  // N, self_attn|mlp, module, lora_A|lora_B, weight
  if (parts.size() != 5 || parts[4] != "weight" || (parts[3] != "lora_A" && parts[3] != "lora_B")) return false;
  if (parts[0].empty() || parts[0].find_first_not_of("0123456789") != std::string::npos) return false;
  t->layer = std::stoll(parts[0]);
  t->role = role_of_module(parts[2]);
  const bool attn = t->role >= ROLE_ATTN_Q && t->role <= ROLE_ATTN_O;
  if (t->role == ROLE_OTHER || parts[1] != (attn ? "self_attn" : "mlp")) return false;
  t->is_a = parts[3] == "lora_A";
  return true;
}

// The base weight's name of an adapter tensor: model.layers.N.<...>.q_proj.weight.
std::string base_weight_name(const std::string& peft_name) {
  const std::string module = peft_name.substr(kPeftPrefix.size(), peft_name.size() - kPeftPrefix.size() -
                                                                      std::string(".lora_A.weight").size());
  return module + ".weight";
}

Param* find_param(Model& model, const std::string& name) {
  for (Param* p : model.params())
    if (p->info.name == name) return p;
  return nullptr;
}

nlohmann::json adapter_config(const LoraOptions& o, const nlohmann::json& base_model) {
  nlohmann::json modules = nlohmann::json::array();
  for (ParamRole r : o.targets) modules.push_back(lora_module_name(r));
  return {{"peft_type", "LORA"}, {"task_type", "CAUSAL_LM"}, {"base_model_name_or_path", base_model},
          {"r", o.rank}, {"lora_alpha", o.alpha}, {"target_modules", modules}, {"bias", "none"},
          {"fan_in_fan_out", false}, {"lora_dropout", 0.0}, {"inference_mode", true},
          {"init_lora_weights", true}, {"use_rslora", false}, {"use_dora", false},
          {"modules_to_save", nullptr}, {"layers_to_transform", nullptr}, {"revision", nullptr}};
}

LoraOptions options_from_config(const nlohmann::json& j, const std::string& path, std::string* base_model) {
  auto field = [&](const char* key) -> const nlohmann::json& {
    SMEZO_REQUIRE(j.contains(key), "%s: field %s is missing", path.c_str(), key);
    return j[key];
  };
  SMEZO_REQUIRE(field("peft_type") == "LORA", "%s: peft_type %s: only LORA adapters are read", path.c_str(),
                json_brief(j["peft_type"]).c_str());
  SMEZO_REQUIRE(!j.contains("bias") || j["bias"] == "none", "%s: bias %s: only bias \"none\" is supported",
                path.c_str(), json_brief(j["bias"]).c_str());
  SMEZO_REQUIRE(!j.contains("fan_in_fan_out") || j["fan_in_fan_out"] == false,
                "%s: fan_in_fan_out true (GPT-2 Conv1D layout) is not supported", path.c_str());
  SMEZO_REQUIRE(!adapter_config_bool(j, "use_dora", false, path) && !adapter_config_bool(j, "use_rslora", false, path),
                "%s: DoRA and rsLoRA adapters are not supported", path.c_str());
  SMEZO_REQUIRE(field("r").is_number_integer() && field("lora_alpha").is_number(),
                "%s: r must be an integer and lora_alpha a number", path.c_str());
  SMEZO_REQUIRE(field("target_modules").is_array(), "%s: target_modules must be a list of module names",
                path.c_str());
  LoraOptions o;
  o.rank = j["r"].get<int64_t>();
  const double alpha = j["lora_alpha"].get<double>();  // checked in double: a float cast out of range is undefined
  SMEZO_REQUIRE(std::isfinite(alpha) && alpha > 0.0 && alpha <= 1e30, "%s: lora_alpha %s must be a positive number",
                path.c_str(), json_brief(j["lora_alpha"]).c_str());
  o.alpha = static_cast<float>(alpha);
  std::string roles;
  for (const nlohmann::json& m : j["target_modules"]) {
    const ParamRole r = m.is_string() ? role_of_module(m.get<std::string>()) : ROLE_OTHER;
    SMEZO_REQUIRE(r != ROLE_OTHER, "%s: target_modules entry %s is not one of q_proj, k_proj, v_proj, o_proj, "
                  "gate_proj, up_proj, down_proj", path.c_str(), json_brief(m).c_str());
    roles += (roles.empty() ? "" : ",") + std::string(param_role_name(r));
  }
  o.targets = lora_targets_parse(roles);
  lora_validate(o, ValueOrigin{path, {{"--lora-r", "r"}, {"--lora-alpha", "lora_alpha"}, {"--lora-targets",
                                                                                         "target_modules"}}});
  *base_model = adapter_config_string(j, "base_model_name_or_path", path);
  return o;
}

}  // namespace

bool adapter_config_bool(const nlohmann::json& j, const char* key, bool fallback, const std::string& path) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  SMEZO_REQUIRE(j[key].is_boolean(), "%s: %s %s must be true or false", path.c_str(), key,
                printable(json_brief(j[key])).c_str());
  return j[key].get<bool>();
}

std::string adapter_config_string(const nlohmann::json& j, const char* key, const std::string& path) {
  if (!j.contains(key) || j[key].is_null()) return "";
  SMEZO_REQUIRE(j[key].is_string(), "%s: %s %s must be a string", path.c_str(), key,
                printable(json_brief(j[key])).c_str());
  return j[key].get<std::string>();
}

std::string adapter_base_model(const std::string& base_model) {
  std::error_code ec;
  if (base_model.empty() || !std::filesystem::exists(base_model, ec)) return base_model;
  std::filesystem::path absolute = std::filesystem::absolute(base_model, ec).lexically_normal();
  if (!ec && !absolute.has_filename() && absolute.has_parent_path()) absolute = absolute.parent_path();  // "dir/"
  return ec ? base_model : absolute.string();
}

void save_lora_adapter(Model& model, const std::string& dir, const std::string& base_model,
                       const nlohmann::json& run_settings) {
  SMEZO_REQUIRE(model.has_lora(), "save_lora_adapter: the model has no LoRA adapters");
  std::vector<SafetensorsEntry> entries;
  std::vector<std::vector<float>> values;
  values.reserve(model.params().size());
  for (const Param* p : model.params()) {
    if (p->info.adapter == ADAPTER_NONE) continue;
    values.emplace_back(static_cast<size_t>(p->w.numel()));
    model.backend().download(p->w, values.back().data());
    if (p->info.adapter == ADAPTER_LORA_B && permutes_b(model, p->info.role)) {
      std::vector<float> hf(values.back().size());
      interleaved_rows_to_rotate_half(values.back().data(), p->w.rows, p->w.cols, model.config().head_dim, hf.data());
      values.back() = std::move(hf);
    }
    entries.push_back(SafetensorsEntry{p->info.name, DTYPE_F32, {p->w.rows, p->w.cols}, values.back().data()});
  }
  write_folder_swapped(dir, "adapter", [&](const std::string& tmp) {  // as full checkpoints are
    write_safetensors(tmp + "/" + kAdapterWeightsFile, entries, {{"format", "pt"}});
    run_write_file_atomic(tmp + "/" + kAdapterConfigFile,
                          adapter_config(model.lora_options(), adapter_peft_base_name(base_model)).dump(2) + "\n");
    const nlohmann::json settings = adapter_run_settings(run_settings, base_model);
    if (settings.is_object()) run_write_file_atomic(tmp + "/" + kRunSettingsFile, settings.dump(2) + "\n");
  });
}

nlohmann::json read_adapter_config(const std::string& dir) {
  const std::string config_path = dir + "/" + kAdapterConfigFile;
  const std::string text = input_read(config_path, "adapter config", kInputSettingsMaxBytes);
  nlohmann::json j = json_parse_strict(text.data(), text.data() + text.size(), config_path);
  SMEZO_REQUIRE(j.is_object(), "%s must hold a JSON object", config_path.c_str());
  return j;
}

LoraAdapter read_lora_adapter(const std::string& dir) {
  const std::string config_path = dir + "/" + kAdapterConfigFile;
  const nlohmann::json j = read_adapter_config(dir);
  LoraAdapter adapter;
  adapter.options = options_from_config(j, config_path, &adapter.base_model);
  const SafetensorsFile file(dir + "/" + kAdapterWeightsFile);
  for (const auto& kv : file.tensors()) {
    LoraAdapterTensor t;
    t.name = kv.first;
    SMEZO_REQUIRE(parse_peft_name(kv.first, &t), "%s: tensor %s is not a LoRA matrix of a LLaMA-family layer "
                  "(base_model.model.model.layers.N.<self_attn|mlp>.<module>.lora_<A|B>.weight)",
                  file.path().c_str(), kv.first.c_str());
    const HostTensorView& v = kv.second;
    SMEZO_REQUIRE(v.shape.size() == 2, "%s: tensor %s has %zu dimensions, a LoRA matrix has 2", file.path().c_str(),
                  kv.first.c_str(), v.shape.size());
    t.rows = v.shape[0];
    t.cols = v.shape[1];
    const int64_t rank_dim = t.is_a ? t.rows : t.cols;
    SMEZO_REQUIRE(rank_dim == adapter.options.rank, "%s: tensor %s has shape [%lld, %lld], but r is %lld in %s",
                  file.path().c_str(), kv.first.c_str(), (long long)t.rows, (long long)t.cols,
                  (long long)adapter.options.rank, kAdapterConfigFile);
    t.values.resize(static_cast<size_t>(v.numel()));
    v.read_f32_finite(t.values.data());
    adapter.tensors.push_back(std::move(t));
  }
  SMEZO_REQUIRE(!adapter.tensors.empty() && adapter.tensors.size() % 2 == 0,
                "%s: %zu LoRA tensors; every adapted layer needs its lora_A and lora_B", file.path().c_str(),
                adapter.tensors.size());
  return adapter;
}

void load_lora_adapter(Model& model, const LoraAdapter& adapter) {
  SMEZO_REQUIRE(model.has_lora(), "load_lora_adapter: add_lora first");
  size_t model_tensors = 0;
  for (const Param* p : model.params()) model_tensors += p->info.adapter != ADAPTER_NONE;
  SMEZO_REQUIRE(model_tensors == adapter.tensors.size(), "the adapter has %zu tensors, the model's LoRA layout %zu",
                adapter.tensors.size(), model_tensors);
  std::vector<float> internal;
  for (const LoraAdapterTensor& t : adapter.tensors) {
    Param* p = find_param(model, t.name);
    SMEZO_REQUIRE(p && p->w.rows == t.rows && p->w.cols == t.cols,
                  "adapter tensor %s [%lld, %lld] has no place of that shape in the model", t.name.c_str(),
                  (long long)t.rows, (long long)t.cols);
    const float* src = t.values.data();
    if (!t.is_a && permutes_b(model, t.role)) {
      internal.resize(t.values.size());
      rotate_half_rows_to_interleaved(src, t.rows, t.cols, model.config().head_dim, internal.data());
      src = internal.data();
    }
    model.backend().upload(p->w, src);
  }
}

void merge_lora_adapter(Model& model, const LoraAdapter& adapter) {
  SMEZO_REQUIRE(!model.has_lora(), "merge_lora_adapter: the model must hold the base weights only");
  std::map<std::string, const LoraAdapterTensor*> a_of, b_of;  // by base weight name
  for (const LoraAdapterTensor& t : adapter.tensors) (t.is_a ? a_of : b_of)[base_weight_name(t.name)] = &t;
  const double scale = static_cast<double>(adapter.options.scale());
  for (const auto& kv : a_of) {
    const LoraAdapterTensor& A = *kv.second;
    SMEZO_REQUIRE(b_of.count(kv.first), "the adapter has %s but no lora_B for it", A.name.c_str());
    const LoraAdapterTensor& B = *b_of[kv.first];
    Param* w = find_param(model, kv.first);
    SMEZO_REQUIRE(w != nullptr, "the adapter adapts %s, which the base model does not have", kv.first.c_str());
    SMEZO_REQUIRE(A.cols == w->w.cols && B.rows == w->w.rows,
                  "the adapter of %s is for a [%lld, %lld] weight, the base model's is [%lld, %lld]", kv.first.c_str(),
                  (long long)B.rows, (long long)A.cols, (long long)w->w.rows, (long long)w->w.cols);
    std::vector<float> b_rows(B.values);  // in the model's row layout
    if (permutes_b(model, B.role)) rotate_half_rows_to_interleaved(B.values.data(), B.rows, B.cols,
                                                                   model.config().head_dim, b_rows.data());
    std::vector<float> values(static_cast<size_t>(w->w.numel()));
    model.backend().download(w->w, values.data());
    const int64_t r = adapter.options.rank, in = A.cols;
    for (int64_t o = 0; o < B.rows; o++)
      for (int64_t i = 0; i < in; i++) {
        double delta = 0.0;  // (B A)[o, i] in double, rounded once
        for (int64_t k = 0; k < r; k++) delta += static_cast<double>(b_rows[o * r + k]) * A.values[k * in + i];
        values[o * in + i] = static_cast<float>(values[o * in + i] + scale * delta);
      }
    model.backend().upload(w->w, values.data());
  }
}

}  // namespace smezo
