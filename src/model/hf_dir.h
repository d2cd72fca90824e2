// Hugging Face model directories: config.json plus safetensors weights. Layout read by load_hf_dir:
//   <dir>/config.json                      required; see parse_hf_config
//   <dir>/model.safetensors                one file with every tensor (wins, as in transformers), or
//   <dir>/model.safetensors.index.json     {"weight_map": {"<tensor name>": "<shard file>"}}
//   <dir>/<shard file> ...                 plain file names in <dir>; a shard's tensors and the
//                                          index's entries for it must match exactly
// config.json: model_type selects the family (model/family.h: llama, mistral, opt, qwen2, qwen3;
// another one is refused, naming the supported); its descriptor file reads the rest. The LLaMA-shaped
// families (model/family_parts.h): hidden_size, intermediate_size, num_hidden_layers,
// num_attention_heads, vocab_size, max_position_embeddings (required); num_key_value_heads (default
// heads), head_dim (default hidden_size / heads; Qwen3 128), rms_norm_eps (1e-6), rope_theta
// (10000; or rope_parameters.rope_theta as transformers 5 writes it), rope_scaling / rope_parameters
// (null, rope_type "default" or "llama3" with its four parameters), tie_word_embeddings (false),
// bos_token_id (1), eos_token_id (2; a list uses its first entry); hidden_act "silu".
// llama: attention_bias (q, k, v, o) and mlp_bias; mistral: sliding_window (null -> 0, absent ->
// 4096); qwen2: q/k/v biases, use_sliding_window false; qwen3: q/k norms, attention_bias. opt: see
// family_opt.cpp.
// Checks (errors name the file and field): strict JSON (no key twice); sizes within model_size.h's
// bounds and consistent; rms_norm_eps in (0, 1], rope_theta > 0, both finite floats; token ids in the
// vocabulary; null is an error except for num_key_value_heads, head_dim, sliding_window, rope_scaling
// and rope_parameters (transformers derives them).
#pragma once

#include <string>

#include "model/weight_source.h"
#include "smezo/model_config.h"

namespace smezo {

// Reads a transformers config.json; throws smezo::Error naming the file and the field.
ModelConfig parse_hf_config(const std::string& config_json_path);

// The reverse: config.json text that loads back to cfg. Throws when config.json cannot express cfg.
std::string hf_config_json(const ModelConfig& cfg, const std::string& torch_dtype = "float32");

// Loads <dir> (or a .safetensors beside config.json), mapped; throws naming the file and what is missing.
WeightSource load_hf_dir(const std::string& dir);

}  // namespace smezo
