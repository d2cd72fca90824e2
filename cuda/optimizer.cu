// CUDA optimiser ops (reference: src/cpu/optimizer.cpp): the SPSA update and the exact |W| quantile
// that fixes the S-MeZO threshold.
//   update_kernel          one thread per group of 8 elements; mask from the CURRENT w; the CPU's
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
#include "cuda/sign_noise.h"

namespace smezo {

namespace {  // internal linkage: kernel names cannot clash across files

struct UpdateParams {
  void* w = nullptr;   // (numel) storage dtype, updated in place
  int64_t n = 0;
  float coef = 0.0f;   // lr * g
  float decay = 0.0f;  // lr * weight_decay, or 0
  uint64_t seed = 0;   // step seed of z
  NoiseKind noise = NOISE_GAUSSIAN;  // the run's z (ParamInfo::noise)
  MaskArgs mask;
  bool stochastic_rounding = false;  // bf16 only: round kept entries stochastically
};

constexpr int kBins = 256;
constexpr uint32_t kNoBin = kBins;  // key of elements outside the current prefix

// --- kernels

template <typename T>
__global__ void update_kernel(UpdateParams p) {
  T* w = static_cast<T*>(p.w);
  SMEZO_GRID_STRIDE(g, ceil_div(p.n, 8)) {
    const int64_t i0 = 8 * g;
    float v[8];
    load4(w, i0, p.n, v);  // entries >= n read as 0 and are never stored
    load4(w, i0 + 4, p.n, v + 4);
    bool keep[8];
    if (!mask_keep8(p.mask, v, g, keep)) continue;  // nothing changes
    float z[8];
    noise_z8(p.noise, p.seed, p.mask.tensor_id, g, z);
#pragma unroll
    for (int l = 0; l < 8; ++l) {
      const float w1 = updated_value(v[l], z[l], p.coef, keep[l]);
      v[l] = keep[l] ? fp_fma(-p.decay, v[l], w1) : w1;
    }
    if constexpr (std::is_same<T, __nv_bfloat16>::value) {
      if (p.stochastic_rounding) {  // kept entries only: the others keep their stored bits
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (!(keep[4 * h] || keep[4 * h + 1] || keep[4 * h + 2] || keep[4 * h + 3])) continue;
          uint32_t r[4];  // the rounding bits of elements i0 + 4h .. i0 + 4h + 3 (one Philox call)
          noise_rounding_bits4(p.seed, p.mask.tensor_id, 2 * g + h, r);
#pragma unroll
          for (int l = 0; l < 4; ++l) {
            const int64_t i = i0 + 4 * h + l;
            if (i < p.n && keep[4 * h + l])
              w[i] = __ushort_as_bfloat16(bf16_round_stochastic(v[4 * h + l], r[l]));
          }
        }
        continue;
      }
    }
    store4(w, i0, p.n, v);
    store4(w, i0 + 4, p.n, v + 4);
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
  if (!p.info.trainable) return;
  const int64_t n = p.w.numel();
  if (n == 0) return;
  UpdateParams u;
  u.w = p.w.data;
  u.n = n;
  u.coef = coef;
  u.decay = decay;
  u.seed = seed;
  u.noise = p.info.noise;
  u.mask = mask_args(p.info);
  u.stochastic_rounding = p.info.stochastic_rounding && p.w.dtype == DTYPE_BF16;
  SMEZO_REQUIRE(!(p.info.stochastic_rounding && p.w.dtype == DTYPE_F16),
                "stochastic rounding is implemented for bf16 storage; %s is stored as F16 "
                "---> HINT: use --dtype bf16 or drop --stochastic-rounding", p.info.name.c_str());
  if (u.noise == NOISE_SIGN && !u.stochastic_rounding)  // 128 signs per Philox call (sign_noise.h)
    return launch_sign_update(p.w.dtype, p.w.data, n, coef, decay, seed, u.mask, stream_);
  const unsigned grid = grid_blocks(ceil_div(n, 8), kUpdateBlock);
  dispatch_dtype(p.w.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    update_kernel<T><<<grid, kUpdateBlock, 0, stream_>>>(u);
    CUDA_CHECK_LAUNCH();
  });
}

float CudaBackend::abs_quantile(const Param& p, double q) {
  SMEZO_REQUIRE(q >= 0.0 && q <= 1.0, "quantile %g outside [0, 1]", q);
  const int64_t n = p.w.numel();
  SMEZO_REQUIRE(n > 0, "quantile of empty tensor %s", p.info.name.c_str());
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
