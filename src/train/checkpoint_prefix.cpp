// Prefix adapter folders in Hugging Face PEFT's PREFIX_TUNING layout (see checkpoint_prefix.h).
#include "train/checkpoint_prefix.h"

#include <filesystem>

#include "common/check.h"
#include "formats/json_read.h"
#include "formats/safetensors.h"
#include "model/model_params.h"
#include "run/summary.h"
#include "train/checkpoint.h"        // kRunSettingsFile, write_folder_swapped
#include "train/adapter_base.h"
#include "train/checkpoint_lora.h"   // kAdapterConfigFile, kAdapterWeightsFile, read_adapter_config

namespace smezo {

namespace {

// Keys of models with interleaved RoPE are permuted per head; files hold rotate-half order.
bool permutes_keys(const Model& model) {
  const ModelConfig& c = model.config();
  return rope_rows_interleaved(c);
}

// The fields of checkpoint_prefix.h's adapter_config.json (no peft_version: smezo is no PEFT version).
nlohmann::json adapter_config(const Model& model, const std::string& base_model) {
  const ModelConfig& c = model.config();
  const int64_t token_dim = c.n_kv_heads * c.head_dim;
  return {{"peft_type", "PREFIX_TUNING"}, {"task_type", "CAUSAL_LM"},
          {"base_model_name_or_path", adapter_peft_base_name(base_model)}, {"revision", nullptr},
          {"num_virtual_tokens", model.prefix_options().tokens}, {"num_layers", c.n_layers},
          {"token_dim", token_dim}, {"num_attention_heads", c.n_kv_heads}, {"num_transformer_submodules", 1},
          {"encoder_hidden_size", token_dim}, {"prefix_projection", false}, {"init_weights", nullptr},
          {"modules_to_save", nullptr}, {"auto_mapping", nullptr}, {"inference_mode", true}};
}

// A size of the config: 1 .. 2^24 (far above any model's; a product of three stays in int64).
int64_t positive_int(const nlohmann::json& j, const char* key, const std::string& path) {
  SMEZO_REQUIRE(j.contains(key), "%s: field %s is missing", path.c_str(), key);
  constexpr int64_t kMost = int64_t{1} << 24;
  const nlohmann::json& v = j[key];
  const std::optional<int64_t> i = json_number<int64_t>(v);
  SMEZO_REQUIRE(i && *i >= 1 && *i <= kMost, "%s: %s %s must be an integer from 1 to %lld", path.c_str(), key,
                json_brief(v).c_str(), (long long)kMost);
  return *i;
}

}  // namespace

void save_prefix_adapter(Model& model, const std::string& dir, const std::string& base_model,
                         const nlohmann::json& run_settings) {
  SMEZO_REQUIRE(model.has_prefix(), "save_prefix_adapter: the model has no prefix");
  const ModelConfig& c = model.config();
  const int64_t P = model.prefix_options().tokens, kv = c.n_kv_heads * c.head_dim, width = c.n_layers * 2 * kv;
  std::vector<float> table(static_cast<size_t>(P * width)), part(static_cast<size_t>(P * kv)), row(kv);
  for (size_t l = 0; l < model.prefix_layers().size(); l++) {
    for (int part_index = 0; part_index < 2; part_index++) {  // key, then value
      const Param& p = part_index == 0 ? model.prefix_layers()[l].key : model.prefix_layers()[l].value;
      model.backend().download(p.w, part.data());
      for (int64_t t = 0; t < P; t++) {
        const float* src = part.data() + t * kv;
        if (part_index == 0 && permutes_keys(model)) {  // a key row is n_kv_heads blocks of head_dim
          interleaved_rows_to_rotate_half(src, kv, 1, c.head_dim, row.data());
          src = row.data();
        }
        std::copy(src, src + kv, table.data() + t * width + (2 * static_cast<int64_t>(l) + part_index) * kv);
      }
    }
  }
  const std::vector<SafetensorsEntry> entries = {SafetensorsEntry{kPrefixTensorName, DTYPE_F32, {P, width}, table.data()}};
  write_folder_swapped(dir, "adapter", [&](const std::string& tmp) {  // as full checkpoints are
    write_safetensors(tmp + "/" + kAdapterWeightsFile, entries, {{"format", "pt"}});
    run_write_file_atomic(tmp + "/" + kAdapterConfigFile, adapter_config(model, base_model).dump(2) + "\n");
    const nlohmann::json settings = adapter_run_settings(run_settings, base_model);
    if (settings.is_object()) run_write_file_atomic(tmp + "/" + kRunSettingsFile, settings.dump(2) + "\n");
  });
}

PrefixAdapter read_prefix_adapter(const std::string& dir) {
  const std::string path = dir + "/" + kAdapterConfigFile;
  const nlohmann::json j = read_adapter_config(dir);
  SMEZO_REQUIRE(j.contains("peft_type"), "%s: field peft_type is missing", path.c_str());
  SMEZO_REQUIRE(j["peft_type"] == "PREFIX_TUNING", "%s: peft_type %s: this reader takes PREFIX_TUNING adapters",
                path.c_str(), json_brief(j["peft_type"]).c_str());
  SMEZO_REQUIRE(!adapter_config_bool(j, "prefix_projection", false, path),
                "%s: prefix_projection true (a reparameterised prefix, an MLP before the keys/values) is not "
                "supported", path.c_str());
  SMEZO_REQUIRE(!j.contains("num_transformer_submodules") || j["num_transformer_submodules"].is_null() ||
                    (j["num_transformer_submodules"].is_number_integer() && j["num_transformer_submodules"] == 1),
                "%s: num_transformer_submodules %s: decoder-only models have 1", path.c_str(),
                json_brief(j["num_transformer_submodules"]).c_str());
  PrefixAdapter a;
  a.options.tokens = positive_int(j, "num_virtual_tokens", path);
  a.layers = positive_int(j, "num_layers", path);
  a.token_dim = positive_int(j, "token_dim", path);
  a.kv_heads = positive_int(j, "num_attention_heads", path);
  a.base_model = adapter_config_string(j, "base_model_name_or_path", path);
  const SafetensorsFile file(dir + "/" + kAdapterWeightsFile);
  const HostTensorView* v = &file.tensor(kPrefixTensorName);
  SMEZO_REQUIRE(file.tensors().size() == 1, "%s: %zu tensors; a prefix adapter holds %s alone", file.path().c_str(),
                file.tensors().size(), kPrefixTensorName);
  const int64_t width = a.layers * 2 * a.token_dim;
  SMEZO_REQUIRE(v->shape.size() == 2 && v->shape[0] == a.options.tokens && v->shape[1] == width,
                "%s: %s has shape %s, but %s says [%lld, %lld] (num_virtual_tokens, num_layers x 2 x token_dim)",
                file.path().c_str(), kPrefixTensorName, nlohmann::json(v->shape).dump().c_str(), kAdapterConfigFile,
                (long long)a.options.tokens, (long long)width);
  a.values.resize(static_cast<size_t>(v->numel()));
  v->read_f32_finite(a.values.data());
  return a;
}

void load_prefix_adapter(Model& model, const PrefixAdapter& adapter) {
  SMEZO_REQUIRE(model.has_prefix(), "load_prefix_adapter: add_prefix first");
  const ModelConfig& c = model.config();
  const int64_t P = model.prefix_options().tokens, kv = c.n_kv_heads * c.head_dim;
  SMEZO_REQUIRE(adapter.options.tokens == P && adapter.layers == c.n_layers && adapter.token_dim == kv &&
                    adapter.kv_heads == c.n_kv_heads,
                "the prefix adapter has %lld virtual tokens for %lld layers of %lld key/value heads (token_dim %lld); "
                "this model has %lld layers of %lld key/value heads of %lld (the prefix made with %lld tokens)",
                (long long)adapter.options.tokens, (long long)adapter.layers, (long long)adapter.kv_heads,
                (long long)adapter.token_dim, (long long)c.n_layers, (long long)c.n_kv_heads, (long long)c.head_dim,
                (long long)P);
  const int64_t width = c.n_layers * 2 * kv;
  std::vector<float> part(static_cast<size_t>(P * kv));
  for (size_t l = 0; l < model.prefix_layers().size(); l++) {
    for (int part_index = 0; part_index < 2; part_index++) {
      for (int64_t t = 0; t < P; t++) {
        const float* src = adapter.values.data() + t * width + (2 * static_cast<int64_t>(l) + part_index) * kv;
        float* dst = part.data() + t * kv;
        if (part_index == 0 && permutes_keys(model))
          rotate_half_rows_to_interleaved(src, kv, 1, c.head_dim, dst);
        else
          std::copy(src, src + kv, dst);
      }
      const PrefixLayer& layer = model.prefix_layers()[l];
      model.backend().upload(part_index == 0 ? layer.key.w : layer.value.w, part.data());
    }
  }
}

}  // namespace smezo
