// GPU generation of the noise spec (src/common/noise_spec.h): fill a buffer with z, or with
// the raw Philox words (for the bit-exact CPU/GPU test). The CPU reference is the spec
// header itself (noise_normal4 / noise_philox4), which kernels also call directly.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/noise_spec.h"

namespace smezo {

// out[i] = noise_normal(seed, tensor_id, i, stream) for i in [0, n). One thread per group of
// 4 elements (one Philox call); out needs no particular alignment.
void launch_noise_fill(float* out, int64_t n, uint64_t seed, uint32_t tensor_id,
                       uint32_t stream, cudaStream_t cu_stream);

// out[4*g + l] = word l of noise_philox4(seed, tensor_id, g, stream), g in [0, n_groups).
void launch_philox_raw(uint32_t* out, int64_t n_groups, uint64_t seed, uint32_t tensor_id,
                       uint32_t stream, cudaStream_t cu_stream);

}  // namespace smezo
