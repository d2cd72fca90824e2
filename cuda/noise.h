// Buffers of z or raw Philox words on the GPU, for tests and benchmarks (spec: noise_spec.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/noise_spec.h"

namespace smezo {

// out[i] = noise_z(kind, seed, tensor_id, i) for i in [0, n); out needs no alignment.
void launch_noise_fill(float* out, int64_t n, NoiseKind kind, uint64_t seed, uint32_t tensor_id,
                       cudaStream_t cu_stream);

// out[4*g + l] = word l of noise_philox4(seed, tensor_id, g, stream), g in [0, n_groups).
void launch_philox_raw(uint32_t* out, int64_t n_groups, uint64_t seed, uint32_t tensor_id,
                       uint32_t stream, cudaStream_t cu_stream);

}  // namespace smezo
