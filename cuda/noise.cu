// Noise kernels for cuda/noise.h, bit-identical to the spec's host functions (test_noise_cuda.cu).
#include "noise.h"

#include "common/check.h"
#include "cuda_check.h"
#include "device_utils.cuh"

namespace smezo {

// --- kernels

// Grid-stride over groups of 8 elements, stored by two store4 (float4 stores where aligned).
__global__ void noise_fill_kernel(float* out, int64_t n, NoiseKind kind, uint64_t seed,
                                  uint32_t tensor_id) {
  SMEZO_GRID_STRIDE(g, ceil_div(n, 8)) {
    float z[8];
    noise_z8(kind, seed, tensor_id, g, z);
    store4(out, 8 * g, n, z);
    store4(out, 8 * g + 4, n, z + 4);
  }
}

__global__ void philox_raw_kernel(uint32_t* out, int64_t n_groups, uint64_t seed,
                                  uint32_t tensor_id, uint32_t stream) {
  SMEZO_GRID_STRIDE(g, n_groups) {
    uint32_t x[4];
    noise_philox4(seed, tensor_id, g, stream, x);
    for (int l = 0; l < 4; ++l) out[4 * g + l] = x[l];
  }
}

// --- launcher

namespace {

constexpr int kNoiseBlock = 256;

}  // namespace

void launch_noise_fill(float* out, int64_t n, NoiseKind kind, uint64_t seed, uint32_t tensor_id,
                       cudaStream_t cu_stream) {
  SMEZO_REQUIRE(n >= 0, "launch_noise_fill: negative element count %lld", (long long)n);
  SMEZO_REQUIRE(kind == NOISE_GAUSSIAN || kind == NOISE_GAUSSIAN_V1 || kind == NOISE_RADEMACHER || kind == NOISE_SIGN,
                "launch_noise_fill: noise kind %d is not a generator", static_cast<int>(kind));
  if (n == 0) return;
  noise_fill_kernel<<<grid_blocks(ceil_div(n, 8), kNoiseBlock), kNoiseBlock, 0, cu_stream>>>(
      out, n, kind, seed, tensor_id);
  CUDA_CHECK_LAUNCH();
}

void launch_philox_raw(uint32_t* out, int64_t n_groups, uint64_t seed, uint32_t tensor_id,
                       uint32_t stream, cudaStream_t cu_stream) {
  SMEZO_REQUIRE(n_groups >= 0, "launch_philox_raw: negative group count %lld",
                (long long)n_groups);
  if (n_groups == 0) return;
  philox_raw_kernel<<<grid_blocks(n_groups, kNoiseBlock), kNoiseBlock, 0, cu_stream>>>(
      out, n_groups, seed, tensor_id, stream);
  CUDA_CHECK_LAUNCH();
}

}  // namespace smezo
