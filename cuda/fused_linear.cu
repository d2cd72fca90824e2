// The fused perturbed linear: out(M, N) = in(M, K) · W'(N, K)ᵀ with W' formed in shared memory, never
// in global memory; a probe pair's two halves in one launch. Selected by --linear-path (cuda_plan.h);
// tested by tests/test_fused_linear.cu; timed by `smezo bench --kernel linear`.
// Tiling: a block (4 warps) owns kCols = 32 weight rows and kSlots = 128 rows of `in` (a pair: the
// same 64 row indices of each half) and walks K in chunks of kBK (64 for 16-bit, 32 for fp32). Each
// weight tile is read ONCE, its mask and noise keyed by n*K + k exactly as perturb_weight_pair_kernel
// keys them (a group of 8 straddling a tile edge is computed by both sides), and W+ (W-) and x are
// rounded as on the W' path: the same operands bit for bit. Rows stream through the stationary tile:
// wmma 16x16x16 for 16-bit, plain FMAs for fp32 (tf32 would round what the W' path multiplies
// exactly). W's noise is generated once per row chunk of 64 (pair) or 128: made for few rows. Each
// output is written by one warp in a fixed order: deterministic.
#include "fused_linear.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <climits>
#include <cstring>

#include "common/check.h"
#include "common/noise_spec.h"
#include "cuda_check.h"
#include "device_utils.cuh"

namespace smezo {

namespace {

constexpr int kThreads = 128;  // 4 warps
constexpr int kCols = 32;      // weight rows (output columns) per block
constexpr int kSlots = 128;    // rows of `in` per block (a pair: 64 of each half)

template <typename T>
struct Tile {
  static constexpr bool kWmma = sizeof(T) == 2;
  static constexpr int kBK = kWmma ? 64 : 32;
  // Row stride: wmma needs a multiple of 8 and 32-byte aligned tiles; fp32 pads by one (32 banks).
  static constexpr int kLd = kWmma ? kBK + 8 : kBK + 1;
  // Groups of 8 that a row segment of kBK elements can overlap (it need not start on one).
  static constexpr int kGroupsPerRow = kBK / 8 + 1;
};

// One block's shared memory (29-31 KiB, under the 48 KiB static limit); tiles 32-byte aligned (wmma).
template <typename T>
struct alignas(32) FusedSmem {
  T x[kSlots * Tile<T>::kLd];   // (kSlots, kBK) the chunk of `in`, rounded to T
  T wp[kCols * Tile<T>::kLd];   // (kCols, kBK) W+ (a single probe: its W')
  T wm[kCols * Tile<T>::kLd];   // (kCols, kBK) W- (pairs only)
  float stage[4][16 * 16];      // per warp: an accumulator tile on its way to `out` (wmma)
};

// Which row of `in` each of the block's slots holds.
struct RowMap {
  bool pair = false;
  int64_t half_rows = 0;  // rows per probe: M/2 for a pair, else M
  int half_slots = 0;     // slots per probe: 64 for a pair, else 128
  int64_t first = 0;      // the block's first row within each half
  int used = 0;           // slots per half that hold a row, rounded up to whole 16-row tiles

  // The row of `in` at slot s, or -1.
  __device__ int64_t row(int s) const {
    const int h = pair && s >= half_slots ? 1 : 0;
    const int64_t r = first + (s - h * half_slots);
    return r < half_rows ? h * half_rows + r : -1;
  }
  // Whether the 16-slot tile starting at s0 holds any row (rows of a half are consecutive).
  __device__ bool tile_used(int s0) const { return s0 - (pair && s0 >= half_slots ? half_slots : 0) < used; }
};

__device__ RowMap make_rows(const FusedLinearParams& p) {
  RowMap m;
  m.pair = p.pair;
  m.half_rows = p.pair ? p.M / 2 : p.M;
  m.half_slots = p.pair ? kSlots / 2 : kSlots;
  m.first = static_cast<int64_t>(blockIdx.y) * m.half_slots;
  const int64_t valid = m.half_rows - m.first < m.half_slots ? m.half_rows - m.first : m.half_slots;
  m.used = static_cast<int>((valid + 15) / 16 * 16);
  return m;
}

// v[l] = float(w[8g + l]) for group g's elements inside [seg0, seg1), 0 elsewhere (16-byte loads if aligned).
template <typename T>
__device__ __forceinline__ void load_group8(const T* w, int64_t g, int64_t seg0, int64_t seg1,
                                            bool vec, float v[8]) {
  const int64_t i0 = 8 * g;
  if (vec && i0 >= seg0 && i0 + 8 <= seg1) {
    constexpr int kWords = static_cast<int>(sizeof(T)) / 2;  // 8 elements in 16-byte words
    uint4 raw[kWords];
    const uint4* src = reinterpret_cast<const uint4*>(w + i0);
#pragma unroll
    for (int q = 0; q < kWords; ++q) raw[q] = src[q];
    T t[8];
    memcpy(t, raw, sizeof t);
#pragma unroll
    for (int l = 0; l < 8; ++l) v[l] = to_float(t[l]);
  } else {
#pragma unroll
    for (int l = 0; l < 8; ++l) v[l] = i0 + l >= seg0 && i0 + l < seg1 ? to_float(w[i0 + l]) : 0.0f;
  }
}

// --- kernels' stages

// W' of rows n0 .. n0+kCols-1, columns k0 .. k0+kBK-1 into sm.wp (sm.wm: pair), rounded to T; 0 outside W.
template <typename T>
__device__ void stage_weights(const FusedLinearParams& p, int64_t n0, int64_t k0, bool vec,
                              FusedSmem<T>& sm) {
  constexpr int BK = Tile<T>::kBK, LD = Tile<T>::kLd, G = Tile<T>::kGroupsPerRow;
  const T* w = static_cast<const T*>(p.w);
  const int kw = p.K - k0 < BK ? static_cast<int>(p.K - k0) : BK;  // columns inside W
  for (int t = threadIdx.x; t < kCols * G; t += kThreads) {
    const int r = t / G;
    const int64_t n = n0 + r;
    const int64_t seg0 = n * p.K + k0, seg1 = seg0 + kw;  // the row segment's element indices
    const int64_t g = seg0 / 8 + t % G;
    if (n >= p.N || 8 * g >= seg1) continue;
    float v[8], wp[8], wm[8];
    load_group8(w, g, seg0, seg1, vec, v);
    perturb_group8(p.probe, g, v, wp, wm);
#pragma unroll
    for (int l = 0; l < 8; ++l) {
      const int64_t i = 8 * g + l;
      if (i < seg0 || i >= seg1) continue;
      const int at = r * LD + static_cast<int>(i - seg0);
      sm.wp[at] = from_float<T>(wp[l]);
      if (p.pair) sm.wm[at] = from_float<T>(wm[l]);
    }
  }
  if (n0 + kCols <= p.N && kw == BK) return;  // the tile lies inside W (block-uniform)
  for (int e = threadIdx.x; e < kCols * BK; e += kThreads) {
    const int r = e / BK, c = e % BK;
    if (n0 + r < p.N && c < kw) continue;
    sm.wp[r * LD + c] = from_float<T>(0.0f);
    if (p.pair) sm.wm[r * LD + c] = from_float<T>(0.0f);
  }
}

// Columns k0 .. k0+kBK-1 of the used tiles' rows into sm.x, rounded to T (0 past K and in empty slots).
template <typename T>
__device__ void stage_input(const FusedLinearParams& p, const RowMap& rows, int64_t k0, FusedSmem<T>& sm) {
  constexpr int BK = Tile<T>::kBK, LD = Tile<T>::kLd;
  const int kw = p.K - k0 < BK ? static_cast<int>(p.K - k0) : BK;
  const int halves = rows.pair ? 2 : 1;
  for (int e = threadIdx.x; e < halves * rows.used * BK; e += kThreads) {
    const int u = e / BK, c = e % BK;
    const int s = u < rows.used ? u : rows.half_slots + (u - rows.used);  // the used slots only
    const int64_t m = rows.row(s);
    const float v = m >= 0 && c < kw ? p.in[m * p.K + k0 + c] : 0.0f;
    sm.x[s * LD + c] = from_float<T>(v);
  }
}

// --- kernels
// __launch_bounds__(kThreads, 1) lets ptxas take up to 255 registers (at 128 the bf16 kernel spills).

// fp16/bf16 weights: tensor cores. Warp w: columns 16 (w & 1) .. +15, row tiles 4 (w >> 1) .. +3.
template <typename T>
__global__ void __launch_bounds__(kThreads, 1) fused_linear_wmma_kernel(FusedLinearParams p, bool vec) {
  namespace wmma = nvcuda::wmma;
  constexpr int BK = Tile<T>::kBK, LD = Tile<T>::kLd;
  __shared__ FusedSmem<T> sm;
  const RowMap rows = make_rows(p);
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kCols;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int col0 = 16 * (warp & 1), slot0 = 64 * (warp >> 1);
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) wmma::fill_fragment(acc[i], 0.0f);
  for (int64_t k0 = 0; k0 < p.K; k0 += BK) {
    __syncthreads();  // every warp is done with the previous chunk's tiles
    stage_weights(p, n0, k0, vec, sm);
    stage_input(p, rows, k0, sm);
    __syncthreads();
    const T* wt = (p.pair && warp >= 2 ? sm.wm : sm.wp) + col0 * LD;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;  // B(k, n) = W'[n][k]
      wmma::load_matrix_sync(b, wt + kk, LD);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (!rows.tile_used(slot0 + 16 * i)) break;  // warp-uniform
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::load_matrix_sync(a, sm.x + (slot0 + 16 * i) * LD + kk, LD);
        wmma::mma_sync(acc[i], a, b, acc[i]);
      }
    }
  }
  float* stage = sm.stage[warp];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if (!rows.tile_used(slot0 + 16 * i)) break;
    wmma::store_matrix_sync(stage, acc[i], 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {
      const int64_t m = rows.row(slot0 + 16 * i + e / 16), n = n0 + col0 + e % 16;
      if (m >= 0 && n < p.N) p.out[m * p.N + n] = stage[e];
    }
    __syncwarp();  // the stage is read before the next tile overwrites it
  }
}

// fp32 weights: plain FMAs. Lane l: column n0 + l; warp w: slots 32w .. +31 (pair: 0-1 +, 2-3 -).
__global__ void __launch_bounds__(kThreads, 1) fused_linear_fma_kernel(FusedLinearParams p, bool vec) {
  constexpr int BK = Tile<float>::kBK, LD = Tile<float>::kLd;
  __shared__ FusedSmem<float> sm;
  const RowMap rows = make_rows(p);
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kCols;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int slot0 = 32 * warp;
  // slots of this warp that hold rows (whole tiles, so a partial tile multiplies zeros)
  const int n_slots = rows.tile_used(slot0 + 16) ? 32 : rows.tile_used(slot0) ? 16 : 0;
  float acc[32];
#pragma unroll
  for (int s = 0; s < 32; ++s) acc[s] = 0.0f;
  for (int64_t k0 = 0; k0 < p.K; k0 += BK) {
    __syncthreads();
    stage_weights(p, n0, k0, vec, sm);
    stage_input(p, rows, k0, sm);
    __syncthreads();
    const float* wt = (p.pair && warp >= 2 ? sm.wm : sm.wp) + lane * LD;
    const float* xt = sm.x + slot0 * LD;
    for (int k = 0; k < BK; ++k) {
      const float wv = wt[k];
#pragma unroll
      for (int s = 0; s < 32; ++s)
        if (s < n_slots) acc[s] = fmaf(xt[s * LD + k], wv, acc[s]);
    }
  }
  const int64_t n = n0 + lane;
#pragma unroll
  for (int s = 0; s < 32; ++s) {
    const int64_t m = s < n_slots ? rows.row(slot0 + s) : -1;
    if (m >= 0 && n < p.N) p.out[m * p.N + n] = acc[s];
  }
}

}  // namespace

// --- launcher

int64_t fused_linear_rows_per_block(bool pair) { return pair ? kSlots / 2 : kSlots; }

void launch_fused_linear(const FusedLinearParams& p, cudaStream_t stream) {
  SMEZO_REQUIRE(p.M >= 0 && p.N >= 0 && p.K >= 0, "fused linear: negative shape [%lld x %lld] x [%lld x %lld]^T",
                (long long)p.M, (long long)p.K, (long long)p.N, (long long)p.K);
  SMEZO_REQUIRE(!p.pair || p.M % 2 == 0, "fused linear: a probe pair needs an even number of rows (%lld)",
                (long long)p.M);
  if (p.M == 0 || p.N == 0) return;
  SMEZO_REQUIRE(p.K > 0, "fused linear: zero input features");
  SMEZO_REQUIRE(p.out != nullptr && p.in != nullptr && p.w != nullptr, "fused linear: null operand");
  const int64_t chunks = ceil_div(p.pair ? p.M / 2 : p.M, fused_linear_rows_per_block(p.pair));
  const int64_t col_blocks = ceil_div(p.N, kCols);
  SMEZO_REQUIRE(chunks <= 65535 && col_blocks <= INT_MAX,
                "fused linear: %lld rows x %lld outputs exceed its grid (65535 row chunks of %lld) ---> HINT: "
                "use --linear-path wprime", (long long)p.M, (long long)p.N,
                (long long)fused_linear_rows_per_block(p.pair));
  const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(chunks));
  const bool vec = reinterpret_cast<uintptr_t>(p.w) % 16 == 0;
  switch (p.dtype) {
    case DTYPE_BF16: fused_linear_wmma_kernel<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(p, vec); break;
    case DTYPE_F16: fused_linear_wmma_kernel<__half><<<grid, kThreads, 0, stream>>>(p, vec); break;
    case DTYPE_F32: fused_linear_fma_kernel<<<grid, kThreads, 0, stream>>>(p, vec); break;
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace smezo
