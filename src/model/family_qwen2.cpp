// The Qwen2 family (Qwen2, Qwen2.5): the LLaMA shape with biases on q, k and v (not o, not the MLP),
// RoPE theta from the config, tied or untied head. use_sliding_window must be false (the window fields
// are present but off). GGUF general.architecture "qwen2": q/k rows as Hugging Face has them.
#include "model/family_parts.h"

namespace smezo {

namespace {

void read_qwen2(const HfConfigReader& f, ModelConfig* c) {
  read_llama_like(f, c);
  read_window_off(f);
  c->qkv_bias = true;
}

void write_qwen2(const ModelConfig& c, nlohmann::json* j) {
  hf_config_require(c.qkv_bias && !c.o_bias && !c.mlp_bias, c, "it has biases on q, k and v only");
  hf_config_require(!c.qk_norm && c.sliding_window == 0, c, "qk_norm and sliding_window must be off");
  write_llama_like(c, j);
  (*j)["use_sliding_window"] = false;
}

}  // namespace

extern const FamilyDescriptor kQwen2Family = {
    "qwen2", "qwen2", "Qwen2ForCausalLM", "qwen2", ROPE_ROTATE_HALF, &kLlamaLikeTensors, true,
    read_qwen2, write_qwen2, nullptr,
};

}  // namespace smezo
