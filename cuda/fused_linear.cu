// The fused perturbed linear, version 0 (see cuda/fused_linear.h for the contract):
//   out(M, N) = x_r · W'ᵀ (+ b'),  W' = round_T(keep ? fma(scale, z, w) : w),  x_r = round_T(x)
// with z, keep from src/common/noise_spec.h at index n*K + k. Goal of v0: correct,
// deterministic, portable (sm_80+: nvcuda::wmma), simple. Speed comes in later versions.
//
// Kernel. One CTA computes a BM x BN = 128 x 128 tile of out with 8 warps (2 along M x 4
// along N, 64 x 32 outputs = 4 x 2 wmma 16x16x16 fragments each, fp32 accumulators). Per
// K-step of BK = 32, single-stage:
//   1. stage x: 128 x 32 fp32 read (16-byte loads where aligned), rounded to T (bf16/fp16,
//      __float2*_rn = linear.cu's rounding) into shared memory; rows >= M, k >= K are 0;
//   2. stage W: 128 x 32 elements read in runs of 8 consecutive k of one row, idx = n*K + k.
//      When idx % 8 == 0 the run is one noise group (one noise_z8 of the run's noise kind,
//      two more Philox calls for MASK_RANDOM, one 16-byte load); when K % 8 != 0 a row's runs
//      straddle noise groups and each element is read with the per-element spec functions.
//      Then perturbed_value per element (spec section 7), rounded once to T; rows >= N,
//      k >= K are 0. Nothing is written to global memory;
//   3. __syncthreads, 2 x (4 + 2 fragment loads, 8 mma_sync), __syncthreads.
// Epilogue: each warp stores one fragment at a time to a private 16 x 16 fp32 stage in shared
// memory and writes the in-bounds entries, out = fp_add(acc, b'[n]) (b' formed once per CTA
// column in the prologue, exactly as linear.cu's bias epilogue). No atomics, fixed summation
// order: the result is deterministic (bitwise run to run).
//
// Cost model of v0 (H100, per SM per clock: ~2048 bf16 tensor FMAs; one Gaussian ~0.4-0.5 clk
// of Philox + Box-Muller, DESIGN.md). Per CTA K-step: 128·128·32 = 524k FMAs ≈ 256 clk of
// tensor time, but 128·32 = 4096 perturbed W elements ≈ 1,800-2,000 clk of noise. Every
// M-tile regenerates z for the whole W, so the noise is generated ceil(M / 128) times per
// element (32x at M = 4096): at training sizes v0 is RNG-bound, ~7x above the tensor floor
// and slower than "materialise W', then cuBLAS" (noise once per element). At M <= 128 (LM
// head at option positions, generation) the noise is generated once and fusion saves the W'
// write + read. THE KNOWN LIMIT the next versions must remove: share each perturbed W tile
// across M-tiles (a thread-block cluster along M exchanging tiles through distributed shared
// memory, or a persistent kernel perturbing an L2-resident stripe once per ~1-2k rows of M),
// then pipelining (cp.async / TMA, multi-stage) and mma.sync / wgmma instead of wmma.
// Also: with scale 0 no noise is generated (W' = W), which measures the GEMM part alone.
#include "cuda/fused_linear.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <climits>
#include <cstdint>

#include "common/check.h"
#include "common/noise_spec.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/device_utils.cuh"

namespace smezo {

namespace {

constexpr int kBM = 128;                // rows of out (of x) per CTA
constexpr int kBN = 128;                // columns of out (rows of W) per CTA
constexpr int kBK = 32;                 // k per step; a multiple of 8 (noise groups) and 16
constexpr int kLds = kBK + 8;           // shared row stride (elements): 80 B, multiple of 16 B
constexpr int kThreads = 256;           // 8 warps
constexpr int kWarpsN = 4;              // warp grid 2 (M) x 4 (N)
constexpr int kWarpM = 64;              // rows per warp
constexpr int kWarpN = 32;              // columns per warp
constexpr int kFragM = kWarpM / 16;     // 4
constexpr int kFragN = kWarpN / 16;     // 2
constexpr int kXRunsPerRow = kBK / 4;   // x staged in runs of 4 k per tile row
constexpr int kWRunsPerRow = kBK / 8;   // W staged in runs of 8 k (one noise group when aligned)
static_assert(kBK % 16 == 0 && kBK % 8 == 0, "BK must be a multiple of 16 and of 8");
static_assert((kBM / kWarpM) * kWarpsN * 32 == kThreads, "warp grid must cover the tile");
static_assert(kLds % 8 == 0, "wmma needs ldm a multiple of 8 for 16-bit types");

// --- device helpers

// A 16-bit storage value (its bits, little-endian lane order) as float; exact.
template <typename T> __device__ __forceinline__ float bits16_to_float(uint16_t b);
template <> __device__ __forceinline__ float bits16_to_float<__half>(uint16_t b) {
  return __half2float(__ushort_as_half(b));
}
template <> __device__ __forceinline__ float bits16_to_float<__nv_bfloat16>(uint16_t b) {
  return __uint_as_float(static_cast<uint32_t>(b) << 16);
}

// p[i] as float for a runtime dtype (the bias; read once per CTA column).
__device__ __forceinline__ float load_any(const void* p, DType dt, int64_t i) {
  switch (dt) {
    case DTYPE_F16: return __half2float(static_cast<const __half*>(p)[i]);
    case DTYPE_BF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

// Elements idx .. idx+count-1 (count in 1..8, consecutive in one row of W) read through the
// probe into v[0..7] (entries >= count are 0). Spec-exact for any idx: element i takes entry
// i % 8 of noise group i / 8 and its mask from four-group i / 4. A run that is one whole
// noise group (idx % 8 == 0, count 8: every row when K % 8 == 0) makes one noise_z8 and, for
// MASK_RANDOM, two mask Philox calls; any other run (K % 8 != 0, or the row's last run) reads
// each element with the per-element spec functions (noise_z, mask_keep): slower, simple.
template <typename T>
__device__ __forceinline__ void read_w_run(const T* w, int64_t idx, int count,
                                           const ProbeArgs& pr, float v[8]) {
  const bool whole = count == 8 && (idx & 7) == 0;
  if (whole && reinterpret_cast<uintptr_t>(w + idx) % 16 == 0) {
    const uint4 raw = *reinterpret_cast<const uint4*>(w + idx);  // 8 x 16 bits, one access
    const uint32_t word[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      v[2 * l] = bits16_to_float<T>(static_cast<uint16_t>(word[l] & 0xffffu));
      v[2 * l + 1] = bits16_to_float<T>(static_cast<uint16_t>(word[l] >> 16));
    }
  } else {
#pragma unroll
    for (int l = 0; l < 8; ++l) v[l] = l < count ? to_float(w[idx + l]) : 0.0f;
  }
  if (pr.scale == 0.0f) return;
  if (whole) {
    float z[8];
    noise_z8(pr.noise, pr.seed, pr.mask.tensor_id, idx >> 3, z);
    bool keep[8];
    mask_keep4(pr.mask, v, idx >> 2, keep);
    mask_keep4(pr.mask, v + 4, (idx >> 2) + 1, keep + 4);
#pragma unroll
    for (int l = 0; l < 8; ++l) v[l] = perturbed_value(v[l], z[l], pr.scale, keep[l]);
    return;
  }
  for (int l = 0; l < count; ++l) {
    const int64_t i = idx + l;
    const MaskArgs& m = pr.mask;
    const bool keep = mask_keep(m.kind, v[l], m.threshold, m.keep_prob, m.mask_seed, m.tensor_id, i);
    v[l] = perturbed_value(v[l], noise_z(pr.noise, pr.seed, m.tensor_id, i), pr.scale, keep);
  }
}

// --- kernels

template <typename T>
__global__ void __launch_bounds__(kThreads)
    fused_linear_kernel(const FusedLinearParams p) {
  namespace wmma = nvcuda::wmma;
  // Raw bytes: __half / __nv_bfloat16 have constructors, which __shared__ arrays may not run.
  __shared__ __align__(128) unsigned char a_bytes[kBM * kLds * sizeof(T)];
  __shared__ __align__(128) unsigned char b_bytes[kBN * kLds * sizeof(T)];
  __shared__ __align__(128) float epi[kThreads / 32][16 * 16];
  __shared__ float bias_s[kBN];
  T* As = reinterpret_cast<T*>(a_bytes);  // [kBM][kLds]: x_r tile, row m, column k
  T* Bs = reinterpret_cast<T*>(b_bytes);  // [kBN][kLds]: W' tile, row n, column k

  const T* w = static_cast<const T*>(p.w);
  const int64_t M = p.M, N = p.N, K = p.K;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kBM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kBN;
  const int tid = threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;

  // b' of this CTA's columns, in fp32 (linear.cu's bias_epilogue_kernel arithmetic).
  if (tid < kBN) {
    const int64_t n = n0 + tid;
    float b = 0.0f;
    if (p.bias != nullptr && n < N) {
      b = load_any(p.bias, p.bias_dtype, n);
      const ProbeArgs& bp = p.b_probe;
      if (bp.scale != 0.0f) {
        const float z = noise_z(bp.noise, bp.seed, bp.mask.tensor_id, n);
        const bool keep =
            mask_keep(bp.mask.kind, b, bp.mask.threshold, bp.mask.keep_prob, bp.mask.mask_seed, bp.mask.tensor_id, n);
        b = perturbed_value(b, z, bp.scale, keep);
      }
    }
    bias_s[tid] = b;
  }

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFragM][kFragN];
#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < kFragN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int64_t k0 = 0; k0 < K; k0 += kBK) {
    // 1. x tile -> T (rows >= M and k >= K are zeros).
    for (int q = tid; q < kBM * kXRunsPerRow; q += kThreads) {
      const int r = q / kXRunsPerRow, c = (q % kXRunsPerRow) * 4;
      const int64_t m = m0 + r, k = k0 + c;
      float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (m < M && k < K) load4(p.x + m * K, k, K, v);  // 16-byte load when aligned and in row
#pragma unroll
      for (int l = 0; l < 4; ++l) As[r * kLds + c + l] = from_float<T>(v[l]);
    }
    // 2. W tile -> W' in T (rows >= N and k >= K are zeros).
    for (int q = tid; q < kBN * kWRunsPerRow; q += kThreads) {
      const int r = q / kWRunsPerRow, c = (q % kWRunsPerRow) * 8;
      const int64_t n = n0 + r, k = k0 + c;
      float v[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
      if (n < N && k < K) {
        const int count = K - k < 8 ? static_cast<int>(K - k) : 8;
        read_w_run(w, n * K + k, count, p.w_probe, v);
      }
#pragma unroll
      for (int l = 0; l < 8; ++l) Bs[r * kLds + c + l] = from_float<T>(v[l]);
    }
    __syncthreads();

    // 3. tensor cores: out tile += As · Bsᵀ (Bs read as the column-major K x N operand).
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[kFragM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb[kFragN];
#pragma unroll
      for (int i = 0; i < kFragM; ++i)
        wmma::load_matrix_sync(fa[i], As + (warp_m * kWarpM + i * 16) * kLds + kk, kLds);
#pragma unroll
      for (int j = 0; j < kFragN; ++j)
        wmma::load_matrix_sync(fb[j], Bs + (warp_n * kWarpN + j * 16) * kLds + kk, kLds);
#pragma unroll
      for (int i = 0; i < kFragM; ++i)
#pragma unroll
        for (int j = 0; j < kFragN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();  // the next step overwrites As / Bs
  }

  // Epilogue: fragment -> private stage -> in-bounds entries of out (+ b').
  float* stage = epi[warp];
  const bool has_bias = p.bias != nullptr;
#pragma unroll
  for (int i = 0; i < kFragM; ++i)
#pragma unroll
    for (int j = 0; j < kFragN; ++j) {
      wmma::store_matrix_sync(stage, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      const int row0 = warp_m * kWarpM + i * 16, col0 = warp_n * kWarpN + j * 16;
      for (int e = lane; e < 16 * 16; e += 32) {
        const int r = e >> 4, c = e & 15;
        const int64_t m = m0 + row0 + r, n = n0 + col0 + c;
        if (m < M && n < N) {
          const float v = stage[e];
          p.out[m * N + n] = has_bias ? fp_add(v, bias_s[col0 + c]) : v;
        }
      }
      __syncwarp();  // the stage is rewritten by the next fragment
    }
}

}  // namespace

// --- launcher

void launch_fused_linear(const FusedLinearParams& p, cudaStream_t stream) {
  SMEZO_REQUIRE(p.w_dtype == DTYPE_BF16 || p.w_dtype == DTYPE_F16,
                "fused linear: weights must be bf16 or f16 (got %s)"
                "\n---> HINT: fp32 weights go through CudaBackend::linear (cuBLAS)",
                dtype_name(p.w_dtype));
  SMEZO_REQUIRE(p.M >= 0 && p.N >= 0 && p.K >= 0, "fused linear: negative shape [%lld, %lld, %lld]",
                (long long)p.M, (long long)p.N, (long long)p.K);
  if (p.M == 0 || p.N == 0) return;
  SMEZO_REQUIRE(p.K > 0, "fused linear: zero input features");
  SMEZO_REQUIRE(p.out != nullptr && p.x != nullptr && p.w != nullptr,
                "fused linear: null out, x or w pointer");
  const int64_t m_tiles = ceil_div(p.M, kBM), n_tiles = ceil_div(p.N, kBN);
  SMEZO_REQUIRE(m_tiles <= 65535 && n_tiles <= INT_MAX,
                "fused linear: M = %lld rows exceeds the grid (at most %lld)", (long long)p.M,
                (long long)65535 * kBM);
  const dim3 grid(static_cast<unsigned>(n_tiles), static_cast<unsigned>(m_tiles));
  if (p.w_dtype == DTYPE_BF16)
    fused_linear_kernel<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(p);
  else
    fused_linear_kernel<__half><<<grid, kThreads, 0, stream>>>(p);
  CUDA_CHECK_LAUNCH();
}

void fused_linear(CudaBackend& backend, const Tensor& out, const Tensor& in, const Param& weight,
                  const Param* bias, const Probe& probe) {
  const Tensor& W = weight.w;
  const char* name = weight.info.name.c_str();
  const int64_t M = in.rows, K = in.cols, N = W.rows;
  SMEZO_REQUIRE(W.cols == K, "fused linear %s: input has %lld features, weight expects %lld",
                name, (long long)K, (long long)W.cols);
  SMEZO_REQUIRE(out.rows == M && out.cols == N,
                "fused linear %s: output is [%lld, %lld], expected [%lld, %lld]", name,
                (long long)out.rows, (long long)out.cols, (long long)M, (long long)N);
  SMEZO_REQUIRE(in.dtype == DTYPE_F32 && out.dtype == DTYPE_F32,
                "fused linear %s: activations must be F32 (got in %s, out %s)", name,
                dtype_name(in.dtype), dtype_name(out.dtype));
  SMEZO_REQUIRE(out.data != in.data, "fused linear %s: out and in must not alias", name);
  SMEZO_REQUIRE(!probe.pair, "fused linear %s: v0 takes single probes, not a probe pair", name);
  if (bias)
    SMEZO_REQUIRE(bias->w.numel() == N,
                  "fused linear %s: bias %s has %lld entries, expected %lld", name,
                  bias->info.name.c_str(), (long long)bias->w.numel(), (long long)N);
  FusedLinearParams p;
  p.out = out.f32();
  p.x = in.f32();
  p.w = W.data;
  p.w_dtype = W.dtype;
  p.M = M;
  p.N = N;
  p.K = K;
  p.w_probe = probe_args(weight, probe);
  if (bias) {
    p.bias = bias->w.data;
    p.bias_dtype = bias->w.dtype;
    p.b_probe = probe_args(*bias, probe);
  }
  launch_fused_linear(p, backend.stream());
}

void fused_linear_bench_hook(CudaBackend& backend, const Tensor& out, const Tensor& in,
                             const Param& weight, const Probe& probe) {
  fused_linear(backend, out, in, weight, nullptr, probe);
}

}  // namespace smezo
