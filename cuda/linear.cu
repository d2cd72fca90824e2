// The linear layer on the GPU: out(M, N) = in(M, K) · W'(N, K)ᵀ (+ b'(1, N)), fp32 out and
// accumulation, W stored fp32 / fp16 / bf16, w' = keep ? fma(scale, z, w) : w (noise_spec.h).
// Version 1 (this file): materialise W', then cuBLAS. perturb_weight_kernel writes W' to scratch
// (rounded once from the fp32 w'; a pair: W+ and W- from one noise_z8 per group); fp16/bf16 x is
// rounded to W's dtype (cublasGemmEx wants A, B alike); cublasGemmEx (a pair: batch-2 strided), fp32
// with CUBLAS_COMPUTE_32F_PEDANTIC (no TF32); bias_epilogue_kernel adds b' in fp32, as the CPU does.
// LINEAR_FUSED goes to cuda/fused_linear.cu, the bias still added here; the sign noise kind's W' to
// cuda/sign_noise.cu (128 signs per Philox call). Tests: tests/test_backend_ops.cu.
// Memory: scratch holds one row block of W' (<= kCudaWeightChunkBytes, W+ and W- together) plus x in
// 16 bits, in ONE scratch() call (a second could move the first region), as linear_scratch_plan (and
// the memory estimate) count. cuBLAS keeps its default workspace; the handle is bound to our stream.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "common/check.h"
#include "common/noise_spec.h"
#include "cuda_backend.h"
#include "cuda_check.h"
#include "cuda_plan.h"
#include "device_utils.cuh"
#include "fused_linear.h"
#include "sign_noise.h"

namespace smezo {

namespace {

// --- kernels

// dst[i] = round_T(w'_i), i < n, by groups of eight; src, dst start at the tensor's element 8 * group_base.
template <typename T>
__global__ void perturb_weight_kernel(T* dst, const T* src, int64_t n, int64_t group_base,
                                      ProbeArgs p) {
  SMEZO_GRID_STRIDE(g, ceil_div(n, 8)) {
    float w[8], wp[8];
    load4(src, 8 * g, n, w);  // entries >= n read as 0 and are never stored
    load4(src, 8 * g + 4, n, w + 4);
    perturb_group8(p, group_base + g, w, wp);
    store4(dst, 8 * g, n, wp);
    store4(dst, 8 * g + 4, n, wp + 4);
  }
}

// The pair: plus[i], minus[i] as perturb_weight_kernel under ±scale, from ONE noise_z8 and mask per group.
template <typename T>
__global__ void perturb_weight_pair_kernel(T* plus, T* minus, const T* src, int64_t n,
                                           int64_t group_base, ProbeArgs p) {
  SMEZO_GRID_STRIDE(g, ceil_div(n, 8)) {
    float w[8], wp[8], wm[8];
    load4(src, 8 * g, n, w);
    load4(src, 8 * g + 4, n, w + 4);
    perturb_group8(p, group_base + g, w, wp, wm);
    store4(plus, 8 * g, n, wp);
    store4(plus, 8 * g + 4, n, wp + 4);
    store4(minus, 8 * g, n, wm);
    store4(minus, 8 * g + 4, n, wm + 4);
  }
}

// dst[i] = round_T(src[i]), i in [0, n): x in the GEMM's input type.
template <typename T>
__global__ void convert_input_kernel(T* dst, const float* src, int64_t n) {
  SMEZO_GRID_STRIDE(i, n) { dst[i] = from_float<T>(src[i]); }
}

// out(M, N) += b'(N). Thread n forms b'[n] once (fp32, as cpu_read_param) for rows y, y + gridDim.y, ...
template <typename T>
__global__ void bias_epilogue_kernel(float* out, const T* bias, int64_t M, int64_t N, bool perturb,
                                     ProbeArgs p) {
  const int64_t n = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (n >= N) return;
  float b = to_float(bias[n]);
  if (perturb) {
    const MaskArgs& m = p.mask;
    const float z = noise_z(p.noise, p.seed, m.tensor_id, n);
    const bool keep = mask_keep(m.kind, b, m.threshold, m.keep_prob, m.mask_seed, m.tensor_id, n);
    b = perturbed_value(b, z, p.scale, keep);
  }
  for (int64_t m = blockIdx.y; m < M; m += gridDim.y) out[m * N + n] = fp_add(out[m * N + n], b);
}

// --- launchers

constexpr int kBlock = 256;

// Elements [first, first + n) of the tensor at src (first a multiple of 8) into dst[0, n).
void perturb_weight(DType dtype, void* dst, const void* src, int64_t first, int64_t n,
                    const ProbeArgs& p, cudaStream_t stream) {
  if (p.noise == NOISE_SIGN) return launch_sign_perturb(dtype, dst, nullptr, src, first, n, p, stream);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    perturb_weight_kernel<T><<<grid_blocks(ceil_div(n, 8), kBlock), kBlock, 0, stream>>>(
        static_cast<T*>(dst), static_cast<const T*>(src) + first, n, first / 8, p);
    CUDA_CHECK_LAUNCH();
  });
}

// The same for a pair, into plus[0, n) and minus[0, n).
void perturb_weight_pair(DType dtype, void* plus, void* minus, const void* src, int64_t first,
                         int64_t n, const ProbeArgs& p, cudaStream_t stream) {
  if (p.noise == NOISE_SIGN) return launch_sign_perturb(dtype, plus, minus, src, first, n, p, stream);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    perturb_weight_pair_kernel<T><<<grid_blocks(ceil_div(n, 8), kBlock), kBlock, 0, stream>>>(
        static_cast<T*>(plus), static_cast<T*>(minus), static_cast<const T*>(src) + first, n,
        first / 8, p);
    CUDA_CHECK_LAUNCH();
  });
}

template <typename T>
void launch_convert_input(void* dst, const float* src, int64_t n, cudaStream_t stream) {
  convert_input_kernel<T><<<grid_blocks(n, kBlock), kBlock, 0, stream>>>(static_cast<T*>(dst), src, n);
  CUDA_CHECK_LAUNCH();
}

void convert_input(DType dtype, void* dst, const float* src, int64_t n, cudaStream_t stream) {
  switch (dtype) {
    case DTYPE_F16: return launch_convert_input<__half>(dst, src, n, stream);
    case DTYPE_BF16: return launch_convert_input<__nv_bfloat16>(dst, src, n, stream);
    case DTYPE_F32: break;
  }
  throw_error("linear: fp32 input needs no conversion (internal error)");
}

void bias_epilogue(DType dtype, float* out, const void* bias, int64_t M, int64_t N, bool perturb,
                   const ProbeArgs& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(ceil_div(N, kBlock)),
                  static_cast<unsigned>(std::min<int64_t>(M, 32)));
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    bias_epilogue_kernel<T><<<grid, kBlock, 0, stream>>>(out, static_cast<const T*>(bias), M, N,
                                                         perturb, p);
    CUDA_CHECK_LAUNCH();
  });
}

// The fused kernel's operands for CudaBackend::linear's call (a pair's probe is its + half's).
FusedLinearParams fused_params(const Tensor& out, const Tensor& in, const Param& weight, const Probe& probe) {
  FusedLinearParams fp;
  fp.out = out.f32();
  fp.in = in.f32();
  fp.w = weight.w.data;
  fp.dtype = weight.w.dtype;
  fp.M = in.rows;
  fp.N = weight.w.rows;
  fp.K = in.cols;
  fp.pair = probe.pair;
  fp.probe = probe_args(weight, probe.pair ? half_probe(probe, +1) : probe);
  return fp;
}

cudaDataType cuda_data_type(DType dtype) {
  switch (dtype) {
    case DTYPE_F32: return CUDA_R_32F;
    case DTYPE_F16: return CUDA_R_16F;
    case DTYPE_BF16: return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

}  // namespace

void CudaBackend::linear(const Tensor& out, const Tensor& in, const Param& weight,
                         const Param* bias, const Probe& probe) {
  const Tensor& W = weight.w;
  const char* name = weight.info.name.c_str();
  const int64_t M = in.rows, K = in.cols, N = W.rows;
  SMEZO_REQUIRE(W.cols == K, "linear %s: input has %lld features, weight expects %lld", name,
                (long long)K, (long long)W.cols);
  SMEZO_REQUIRE(out.rows == M && out.cols == N,
                "linear %s: output is [%lld, %lld], expected [%lld, %lld]", name,
                (long long)out.rows, (long long)out.cols, (long long)M, (long long)N);
  SMEZO_REQUIRE(in.dtype == DTYPE_F32 && out.dtype == DTYPE_F32,
                "linear %s: activations must be F32 (got in %s, out %s)", name,
                dtype_name(in.dtype), dtype_name(out.dtype));
  SMEZO_REQUIRE(out.data != in.data, "linear %s: out and in must not alias", name);
  SMEZO_REQUIRE(
      M <= INT_MAX && N <= INT_MAX && K <= INT_MAX,
      "linear %s: [%lld x %lld] times [%lld x %lld]^T exceeds the int dimensions of cuBLAS", name,
      (long long)M, (long long)K, (long long)N, (long long)K);
  if (bias)
    SMEZO_REQUIRE(bias->w.numel() == N, "linear %s: bias %s has %lld entries, expected %lld", name,
                  bias->info.name.c_str(), (long long)bias->w.numel(), (long long)N);
  if (M == 0 || N == 0) return;
  SMEZO_REQUIRE(K > 0, "linear %s: zero input features", name);
  SMEZO_REQUIRE(!probe.pair || M % 2 == 0, "linear %s: a probe pair needs an even number of rows (%lld)",
                name, (long long)M);

  // The GEMM must run on our stream; rebind (which resets a user workspace) only if unbound.
  cudaStream_t handle_stream = nullptr;
  CUBLAS_CHECK(cublasGetStream(cublas_, &handle_stream));
  if (handle_stream != stream_) CUBLAS_CHECK(cublasSetStream(cublas_, stream_));

  const DType wt = W.dtype;
  LinearCall call;
  call.rows_per_probe = probe.pair ? M / 2 : M;
  call.n = N;
  call.k = K;
  call.perturbed = probe.scale != 0.0f && weight.info.trainable;
  call.pair = probe.pair;
  call.storage = wt;
  call.mode = linear_mode_;
  const LinearPath path = linear_path_choose(call);
  const bool perturb_w = path != LINEAR_GEMM;
  const bool pair_w = path == LINEAR_MATERIALISE_PAIR;  // W+ and W- from one noise generation

  // One scratch request: [W' block (W+ | W-) | x in 16 bits] (linear_scratch_plan).
  const LinearScratch plan = linear_scratch_plan(call, path);
  const int64_t block_rows = plan.block_rows;
  const size_t w_copies = static_cast<size_t>(plan.copies);
  const size_t w_bytes = static_cast<size_t>(plan.w_bytes);
  char* scratch_base =
      plan.total() > 0 ? static_cast<char*>(scratch(static_cast<size_t>(plan.total()))) : nullptr;

  const void* x_gemm = in.data;
  if (wt != DTYPE_F32 && path != LINEAR_FUSED) {  // fused rounds x tile by tile itself
    void* x_scratch = scratch_base + w_copies * w_bytes;
    convert_input(wt, x_scratch, in.f32(), M * K, stream_);
    x_gemm = x_scratch;
  }

  // To column-major cuBLAS the row-major W (N,K), x (M,K), out (M,N) are Wᵀ (K x N, ld K), xᵀ (K x M,
  // ld K), outᵀ (N x M, ld N): out = x·Wᵀ is outᵀ = op_T(W) · xᵀ, m = N, n = M, k = K, no copy.
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType ab_type = cuda_data_type(wt);
  // fp32: PEDANTIC forbids TF32 whatever the math mode (CPU reference up to summation order).
  const cublasComputeType_t compute =
      wt == DTYPE_F32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
  // Weight rows [n0, n0 + rows) give out's columns from out + n0, same ldc = N.
  auto gemm_rows = [&](const void* w_rows, int64_t n0, int64_t rows) {
    CUBLAS_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows),
                              static_cast<int>(M), static_cast<int>(K), &alpha, w_rows, ab_type,
                              static_cast<int>(K), x_gemm, ab_type, static_cast<int>(K), &beta,
                              out.f32() + n0, CUDA_R_32F, static_cast<int>(N), compute,
                              CUBLAS_GEMM_DEFAULT));
  };
  // The pair: batch 0 = W+ times the first row half, batch 1 = W- times the second.
  auto gemm_rows_pair = [&](const void* w_rows, int64_t n0, int64_t rows) {
    const int64_t Mh = M / 2;
    const long long stride_w = static_cast<long long>(w_bytes / dtype_size(wt));
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows), static_cast<int>(Mh),
        static_cast<int>(K), &alpha, w_rows, ab_type, static_cast<int>(K), stride_w, x_gemm,
        ab_type, static_cast<int>(K), static_cast<long long>(Mh * K), &beta, out.f32() + n0,
        CUDA_R_32F, static_cast<int>(N), static_cast<long long>(Mh * N), 2, compute,
        CUBLAS_GEMM_DEFAULT));
  };
  if (path == LINEAR_FUSED) {
    launch_fused_linear(fused_params(out, in, weight, probe), stream_);
  } else if (!perturb_w) {
    gemm_rows(W.data, 0, N);  // one W for every row (also a pair on an unperturbed weight)
  } else {
    for (int64_t n0 = 0; n0 < N; n0 += block_rows) {
      const int64_t rows = std::min(block_rows, N - n0);
      // stream order makes the next block's perturbation wait for this GEMM's reads
      if (pair_w) {
        perturb_weight_pair(wt, scratch_base, scratch_base + w_bytes, W.data, n0 * K, rows * K,
                            probe_args(weight, half_probe(probe, +1)), stream_);
        gemm_rows_pair(scratch_base, n0, rows);
      } else {
        perturb_weight(wt, scratch_base, W.data, n0 * K, rows * K, probe_args(weight, probe), stream_);
        gemm_rows(scratch_base, n0, rows);
      }
    }
  }

  if (bias) {
    const int halves = probe.pair ? 2 : 1;
    const int64_t Mh = M / halves;
    for (int h = 0; h < halves; h++) {
      const Probe p = probe.pair ? half_probe(probe, h == 0 ? +1 : -1) : probe;
      const bool perturb_b = p.scale != 0.0f && bias->info.trainable;
      bias_epilogue(bias->w.dtype, out.f32() + h * Mh * N, bias->w.data, Mh, N, perturb_b,
                    probe_args(*bias, p), stream_);
    }
  }
}

}  // namespace smezo
