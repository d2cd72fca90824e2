// An architecture's canonical parameter list (HF names, shapes) bound to ModelParams; order = tensor id.
#pragma once

#include <string>
#include <vector>

#include "model/model.h"

namespace smezo {

struct ParamSlot {
  std::string name;
  std::vector<int64_t> shape;
  bool is_linear;    // a linear layer's weight matrix
  ParamRole role;    // from the architecture's map (tensor.h)
  bool is_bias;
  Param* param;  // the ModelParams field it fills
  // -1 before the layers, 0..n_layers-1 in one, n_layers after (final norm, LM head).
  int64_t layer;
};

// Its layers, embeddings on the first stage, final norm and LM head (tied: the embedding) on the last.
bool stage_holds(const ModelStage& stage, const ModelConfig& config, const ParamSlot& slot);
// The stage that writes the slot out: the first for a tied embedding, else its only holder.
bool stage_owns(const ModelStage& stage, const ParamSlot& slot);

// The model's q/k rows are interleaved (GGUF, llama2.c): a Hugging Face checkpoint permutes them.
inline bool rope_rows_interleaved(const ModelConfig& c) {
  return c.position == POSITION_ROPE && c.rope_style == ROPE_INTERLEAVED;
}
// The tensors whose rows a change of RoPE layout permutes: the q and k projection weights.
inline bool rope_permutes_rows(ParamRole role, bool is_bias) {
  return !is_bias && (role == ROLE_ATTN_Q || role == ROLE_ATTN_K);
}
// Per head of head_dim rows: interleaved pairs (2i, 2i+1) -> rotate-half (i, i + head_dim/2).
void interleaved_rows_to_rotate_half(const float* in, int64_t rows, int64_t cols, int64_t head_dim, float* out);
// Its inverse: Hugging Face's rotate-half rows back to the interleaved layout.
void rotate_half_rows_to_interleaved(const float* in, int64_t rows, int64_t cols, int64_t head_dim, float* out);

// Resizes weights.layers to the config and lists every parameter slot in canonical order.
std::vector<ParamSlot> list_param_slots(const ModelConfig& config, ModelParams& weights);

}  // namespace smezo
