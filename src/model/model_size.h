// How big a model is, from its ModelConfig alone: the parameter count and the bytes of its
// weights in a storage dtype, in overflow-checked int64 arithmetic, before any tensor is read
// or allocated. The counts come from the architecture's canonical parameter list
// (model_params.h: the non-layer tensors plus n_layers times one layer), so they cannot
// drift from what Model loads. Memory estimates (host or device: "needs X GB, Y GB free")
// are built on these.
//
// Also the upper bounds every model reader enforces on a config's sizes. No real model comes
// near them; a value beyond one means the file is corrupt. Within them every shape product
// of this file fits int64 with room to spare, and common/checked_int.h says so if it ever
// does not.
#pragma once

#include <cstdint>
#include <string>

#include "backend/tensor.h"
#include "smezo/model_config.h"

namespace smezo {

constexpr int64_t kMaxLayers = 4096;                  // n_layers
constexpr int64_t kMaxWidth = int64_t(1) << 20;       // dim, hidden_dim, n_heads * head_dim
constexpr int64_t kMaxVocab = (int64_t(1) << 31) - 1;  // token ids are int32
constexpr int64_t kMaxPositions = int64_t(1) << 30;   // positions are int32

struct ModelSize {
  int64_t parameters = 0;        // every stored parameter (a tied LM head counted once)
  int64_t layer_parameters = 0;  // one transformer layer
  int64_t largest_tensor = 0;    // elements of the largest single tensor
};

// The sizes of cfg. False when a size field is outside 1..its bound above (head_dim and
// n_kv_heads included), or a product overflows: such a config describes no loadable model.
// Safe to call on any config; check_model_config (model_check.h) says which field is wrong.
bool model_size_of(const ModelConfig& cfg, ModelSize* out);

// size.parameters * dtype_size(dtype), or -1 on overflow.
int64_t model_weight_bytes(const ModelSize& size, DType dtype);

// Human-readable sizes for messages, decimal units: "17 B", "12.3 KB", "1.04 MB", "13.5 GB";
// and counts: "512", "260.0 K", "6.74 G".
std::string format_bytes(int64_t bytes);
std::string format_count(int64_t n);

}  // namespace smezo
