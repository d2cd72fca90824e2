// LoRA adapters (Hu et al. 2021, as Hugging Face PEFT builds them) on a model's linear layers:
// for each targeted weight W (out, in), two small matrices A (r, in) and B (out, r), and the
// layer computes  y = W x + (alpha / r) · B (A x).  Under --tune lora, A and B are the only
// tuned parameters: ordinary Params that the probes perturb and the updates change; W stays as
// loaded (in its storage dtype: bf16/f16 on the device).
//
// Initialisation is PEFT's default: A Kaiming-uniform with a = sqrt(5) (uniform in
// [-1/sqrt(in), 1/sqrt(in)]), B = 0, so the adapted model starts as the base model. A's values
// come from the run seed (splitmix64 of seed and A's tensor id, then a 53-bit uniform), so a
// run, its resume and its replay start from the same adapter on any machine.
//
// Adapters keep their target's ParamRole (q, v, ...) and get tensor ids after the base model's
// (the canonical order: layer by layer, targets in role order q, k, v, o, gate, up, down, A
// then B), so the base tensors' noise is the same with and without adapters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/tensor.h"

namespace smezo {

struct LoraOptions {
  int64_t rank = 8;
  float alpha = 16.0f;
  std::vector<ParamRole> targets = {ROLE_ATTN_Q, ROLE_ATTN_V};  // PEFT's default for LLaMA
  float scale() const { return alpha / static_cast<float>(rank); }
};

// One targeted linear's adapter; absent (a.w.data == nullptr) when the layer is not targeted.
struct LoraPair {
  Param a;  // (rank, in_features): lora_A
  Param b;  // (out_features, rank): lora_B
  bool present() const { return a.w.data != nullptr; }
};

// One layer's adapters, indexed by the role of the layer they adapt (q .. down).
struct LoraLayer {
  LoraPair by_role[7];
  static bool adaptable(ParamRole r) { return r >= ROLE_ATTN_Q && r <= ROLE_MLP_DOWN; }
  LoraPair& of(ParamRole r) { return by_role[r - ROLE_ATTN_Q]; }
  const LoraPair& of(ParamRole r) const { return by_role[r - ROLE_ATTN_Q]; }
};

// "q,k,v,o,gate,up,down" (any subset, any order, no repeats) -> roles in canonical order.
// Throws naming the unknown or repeated entry.
std::vector<ParamRole> lora_targets_parse(const std::string& list);
std::string lora_targets_name(const std::vector<ParamRole>& targets);  // "q,v"
// Checks rank >= 1, alpha finite and > 0, at least one target.
void lora_validate(const LoraOptions& o);

// Hugging Face module name of a role in LLaMA-family models: q_proj, k_proj, v_proj, o_proj,
// gate_proj, up_proj, down_proj (the names PEFT's target_modules use).
const char* lora_module_name(ParamRole role);

// The "tune" object of a run header ({"mode": "lora", "r": 8, "alpha": 16, "targets": "q,v"})
// and back (throws naming `source` when malformed).
nlohmann::json lora_describe(const LoraOptions& o);
LoraOptions lora_options_from_json(const nlohmann::json& j, const std::string& source);

// Fills A (rank, in), row-major, with PEFT's Kaiming-uniform init from (seed, tensor_id).
void lora_init_a(uint64_t seed, uint32_t tensor_id, int64_t rank, int64_t in, std::vector<float>* a);

}  // namespace smezo
