// The Qwen3 family: the LLaMA shape with a per-head RMSNorm of q and k before RoPE (q_norm, k_norm),
// head_dim from the config (default 128, as transformers' Qwen3Config; not hidden / heads), and
// attention_bias (false) for q, k, v and o. GGUF general.architecture "qwen3": q/k rows as Hugging Face.
#include "model/family_parts.h"

namespace smezo {

namespace {

void read_qwen3(const HfConfigReader& f, ModelConfig* c) {
  read_llama_like(f, c);
  if (!f.has("head_dim")) c->head_dim = 128;
  read_window_off(f);
  c->qk_norm = true;
  c->qkv_bias = c->o_bias = f.get_bool("attention_bias", false);
}

void write_qwen3(const ModelConfig& c, nlohmann::json* j) {
  hf_config_require(c.qk_norm && c.qkv_bias == c.o_bias && !c.mlp_bias, c,
                    "it has q/k norms, and attention_bias covers q, k, v and o together");
  hf_config_require(c.sliding_window == 0, c, "sliding_window must be off");
  write_llama_like(c, j);
  (*j)["attention_bias"] = c.qkv_bias;
  (*j)["use_sliding_window"] = false;
}

}  // namespace

extern const FamilyDescriptor kQwen3Family = {
    "qwen3", "qwen3", "Qwen3ForCausalLM", "qwen3", ROPE_ROTATE_HALF, &kLlamaLikeTensors, true,
    read_qwen3, write_qwen3, nullptr,
};

}  // namespace smezo
