// The benches' device inputs (see device_fill.h).
#include "bench/device_fill.h"

#include "cuda/cuda_check.h"
#include "cuda/device_utils.cuh"

namespace smezo {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void bench_fill_kernel(T* out, int64_t n, uint64_t base, float amplitude) {
  SMEZO_GRID_STRIDE(i, n) {
    const int32_t j = static_cast<int32_t>(bench_mix64(base + static_cast<uint64_t>(i)) >> 40);
    out[i] = from_float<T>(static_cast<float>(2 * j + 1 - (1 << 24)) * 0x1p-24f * amplitude);  // exact
  }
}

template <typename T>
__global__ void bench_round_kernel(T* dst, const float* src, int64_t n) {
  SMEZO_GRID_STRIDE(i, n) { dst[i] = from_float<T>(src[i]); }
}

}  // namespace

void bench_fill(DType dtype, void* out, int64_t n, uint64_t seed, float amplitude, cudaStream_t stream) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bench_fill_kernel<T><<<grid_blocks(n, kThreads), kThreads, 0, stream>>>(static_cast<T*>(out), n,
                                                                           bench_mix64(seed), amplitude);
    CUDA_CHECK_LAUNCH();
  });
}

void bench_round(DType dtype, void* dst, const float* src, int64_t n, cudaStream_t stream) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bench_round_kernel<T><<<grid_blocks(n, kThreads), kThreads, 0, stream>>>(static_cast<T*>(dst), src, n);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace smezo
