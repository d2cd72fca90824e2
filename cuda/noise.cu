// Noise kernels for cuda/noise.h, bit-identical to the spec's host functions (test_noise_cuda.cu).
#include "noise.h"

#include <algorithm>

#include "common/check.h"
#include "cuda_check.h"

namespace smezo {

// --- kernels

// Grid-stride over groups of 8 elements; a full, 16-byte aligned group is two float4 stores.
__global__ void noise_fill_kernel(float* out, int64_t n, NoiseKind kind, uint64_t seed,
                                  uint32_t tensor_id) {
  const int64_t n_groups = (n + 7) / 8;
  const bool aligned = (reinterpret_cast<uintptr_t>(out) & 15) == 0;
  for (int64_t g = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; g < n_groups;
       g += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float z[8];
    noise_z8(kind, seed, tensor_id, g, z);
    const int64_t i = 8 * g;
    if (aligned && i + 7 < n) {
      float4* o = reinterpret_cast<float4*>(out + i);
      o[0] = make_float4(z[0], z[1], z[2], z[3]);
      o[1] = make_float4(z[4], z[5], z[6], z[7]);
    } else {
      for (int l = 0; l < 8 && i + l < n; ++l) out[i + l] = z[l];
    }
  }
}

__global__ void philox_raw_kernel(uint32_t* out, int64_t n_groups, uint64_t seed,
                                  uint32_t tensor_id, uint32_t stream) {
  for (int64_t g = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; g < n_groups;
       g += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint32_t x[4];
    noise_philox4(seed, tensor_id, g, stream, x);
    for (int l = 0; l < 4; ++l) out[4 * g + l] = x[l];
  }
}

// --- launcher

namespace {

constexpr int kNoiseBlock = 256;

// Enough blocks to cover n_groups, capped (the kernels grid-stride beyond the cap).
unsigned noise_grid(int64_t n_groups) {
  const int64_t blocks = (n_groups + kNoiseBlock - 1) / kNoiseBlock;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(blocks, 65536)));
}

}  // namespace

void launch_noise_fill(float* out, int64_t n, NoiseKind kind, uint64_t seed, uint32_t tensor_id,
                       cudaStream_t cu_stream) {
  SMEZO_REQUIRE(n >= 0, "launch_noise_fill: negative element count %lld", (long long)n);
  SMEZO_REQUIRE(kind == NOISE_GAUSSIAN || kind == NOISE_GAUSSIAN_V1 || kind == NOISE_RADEMACHER,
                "launch_noise_fill: noise kind %d is not a generator", static_cast<int>(kind));
  if (n == 0) return;
  noise_fill_kernel<<<noise_grid((n + 7) / 8), kNoiseBlock, 0, cu_stream>>>(out, n, kind, seed,
                                                                           tensor_id);
  CUDA_CHECK_LAUNCH();
}

void launch_philox_raw(uint32_t* out, int64_t n_groups, uint64_t seed, uint32_t tensor_id,
                       uint32_t stream, cudaStream_t cu_stream) {
  SMEZO_REQUIRE(n_groups >= 0, "launch_philox_raw: negative group count %lld",
                (long long)n_groups);
  if (n_groups == 0) return;
  philox_raw_kernel<<<noise_grid(n_groups), kNoiseBlock, 0, cu_stream>>>(out, n_groups, seed,
                                                                         tensor_id, stream);
  CUDA_CHECK_LAUNCH();
}

}  // namespace smezo
