// The checks every model goes through after its files are read and before anything is
// allocated for it: the config's sizes and values are in range and agree with each other,
// and the checkpoint holds every tensor the architecture needs, with the right shape and a
// dtype smezo converts, and no layer the config does not have.
//
// load_weights() (model/model_loader.h) runs check_weight_source on what every format
// reader returns, so `smezo info` refuses exactly what `generate` and `train` refuse; Model's
// constructor runs it again on whatever source it is given (cheap: no tensor data is read).
// Format readers check their own fields first, under the names their files use
// (num_hidden_layers, n_layers, ...); check_model_config is the common floor below them, for
// every reader including future ones. The values themselves (NaN/Inf) are checked as they
// are converted, in Model's load (convert_to_f32_checked, backend/dtype_convert.h).
#pragma once

#include <string>

#include "model/weight_source.h"
#include "smezo/model_config.h"

namespace smezo {

// Throws smezo::Error naming source and the ModelConfig field when a size is outside its
// bound (model_size.h), the heads do not divide, head_dim is odd for RoPE, norm_eps or
// rope_theta is not a positive finite float, bos/eos lie outside the vocabulary (-1, none, allowed), or the
// sizes overflow.
void check_model_config(const ModelConfig& config, const std::string& source);

// check_model_config, then every expected tensor (expected_tensors(config)) present with the
// expected shape and a known dtype, and no tensor of a layer index >= n_layers. Throws
// naming the tensor and its file.
void check_weight_source(const WeightSource& source);

}  // namespace smezo
