// A family's canonical parameter list (its descriptor's tensor table); its order is the noise tensor ids.
#include "model/model_params.h"

#include <string>

#include "model/family.h"

namespace smezo {

namespace {

// One slot per present entry; layer entries once per layer, named after the table's prefix.
void add_entries(const std::vector<TensorEntry>& entries, const ModelConfig& c, ModelParams& w,
                 const std::string& hf_prefix, int64_t layer, std::vector<ParamSlot>* out) {
  for (const TensorEntry& e : entries) {
    if (e.present != nullptr && !e.present(c)) continue;
    Param* p = e.layer != nullptr ? &(w.layers[static_cast<size_t>(layer)].*e.layer) : &(w.*e.global);
    // The projections' and the head's weights are linear (masked by S-MeZO/R-MeZO).
    const bool is_linear = !e.is_bias && e.role >= ROLE_ATTN_Q && e.role <= ROLE_LM_HEAD;
    out->push_back(ParamSlot{hf_prefix + e.hf, tensor_shape(c, e.shape), is_linear, e.role, e.is_bias, p, layer});
  }
}

}  // namespace

std::vector<ParamSlot> list_param_slots(const ModelConfig& config, ModelParams& weights) {
  const TensorTable& table = *family_of(config).tensors;
  std::vector<ParamSlot> slots;
  weights.layers.resize(config.n_layers);
  add_entries(table.before, config, weights, "", -1, &slots);
  for (int64_t i = 0; i < config.n_layers; i++)
    add_entries(table.layer, config, weights, table.hf_layer_prefix + std::to_string(i) + ".", i, &slots);
  add_entries(table.after, config, weights, "", config.n_layers, &slots);
  return slots;
}

bool stage_holds(const ModelStage& stage, const ModelConfig& config, const ParamSlot& slot) {
  if (slot.layer < 0)
    return stage.first() || (stage.last() && config.tied_lm_head && slot.param != nullptr &&
                             slot.role == ROLE_TOKEN_EMBEDDING);
  if (slot.layer >= config.n_layers) return stage.last();
  return slot.layer >= stage.first_layer && slot.layer < stage.end_layer;
}

bool stage_owns(const ModelStage& stage, const ParamSlot& slot) {
  if (slot.layer < 0) return stage.first();
  if (slot.layer >= stage.end_layer && stage.last()) return true;
  return slot.layer >= stage.first_layer && slot.layer < stage.end_layer;
}

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config) {
  ModelParams scratch;
  std::vector<ExpectedTensor> out;
  for (const ParamSlot& s : list_param_slots(config, scratch))
    out.push_back(ExpectedTensor{s.name, s.shape, s.is_linear, s.role, s.is_bias});
  return out;
}

void interleaved_rows_to_rotate_half(const float* in, int64_t rows, int64_t cols, int64_t head_dim, float* out) {
  for (int64_t h = 0; h < rows / head_dim; h++)
    for (int64_t i = 0; i < head_dim / 2; i++)
      for (int64_t k = 0; k < cols; k++) {
        out[(h * head_dim + i) * cols + k] = in[(h * head_dim + 2 * i) * cols + k];
        out[(h * head_dim + i + head_dim / 2) * cols + k] = in[(h * head_dim + 2 * i + 1) * cols + k];
      }
}

void rotate_half_rows_to_interleaved(const float* in, int64_t rows, int64_t cols, int64_t head_dim, float* out) {
  for (int64_t h = 0; h < rows / head_dim; h++)
    for (int64_t i = 0; i < head_dim / 2; i++)
      for (int64_t k = 0; k < cols; k++) {
        out[(h * head_dim + 2 * i) * cols + k] = in[(h * head_dim + i) * cols + k];
        out[(h * head_dim + 2 * i + 1) * cols + k] = in[(h * head_dim + i + head_dim / 2) * cols + k];
      }
}

}  // namespace smezo
