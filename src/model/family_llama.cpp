// The LLaMA family: Llama 1, 2 and 3.x (rope_scaling llama3), SmolLM2 and llama2.c checkpoints.
// config.json: the LLaMA-shaped fields (family_parts.h), attention_bias (false: biases on q, k, v and o)
// and mlp_bias (false). GGUF general.architecture "llama": q/k rows interleaved by llama.cpp's converter.
#include "model/family_parts.h"

namespace smezo {

namespace {

void read_llama(const HfConfigReader& f, ModelConfig* c) {
  read_llama_like(f, c);
  c->qkv_bias = c->o_bias = f.get_bool("attention_bias", false);
  c->mlp_bias = f.get_bool("mlp_bias", false);
}

void write_llama(const ModelConfig& c, nlohmann::json* j) {
  hf_config_require(c.sliding_window == 0, c, "sliding_window must be 0 (use mistral)");
  hf_config_require(c.qkv_bias == c.o_bias, c, "attention_bias covers q, k, v and o together");
  hf_config_require(!c.qk_norm, c, "qk_norm must be false (use qwen3)");
  write_llama_like(c, j);
  (*j)["attention_bias"] = c.qkv_bias;
  (*j)["mlp_bias"] = c.mlp_bias;
}

}  // namespace

extern const FamilyDescriptor kLlamaFamily = {
    "llama", "llama", "LlamaForCausalLM", "llama", ROPE_INTERLEAVED, &kLlamaLikeTensors, true,
    read_llama, write_llama, nullptr,
};

}  // namespace smezo
