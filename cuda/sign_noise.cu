// The sign noise kind's W' and update kernels (sign_noise.h). One kernel, sign_noise_kernel<T, op>:
// a warp owns a tile of 32 consecutive Philox calls (4096 elements) at a time. Lane l computes call
// c0 + l; the 32 calls' words go through the warp's 512 bytes of shared memory; then the warp walks
// the tile's 512 groups of 8 in 16 coalesced passes (pass s, lane l: group 32s + l, whose 8 signs are
// one byte of the words, noise_sign_byte). Per element that is 1/128 of a Philox call (rademacher:
// 1/8; gaussian: 1/8 and the Box-Muller transform), a shift and an add. Groups outside the range
// (the tile's first call may start before it, the last end after it) are skipped, never written.
#include "sign_noise.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/noise_spec.h"
#include "cuda_check.h"
#include "device_utils.cuh"

namespace smezo {

namespace {

enum SignOp { SIGN_READ, SIGN_PAIR, SIGN_UPDATE };

constexpr int kSignBlock = 128;  // 4 warps
constexpr int kSignWarps = kSignBlock / 32;
constexpr int kTileCalls = 32;   // Philox calls per warp tile: one per lane (16 groups of 8 each)

struct SignArgs {
  void* out = nullptr;        // READ: W' (n); PAIR: W+ (n); UPDATE: the tensor (n, in place)
  void* out_minus = nullptr;  // PAIR: W- (n)
  const void* src = nullptr;  // READ, PAIR: the tensor from element 8 * group_base (n)
  int64_t n = 0;
  int64_t group_base = 0;     // the tensor's group of 8 at src[0] (out[0] for UPDATE)
  float a = 0.0f;             // READ, PAIR: the + scale; UPDATE: -coef
  float decay = 0.0f;         // UPDATE: lr * weight_decay
  uint64_t seed = 0;          // step seed of z
  MaskArgs mask;
};

// --- kernels

// Group g of 8 (the tensor's group_base + g); bit l of `signs` set: z = -1 for element 8g + l.
template <typename T, int kOp>
__device__ __forceinline__ void sign_group8(const SignArgs& s, int64_t g, uint32_t signs) {
  const T* src = static_cast<const T*>(kOp == SIGN_UPDATE ? s.out : s.src);
  float w[8], v[8], m[8];
  load4(src, 8 * g, s.n, w);  // entries >= n read as 0 and are never stored
  load4(src, 8 * g + 4, s.n, w + 4);
  bool keep[8];
  if (!mask_keep8(s.mask, w, s.group_base + g, keep) && kOp == SIGN_UPDATE) return;  // nothing changes
#pragma unroll
  for (int l = 0; l < 8; ++l) {
    const uint32_t bit = (signs >> l) & 1u;
    v[l] = keep[l] ? add_sign_flipped(w[l], s.a, bit) : w[l];  // perturbed_value, updated_value
    if (kOp == SIGN_PAIR) m[l] = keep[l] ? add_sign_flipped(w[l], s.a, bit ^ 1u) : w[l];  // at -scale
    if (kOp == SIGN_UPDATE) v[l] = keep[l] ? fp_fma(-s.decay, w[l], v[l]) : v[l];
  }
  T* out = static_cast<T*>(s.out);
  store4(out, 8 * g, s.n, v);
  store4(out, 8 * g + 4, s.n, v + 4);
  if (kOp == SIGN_PAIR) {
    T* minus = static_cast<T*>(s.out_minus);
    store4(minus, 8 * g, s.n, m);
    store4(minus, 8 * g + 4, s.n, m + 4);
  }
}

template <typename T, int kOp>
__global__ void __launch_bounds__(kSignBlock) sign_noise_kernel(SignArgs s) {
  __shared__ uint32_t words[kSignWarps][4 * kTileCalls];  // per warp: lane l's call at 4l .. 4l + 3
  uint32_t* tile = words[threadIdx.x / 32];
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t n_groups = ceil_div(s.n, 8);
  const int64_t call_end = ceil_div(s.group_base + n_groups, 16);
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kSignWarps + threadIdx.x / 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kSignWarps;
  // The bounds are the warp's, not the lane's: every lane reaches both __syncwarp.
  for (int64_t c0 = s.group_base / 16 + kTileCalls * warp; c0 < call_end; c0 += kTileCalls * warps) {
    uint32_t x[4];
    noise_philox4(s.seed, s.mask.tensor_id, c0 + lane, NOISE_STREAM_GAUSS, x);
    __syncwarp();  // every lane has read the previous tile's words
#pragma unroll
    for (int k = 0; k < 4; ++k) tile[4 * lane + k] = x[k];
    __syncwarp();
    for (int pass = 0; pass < 16; ++pass) {
      // The tile's group r: call r / 16, word r / 4 % 4, byte r % 4 (noise_sign_byte), so word r / 4.
      const int r = 32 * pass + lane;
      const int64_t g = 16 * c0 + r - s.group_base;
      if (g >= 0 && g < n_groups) sign_group8<T, kOp>(s, g, (tile[r / 4] >> (8 * (r % 4))) & 0xffu);
    }
  }
}

// --- launchers

template <int kOp>
void launch(DType dtype, const SignArgs& s, cudaStream_t stream) {
  if (s.n <= 0) return;
  const int64_t calls = ceil_div(s.group_base + ceil_div(s.n, 8), 16) - s.group_base / 16;
  const unsigned grid = grid_blocks(ceil_div(calls, kTileCalls), kSignWarps);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    sign_noise_kernel<T, kOp><<<grid, kSignBlock, 0, stream>>>(s);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

void launch_sign_perturb(DType dtype, void* plus, void* minus, const void* src, int64_t first, int64_t n,
                         const ProbeArgs& p, cudaStream_t stream) {
  SMEZO_REQUIRE(first % 8 == 0, "launch_sign_perturb: first element %lld is not a multiple of 8 (internal error)",
                (long long)first);
  SignArgs s;
  s.out = plus;
  s.out_minus = minus;
  s.src = static_cast<const char*>(src) + first * dtype_size(dtype);
  s.n = n;
  s.group_base = first / 8;
  s.a = p.scale;
  s.seed = p.seed;
  s.mask = p.mask;
  if (minus != nullptr) launch<SIGN_PAIR>(dtype, s, stream);
  else launch<SIGN_READ>(dtype, s, stream);
}

void launch_sign_update(DType dtype, void* w, int64_t n, float coef, float decay, uint64_t seed,
                        const MaskArgs& mask, cudaStream_t stream) {
  SignArgs s;
  s.out = w;
  s.n = n;
  s.a = -coef;
  s.decay = decay;
  s.seed = seed;
  s.mask = mask;
  launch<SIGN_UPDATE>(dtype, s, stream);
}

}  // namespace smezo
