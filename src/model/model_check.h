// The checks every model passes after its files are read, before any allocation: config in range and
// consistent; every needed tensor present, shaped, convertible (NaN/Inf: at conversion). load_weights()
// and Model both run check_weight_source, so `smezo info` refuses exactly what `train` does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/weight_source.h"
#include "smezo/model_config.h"

namespace smezo {

// Throws naming source and the field: a size outside model_size.h's bounds, heads that do not divide,
// odd head_dim under RoPE, norm_eps/rope_theta not positive finite, bos/eos outside the vocabulary
// (-1 allowed), or an overflow.
void check_model_config(const ModelConfig& config, const std::string& source);

// check_model_config, then every expected tensor present, shaped, known dtype; throws naming it.
void check_weight_source(const WeightSource& source);

// A tensor's shape as its messages print it: "[576, 1536]".
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace smezo
