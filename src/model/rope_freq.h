// RoPE's per-pair inverse frequencies, computed once per model on the host and handed to
// Backend::rope: f_j = 1 / theta^(2j/head_dim), then the config's scaling (Llama 3.x's, or a GGUF's
// per-pair divisors). Both backends read the same table, so they agree on every angle pos * f_j.
#pragma once

#include <vector>

#include "smezo/model_config.h"

namespace smezo {

// (head_dim / 2) inverse frequencies of c (c.position must be POSITION_ROPE).
std::vector<float> rope_inverse_frequencies(const ModelConfig& c);

}  // namespace smezo
