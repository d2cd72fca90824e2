// Model::add_lora: LoRA adapters on the targeted linears of every layer (see model/lora.h).
#include <algorithm>
#include <vector>

#include "common/check.h"
#include "model/family.h"
#include "model/model.h"

namespace smezo {

namespace {

Param& layer_weight(LayerParams& L, ParamRole role) {
  switch (role) {
    case ROLE_ATTN_Q: return L.wq;
    case ROLE_ATTN_K: return L.wk;
    case ROLE_ATTN_V: return L.wv;
    case ROLE_ATTN_O: return L.wo;
    case ROLE_MLP_GATE: return L.w_gate;
    case ROLE_MLP_UP: return L.w_up;
    default: return L.w_down;
  }
}

// <module>.weight -> base_model.model.<module>.lora_A.weight (PEFT's name).
std::string peft_name(const std::string& weight_name, const char* part) {
  const std::string module = weight_name.substr(0, weight_name.size() - std::string(".weight").size());
  return "base_model.model." + module + ".lora_" + part + ".weight";
}

}  // namespace

void Model::add_lora(const LoraOptions& options, uint64_t seed) {
  lora_validate(options);
  SMEZO_REQUIRE(lora_.empty(), "add_lora: the model already has LoRA adapters");
  SMEZO_REQUIRE(family_of(config_).lora, "--tune lora supports the LLaMA-shaped families (q_proj .. down_proj: "
                "llama, mistral, qwen2, qwen3), not %s", config_.family.c_str());
  SMEZO_REQUIRE(stage_.whole(), "--tune lora runs on a whole model, not on pipeline stage %d of %d", stage_.index,
                stage_.count);
  for (ParamRole role : options.targets)
    SMEZO_REQUIRE(role != ROLE_MLP_GATE || config_.mlp_kind == MLP_SWIGLU,
                  "--lora-targets gate: this model's MLP has no gate projection");
  lora_options_ = options;
  lora_.resize(weights_.layers.size());  // never resized again: params() points into it
  uint32_t tensor_id = static_cast<uint32_t>(param_list_.size());  // after the base tensors
  int64_t widest = 0;
  std::vector<float> values;
  for (size_t l = 0; l < weights_.layers.size(); l++) {
    for (ParamRole role : options.targets) {
      const Param& w = layer_weight(weights_.layers[l], role);
      LoraPair& pair = lora_[l].of(role);
      widest = std::max(widest, w.w.rows);
      pair.a.w = backend_.alloc(options.rank, w.w.cols, DTYPE_F32);
      pair.b.w = backend_.alloc(w.w.rows, options.rank, DTYPE_F32);
      lora_init_a(seed, tensor_id, options.rank, w.w.cols, &values);
      backend_.upload(pair.a.w, values.data());
      values.assign(static_cast<size_t>(pair.b.w.numel()), 0.0f);  // B = 0: the base model's output at start
      backend_.upload(pair.b.w, values.data());
      for (Param* p : {&pair.a, &pair.b}) {
        const bool is_a = p == &pair.a;
        p->info.name = peft_name(w.info.name, is_a ? "A" : "B");
        p->info.role = role;
        p->info.is_linear = true;
        p->info.adapter = is_a ? ADAPTER_LORA_A : ADAPTER_LORA_B;
        p->info.tensor_id = tensor_id++;
        param_list_.push_back(p);
      }
    }
  }
  ws_.lora_mid = backend_.alloc(max_tokens_, options.rank, DTYPE_F32);
  ws_.lora_out = backend_.alloc(max_tokens_, widest, DTYPE_F32);
}

}  // namespace smezo
