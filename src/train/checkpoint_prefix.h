// Prefix adapters (--tune prefix, model/prefix.h) on disk, the way Hugging Face PEFT saves and
// loads a PREFIX_TUNING adapter without projection (PeftModel.from_pretrained(base, DIR)):
//   DIR/adapter_config.json       the fields PEFT writes: {"peft_type": "PREFIX_TUNING", "task_type":
//                                  "CAUSAL_LM", "num_virtual_tokens": P, "num_layers": L, "token_dim":
//                                  n_kv_heads*head_dim, "num_attention_heads": n_kv_heads,
//                                  "encoder_hidden_size": token_dim, "num_transformer_submodules": 1,
//                                  "prefix_projection": false, "base_model_name_or_path": adapter_base.h,
//                                  "inference_mode": true, "revision", "init_weights", "modules_to_save",
//                                  "auto_mapping": null}
//   DIR/adapter_model.safetensors  one fp32 tensor "prompt_embeddings" (P, L*2*token_dim): row t holds
//                                  layer 0's key, layer 0's value, layer 1's key, ... of virtual token
//                                  t (PEFT's view (P, 2L, heads, head_dim) of the past keys/values)
//   DIR/smezo_run.json            the run's data settings (checkpoint.h), when given, and base_model_path
// token_dim and num_attention_heads count key/value heads, as PEFT does for grouped-query models.
// The reader ignores encoder_hidden_size (no encoder runs without a projection), so PEFT's files and
// older smezo ones both load. Keys are stored after RoPE; Meta-interleaved RoPE models (llama2.c,
// GGUF) write them in HF's rotate-half order and permute back on reading. Swapped in as checkpoints are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model.h"

namespace smezo {

inline constexpr const char* kPrefixTensorName = "prompt_embeddings";

// Saves the prefix (Model::add_prefix) into dir; base_model is recorded as adapter_base.h says.
void save_prefix_adapter(Model& model, const std::string& dir, const std::string& base_model,
                         const nlohmann::json& run_settings = nullptr);

// A prefix adapter folder read back: its settings and prompt_embeddings in fp32, HF layout.
struct PrefixAdapter {
  PrefixOptions options;
  std::string base_model;
  int64_t layers = 0;
  int64_t token_dim = 0;       // n_kv_heads * head_dim
  int64_t kv_heads = 0;
  std::vector<float> values;   // (P, layers * 2 * token_dim)
};
// Throws naming the file and field for what it does not take (peft_type, a projection, a bad shape).
PrefixAdapter read_prefix_adapter(const std::string& dir);

// Sets the prefix (Model::add_prefix first) to the file's values; throws for other model dimensions.
void load_prefix_adapter(Model& model, const PrefixAdapter& adapter);

}  // namespace smezo
