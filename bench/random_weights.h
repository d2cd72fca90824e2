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
WeightSource random_weight_source(const ModelConfig& config, uint64_t seed, const std::string& name);

}  // namespace smezo
