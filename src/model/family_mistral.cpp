// The Mistral family: the LLaMA shape with a sliding attention window and no biases.
// config.json: the LLaMA-shaped fields (family_parts.h), sliding_window (null -> off, absent -> 4096 as in
// transformers). Not read from GGUF (llama.cpp writes Mistral as "llama", without the window).
#include "common/check.h"
#include "model/family_parts.h"
#include "model/model_size.h"

namespace smezo {

namespace {

void read_mistral(const HfConfigReader& f, ModelConfig* c) {
  read_llama_like(f, c);
  const bool present = f.j.contains("sliding_window");
  c->sliding_window = present ? f.get_int("sliding_window", 0) : 4096;
  SMEZO_REQUIRE(c->sliding_window >= 0 && c->sliding_window <= kMaxPositions,
                "config %s: field 'sliding_window' is %lld; it must be in 0..%lld (or null for no window)",
                f.path.c_str(), static_cast<long long>(c->sliding_window), static_cast<long long>(kMaxPositions));
}

void write_mistral(const ModelConfig& c, nlohmann::json* j) {
  hf_config_require(!c.qkv_bias && !c.o_bias && !c.mlp_bias, c, "it has no biases");
  hf_config_require(!c.qk_norm, c, "qk_norm must be false (use qwen3)");
  write_llama_like(c, j);
  (*j)["sliding_window"] = c.sliding_window > 0 ? nlohmann::json(c.sliding_window) : nlohmann::json(nullptr);
}

}  // namespace

extern const FamilyDescriptor kMistralFamily = {
    "mistral", "mistral", "MistralForCausalLM", nullptr, ROPE_INTERLEAVED, &kLlamaLikeTensors, true,
    read_mistral, write_mistral, nullptr,
};

}  // namespace smezo
