// CUDA optimiser ops (reference: src/cpu/optimizer.cpp): the SPSA update and the exact |W| quantile
// that fixes the S-MeZO threshold.
//   update_kernel          one thread per group of 8 elements: update_group8 (cuda/update_rule.cuh,
//                          shared with the fold in cuda/linear.cu); mask from the CURRENT w; the CPU's
//                          element rule with explicit FMAs, stored rounded to nearest even (or
//                          stochastically to bf16): bit-exact with the CPU update and rounding.
//                          Groups with no kept entry skip noise and store.
//   abs_radix_hist_kernel  one pass of an exact radix select on the bits of |w| as float (bit order
//                          is value order for non-negative floats): a 256-bin histogram of the next
//                          8 bits under the prefix so far, warp-aggregated atomics. The host narrows
//                          the prefix: 4 passes for fp32, 3 for fp16, 2 for bf16. O(1) scratch.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "common/check.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/device_utils.cuh"
#include "cuda/update_rule.cuh"
#include "cuda/sign_noise.h"

namespace smezo {

namespace {  // internal linkage: kernel names cannot clash across files

constexpr int kBins = 256;
constexpr uint32_t kNoBin = kBins;  // key of elements outside the current prefix

// --- kernels

// W's groups of 8 through update_group8 (update_rule.cuh), stored only where an entry is kept.
template <typename T>
__global__ void update_kernel(T* w, int64_t n, UpdateTensor t, UpdateRule u) {
  SMEZO_GRID_STRIDE(g, ceil_div(n, 8)) {
    T s[8];
    float v[8];
    load8_stored(w, 8 * g, n, s, v);  // entries >= n read as 0 and are never stored
    if (update_group8(t, u, g, s, v)) store8_stored(w, 8 * g, n, s);
  }
}

// hist[b] += elements whose |w| bits match `prefix` under `prefix_mask`, bits [shift, shift+8) = b.
template <typename T>
__global__ void abs_radix_hist_kernel(const T* w, int64_t n, uint32_t prefix, uint32_t prefix_mask,
                                      int shift, unsigned long long* hist) {
  __shared__ uint32_t local[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const int64_t n_groups = ceil_div(n, 4);
  // Bound tested on the warp's first group: whole warps iterate, every lane reaches __match_any_sync.
  for (int64_t warp_first = blockIdx.x * static_cast<int64_t>(blockDim.x) + (threadIdx.x & ~31);
       warp_first < n_groups; warp_first += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t g = warp_first + lane;
    uint32_t key[4] = {kNoBin, kNoBin, kNoBin, kNoBin};
    if (g < n_groups) {
      float v[4];
      load4(w, 4 * g, n, v);
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        const uint32_t bits = fp_bits(v[l]) & 0x7fffffffu;  // |w|
        if (4 * g + l < n && (bits & prefix_mask) == prefix) key[l] = (bits >> shift) & 0xffu;
      }
    }
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const unsigned peers = __match_any_sync(0xffffffffu, key[l]);
      if (key[l] != kNoBin && lane == __ffs(peers) - 1) atomicAdd(&local[key[l]], __popc(peers));
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x)
    if (local[b] != 0) atomicAdd(&hist[b], static_cast<unsigned long long>(local[b]));
}

// --- launcher

constexpr int kUpdateBlock = 256;
constexpr int kHistBlock = 256;

int sm_count() {
  int dev = 0, count = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev));
  return count > 0 ? count : 1;
}

}  // namespace

void CudaBackend::update(Param& p, float coef, float decay, uint64_t seed) {
  held_.settle(*this, p.w);  // updates held for the fold go first
  if (!p.info.trainable) return;
  SMEZO_REQUIRE(!p.w.packed(), "update of %s, which is packed (--weights packed keeps frozen weights only)",
                p.info.name.c_str());
  const int64_t n = p.w.numel();
  if (n == 0) return;
  const UpdateTensor t = update_tensor(p);
  const UpdateRule u{coef, decay, seed};
  if (t.noise == NOISE_SIGN && !t.stochastic_rounding)  // 128 signs per Philox call (sign_noise.h)
    return launch_sign_update(p.w.dtype, p.w.data, n, coef, decay, seed, t.mask, stream_);
  const unsigned grid = grid_blocks(ceil_div(n, 8), kUpdateBlock);
  dispatch_dtype(p.w.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    update_kernel<T><<<grid, kUpdateBlock, 0, stream_>>>(static_cast<T*>(p.w.data), n, t, u);
    CUDA_CHECK_LAUNCH();
  });
}

float CudaBackend::abs_quantile(const Param& p, double q) {
  SMEZO_REQUIRE(q >= 0.0 && q <= 1.0, "quantile %g outside [0, 1]", q);
  const int64_t n = p.w.numel();
  SMEZO_REQUIRE(n > 0, "quantile of empty tensor %s", p.info.name.c_str());
  SMEZO_REQUIRE(!p.w.packed(), "quantile of %s, which is packed (--weights packed keeps frozen weights only)",
                p.info.name.c_str());
  held_.require_none(p.w, "abs_quantile");
  const int64_t k = static_cast<int64_t>(std::floor(q * static_cast<double>(n - 1)));
  // Bits of |w| (as float) that can be non-zero in this dtype, 8 per pass from the top.
  const int passes = p.w.dtype == DTYPE_F32 ? 4 : p.w.dtype == DTYPE_F16 ? 3 : 2;
  // Enough blocks to fill the GPU a few times over; each block counts < 2^32 elements.
  const int64_t grid = std::max<int64_t>(
      ceil_div(n, int64_t(1) << 30),
      std::min<int64_t>(ceil_div(ceil_div(n, 4), kHistBlock), int64_t(8) * sm_count()));
  SMEZO_REQUIRE(grid <= 0x7fffffff, "abs_quantile: tensor %s too large", p.info.name.c_str());
  auto* hist = static_cast<unsigned long long*>(scratch(kBins * sizeof(unsigned long long)));
  unsigned long long host[kBins];
  uint32_t prefix = 0, prefix_mask = 0;
  int64_t rank = k;  // rank of the answer among the elements matching the prefix
  for (int pass = 0; pass < passes; ++pass) {
    const int shift = 24 - 8 * pass;
    CUDA_CHECK(cudaMemsetAsync(hist, 0, sizeof host, stream_));
    dispatch_dtype(p.w.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      abs_radix_hist_kernel<T><<<static_cast<unsigned>(grid), kHistBlock, 0, stream_>>>(
          static_cast<const T*>(p.w.data), n, prefix, prefix_mask, shift, hist);
      CUDA_CHECK_LAUNCH();
    });
    CUDA_CHECK(cudaMemcpyAsync(host, hist, sizeof host, cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    int64_t below = 0;
    int bin = 0;
    while (bin < kBins && rank >= below + static_cast<int64_t>(host[bin])) below += host[bin++];
    SMEZO_REQUIRE(bin < kBins,
                  "abs_quantile: radix select lost rank %lld of tensor %s in pass %d (counted %lld)"
                  "\n---> HINT: this is a bug in cuda/optimizer.cu; rerun with SMEZO_CUDA_SYNC=1",
                  (long long)rank, p.info.name.c_str(), pass, (long long)below);
    prefix |= static_cast<uint32_t>(bin) << shift;
    prefix_mask |= 0xffu << shift;
    rank -= below;
  }
  float result;
  std::memcpy(&result, &prefix, sizeof result);
  return result;
}

}  // namespace smezo
