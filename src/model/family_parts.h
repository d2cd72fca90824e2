// What the family descriptors share: config.json field readers whose errors name the file and the
// field, the LLaMA-shaped config (llama, mistral, qwen2, qwen3) read and written once, and the
// LLaMA-shaped tensor table. A new family's file (family.h) picks from these.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/family.h"

namespace smezo {

// config.json's fields with checked types; null is "absent" only where transformers reads it so.
class HfConfigReader {
 public:
  HfConfigReader(const std::string& path, const nlohmann::json& j, const std::string& model_type)
      : path(path), j(j), model_type(model_type) {}
  const std::string& path;
  const nlohmann::json& j;
  std::string model_type;

  // The field's value; nullptr when it is absent (or null where null means absent).
  const nlohmann::json* value(const char* field) const;
  bool has(const char* field) const { return value(field) != nullptr; }
  int64_t get_int(const char* field) const;  // required
  int64_t get_int(const char* field, int64_t fallback) const;
  // A positive finite float <= hi (a double that rounds to 0 or inf as a float is refused).
  float get_float(const char* field, double fallback, double hi) const;
  bool get_bool(const char* field, bool fallback) const;
  std::string get_string(const char* field, const std::string& fallback) const;
  // An id inside the vocabulary, or a non-empty list of them (the first is used).
  int32_t get_token(const char* field, int32_t fallback, int64_t vocab_size) const;
  void require_range(const char* field, int64_t v, int64_t hi) const;  // 1 <= v <= hi
  [[noreturn]] void wrong_type(const char* field, const nlohmann::json& v, const char* expected) const;
  // "config P: field 'F' is V; <why> (model_type T)": what smezo does not run, named.
  [[noreturn]] void unsupported(const char* field, const std::string& why) const;
  int64_t as_int(const char* field, const nlohmann::json& v) const;
};

// hidden_size, <mlp_key>, num_hidden_layers, num_attention_heads, vocab_size, max_position_embeddings.
void read_hf_sizes(const HfConfigReader& f, const char* mlp_key, ModelConfig* c);
// The LLaMA-shaped config: sizes, num_key_value_heads, head_dim (default hidden / heads),
// rms_norm_eps, rope_theta and rope_scaling / rope_parameters (default or llama3), hidden_act silu,
// tie_word_embeddings, bos/eos; RMSNorm, SwiGLU, rotate-half RoPE; no biases, no window.
void read_llama_like(const HfConfigReader& f, ModelConfig* c);
// use_sliding_window (Qwen): true is refused (per-layer windows); the window is off.
void read_window_off(const HfConfigReader& f);
// Its fields back: intermediate_size, num_key_value_heads, head_dim, rms_norm_eps, rope_theta,
// rope_scaling (llama3), hidden_act; refuses what config.json cannot say (hf_config_require).
void write_llama_like(const ModelConfig& c, nlohmann::json* j);
// Throws "hf_config_json: cannot write a <family> config.json: <what>" unless ok.
void hf_config_require(bool ok, const ModelConfig& c, const char* what);

// token_embd / model.embed_tokens, the layers' attention (q, k, v, o, their biases and q/k norms)
// and SwiGLU MLP, output_norm / model.norm, output / lm_head: LLaMA, Mistral, Qwen2, Qwen3.
extern const TensorTable kLlamaLikeTensors;

}  // namespace smezo
