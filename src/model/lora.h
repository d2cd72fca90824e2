// LoRA adapters (Hu et al. 2021, as PEFT builds them): for a targeted W (out, in), y = W x +
// (alpha / r) · B (A x) with A (r, in), B (out, r); under --tune lora, A and B are the only tuned Params.
// Init is PEFT's: A Kaiming-uniform, a = sqrt(5) (uniform in [-1/sqrt(in), 1/sqrt(in)]), B = 0, so
// training starts at the base model. A comes from splitmix64(seed, A's tensor id), then a 53-bit
// uniform: run, resume and replay start from the same adapter on any machine.
// Adapters keep their target's ParamRole; their tensor ids follow the base model's (layer by layer,
// roles q, k, v, o, gate, up, down, A then B), so base noise does not change.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/tensor.h"
#include "common/value_range.h"

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
  LoraPair& of(ParamRole r) { return by_role[r - ROLE_ATTN_Q]; }
  const LoraPair& of(ParamRole r) const { return by_role[r - ROLE_ATTN_Q]; }
};

// "q,k,v,o,gate,up,down" (any subset and order) -> roles in canonical order; throws naming a bad entry.
std::vector<ParamRole> lora_targets_parse(const std::string& list);
std::string lora_targets_name(const std::vector<ParamRole>& targets);  // "q,v"
// The largest rank any model takes (Model::add_lora also refuses an adapter as large as its weight).
constexpr int64_t kLoraMaxRank = 4096;
// Checks 1 <= rank <= kLoraMaxRank, alpha finite and > 0, at least one target; messages name the
// options (--lora-r), or a file's fields when origin names one.
void lora_validate(const LoraOptions& o, const ValueOrigin& origin = {});

// For training: refuses a rank whose adapter holds as many numbers as the weight it adapts or more
// (r·(rows + cols) >= rows·cols for a target among params, the model's base tensors), which tunes
// nothing fewer than --tune full. Applying such an adapter from a file stays allowed.
void lora_require_useful_rank(const std::vector<Param*>& params, const LoraOptions& o);

// PEFT target_modules name of a role in LLaMA-family models: q_proj, ..., down_proj.
const char* lora_module_name(ParamRole role);

// Run header's "tune" object ({"mode": "lora", "r": 8, ...}) and back (throws naming `source`).
nlohmann::json lora_describe(const LoraOptions& o);
LoraOptions lora_options_from_json(const nlohmann::json& j, const std::string& source);

// Fills A (rank, in), row-major, with PEFT's Kaiming-uniform init from (seed, tensor_id).
void lora_init_a(uint64_t seed, uint32_t tensor_id, int64_t rank, int64_t in, std::vector<float>* a);

}  // namespace smezo
