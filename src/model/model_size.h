// A model's parameter count and weight bytes from its ModelConfig (canonical list, overflow-checked),
// and the size bounds every reader enforces (within them shape products fit int64).
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

// False when a size is outside 1..its bound or a product overflows; safe on any config.
bool model_size_of(const ModelConfig& cfg, ModelSize* out);

// size.parameters * dtype_size(dtype), or -1 on overflow.
int64_t model_weight_bytes(const ModelSize& size, DType dtype);

// Decimal units: "17 B", "12.3 KB", "13.5 GB"; counts: "512", "260.0 K", "6.74 G".
std::string format_bytes(int64_t bytes);
std::string format_count(int64_t n);

}  // namespace smezo
