// Device inputs shared by the CUDA benches (linear_bench.cu, excess_bench.cu): uniform values hashed
// from (seed, index), so a bench's weights and x need no host copy and its CPU checks can regenerate any
// element, and rounding to a storage dtype on the device. Kernels and launches: device_fill.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "smezo/device.h"  // DType

namespace smezo {

// splitmix64's finaliser: the benches' seeds, and bench_fill's hash of (seed, index).
__host__ __device__ __forceinline__ uint64_t bench_mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// out[i] of dtype = amplitude · (2j + 1 - 2^24) / 2^24, j the top 24 bits of bench_mix64(bench_mix64(seed)
// + i): uniform on (-amplitude, amplitude), never exactly 0, std amplitude/sqrt(3); rounded to dtype.
void bench_fill(DType dtype, void* out, int64_t n, uint64_t seed, float amplitude, cudaStream_t stream);
// dst[i] = src[i] rounded to dtype (nearest even), as CudaBackend::linear converts x before its GEMM.
void bench_round(DType dtype, void* dst, const float* src, int64_t n, cudaStream_t stream);

}  // namespace smezo
