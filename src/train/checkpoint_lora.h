// LoRA adapters on disk as Hugging Face PEFT saves and loads them (PeftModel.from_pretrained(base, DIR)):
//   DIR/adapter_config.json       {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 8, "lora_alpha":
//                                  16, "target_modules": ["q_proj", "v_proj"], "base_model_name_or_path":
//                                  adapter_base.h, "bias": "none", "fan_in_fan_out": false,
//                                  "lora_dropout": 0.0, ...}
//   DIR/adapter_model.safetensors  fp32 tensors named as PEFT names them (adapter name stripped):
//                                  base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight
//                                  (r, in) and ....lora_B.weight (out, r)
//   DIR/smezo_run.json            the run's data settings (checkpoint.h), when given, and base_model_path
// Models with Meta's interleaved RoPE (llama2.c, GGUF) hold q/k rows permuted: B's q and k rows are
// written in HF's rotate-half order and permuted back when applied to such a model. The folder is
// swapped in as full checkpoints are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model.h"

namespace smezo {

inline constexpr const char* kAdapterConfigFile = "adapter_config.json";
inline constexpr const char* kAdapterWeightsFile = "adapter_model.safetensors";

// Saves the adapters (Model::add_lora) into dir; base_model is recorded as adapter_base.h says.
void save_lora_adapter(Model& model, const std::string& dir, const std::string& base_model,
                       const nlohmann::json& run_settings = nullptr);

// An adapter folder read back: its settings and every tensor in fp32, Hugging Face layout.
struct LoraAdapterTensor {
  std::string name;           // PEFT name
  int64_t layer = 0;
  ParamRole role = ROLE_OTHER;
  bool is_a = true;           // lora_A (r, in); else lora_B (out, r)
  int64_t rows = 0, cols = 0;
  std::vector<float> values;  // rows * cols
};
struct LoraAdapter {
  LoraOptions options;
  std::string base_model;
  std::vector<LoraAdapterTensor> tensors;  // file order (by name)
};
// Throws naming the file and field it does not take (peft_type, bias, fan_in_fan_out, module, tensor).
LoraAdapter read_lora_adapter(const std::string& dir);

// base_model_name_or_path: a local path made absolute (found from any directory), else as given.
std::string adapter_base_model(const std::string& base_model);

// An optional adapter_config.json field: absent or null -> fallback; another type throws naming both.
bool adapter_config_bool(const nlohmann::json& j, const char* key, bool fallback, const std::string& path);
std::string adapter_config_string(const nlohmann::json& j, const char* key, const std::string& path);

// dir/adapter_config.json parsed strictly (a JSON object; throws naming the file).
nlohmann::json read_adapter_config(const std::string& dir);

// Sets the model's adapters (Model::add_lora first, with adapter.options) to the file's values.
void load_lora_adapter(Model& model, const LoraAdapter& adapter);

// Folds the adapter into a model: W <- W + (alpha / r) · B A per adapted linear (fp32 on the host).
void merge_lora_adapter(Model& model, const LoraAdapter& adapter);

}  // namespace smezo
