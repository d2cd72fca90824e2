// Random weights for the benchmarks: a WeightSource of any ModelConfig whose tensors are
// generated as the model loads them (HostTensorView::decode), so the host never holds more than
// one tensor and no file is read. Used by `smezo bench --shape` (model_bench.cpp) and
// build/cpu_bench (cpu_bench.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "model/weight_source.h"

namespace smezo {

// Every tensor the config expects, uniform in center ± scale from a counter hash of `seed`:
// norm weights around 1 (± 0.05), other vectors ± 0.02, matrices ± 1/sqrt(fan_in). `name`
// goes into the source's path ("random <name>").
//
// packed_type, a block-quantised GGUF type (formats/gguf_dequant.h; 0: none): every matrix is instead
// random blocks of that type, kept packed (keep_packed): random codes and sub-scales, f16 scales set so
// the values stay within about ± 1/sqrt(fan_in). The blocks are built when the source is made, one
// buffer per matrix shape that all matrices of the shape share (a bench times bytes, not values), so a
// 7B shape holds about 130 MB of blocks on the host. A row length not a multiple of the type's block
// throws, naming the tensor.
// The block types packed_type takes: "Q8_0, Q4_0, ...", and the type of one such name (any case; throws
// naming the choices for another).
std::string random_packed_type_names();
uint32_t random_packed_type(const std::string& name);
WeightSource random_weight_source(const ModelConfig& config, uint64_t seed, const std::string& name,
                                  uint32_t packed_type = 0);

}  // namespace smezo
