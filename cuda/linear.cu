// The linear layer on the GPU: out(M, N) = in(M, K) · W'(N, K)ᵀ (+ b'(1, N)), fp32 out and
// accumulation, W stored fp32 / fp16 / bf16, w' = keep ? fma(scale, z, w) : w (noise_spec.h).
// Version 1 (this file): materialise W', then cuBLAS. perturb_weight_kernel writes W' to scratch
// (rounded once from the fp32 w'; a pair: W+ and W- from one noise_z8 per group); fp16/bf16 x is
// rounded to W's dtype (cublasGemmEx wants A, B alike); cublasGemmEx (a pair: batch-2 strided), fp32
// with CUBLAS_COMPUTE_32F_PEDANTIC (no TF32); bias_epilogue_kernel adds b' in fp32, as the CPU does.
// LINEAR_FUSED goes to cuda/fused_linear.cu, the bias still added here; the sign noise kind's W' to
// cuda/sign_noise.cu (128 signs per Philox call) unless the fold is due. Tests: tests/test_backend_ops.cu.
// linear_group (the end of this file): q|k|v and gate|up, each W' whole, one cublasGemmBatchedEx per
// distinct N (tests/test_linear_group.cu).
// A packed weight (--weights packed): linear_packed dequantises its row blocks into the W' block
// (cuda/packed_dequant.cu, its performance model there), then the same GEMM; linear_group takes packed
// items one by one (tests/test_packed_cuda.cpp).
// The fold (src/backend/pending_updates.h): a weight's held updates (at most kFoldMaxUpdates) are
// applied by fold_perturb_kernel, block by block, in the pass that forms W': it reads W, applies them
// with update_group8 (update_kernel's bits), writes W back, and forms W' from the stored result. Any
// other read (gemm, fused, more updates) applies them with update() first. Model (predicted, not
// measured), bf16, per weight: the separate update reads and writes W (4 B) besides the W' pair
// pass's 6 B (read W, write W+ and W-); the fold moves 8 B: one read of W less, the same two noise
// generations (z_t, z_t+1). At llama-7b's 6.6e9 linear weights: 13.2 GB less per step, 3.3 ms at
// 4.0 TB/s where the passes are bound by memory (the cheap +-1 noise); with gaussian z each pass is
// bound by its noise (~40 instructions per weight and generation, ~8.5 ms per generation at perfect
// issue on an H200), so update 8.5 + W' 9.9 (its bytes) = 18.4 ms becomes max(17, 13.2) = 17 ms:
// 1.4 ms. Plus one update launch less per linear weight. Launch-bounded to 64 registers (the W'
// kernels take 40-48): 4 blocks of 256 per SM, 16 B of W in flight per thread, 16 KB per SM, where
// 4.0 TB/s over 132 SMs at ~1 us latency wants ~30 KB: a memory-bound fold may fall short of the
// bandwidth the model assumes (the GPU call's --fold-update on/off A/B measures it).
// Memory: scratch holds one row block of W' (<= kCudaWeightChunkBytes, W+ and W- together) plus x in
// 16 bits, in ONE scratch() call (a second could move the first region), as linear_scratch_plan (and
// the memory estimate) count. The handle is bound to our stream; cuBLAS keeps its default workspace unless
// --graphs on sets one (cuda_graphs.cu).
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
#include "packed_dequant.h"
#include "update_rule.cuh"
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

// A weight's held updates for the fold, by value (kernel parameters).
constexpr int kFoldMaxUpdates = 8;
constexpr int kBlock = 256;  // threads per block of every kernel here
struct FoldArgs {
  UpdateTensor tensor;
  int count = 0;  // 0: nothing held
  UpdateRule rules[kFoldMaxUpdates];
};

// The fold: group g of the block of W at w gets the held updates in order (update_kernel's bits; stored
// back when one changes it), then plus (and minus, unless null) as perturb_weight(_pair)_kernel forms
// them from the stored result. W is read once. group_base: the block's first group in the tensor.
// At most 64 registers (4 blocks per SM, no spills; unbounded it took 66-84 and 3 blocks): more
// loads in flight for the bytes it moves.
template <typename T>
__global__ void __launch_bounds__(kBlock, 4) fold_perturb_kernel(T* w, T* plus, T* minus, int64_t n, int64_t group_base, FoldArgs f,
                                    ProbeArgs p) {
  SMEZO_GRID_STRIDE(g, ceil_div(n, 8)) {
    T s[8];
    float v[8], wp[8], wm[8];
    load8_stored(w, 8 * g, n, s, v);  // entries >= n read as 0 and are never stored
    bool changed = false;
    for (int k = 0; k < f.count; ++k) changed = update_group8(f.tensor, f.rules[k], group_base + g, s, v) || changed;
    if (changed) store8_stored(w, 8 * g, n, s);
    perturb_group8(p, group_base + g, v, wp, wm);  // wm always: a pointer chosen at run time would put it on the stack
    store4(plus, 8 * g, n, wp);
    store4(plus, 8 * g + 4, n, wp + 4);
    if (minus == nullptr) continue;
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

// W' of elements [first, first + n) of the tensor at W (first a multiple of 8) into plus[0, n), and minus[0, n)
// for a pair (p: the + half's probe); with held updates (f.count > 0) the fold, which updates W there too.
void form_wprime_block(DType dtype, void* plus, void* minus, void* W, int64_t first, int64_t n, const ProbeArgs& p,
                       const FoldArgs& f, cudaStream_t stream) {
  if (f.count == 0 && p.noise == NOISE_SIGN)  // 128 signs per Philox call (sign_noise.h)
    return launch_sign_perturb(dtype, plus, minus, W, first, n, p, stream);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const unsigned grid = grid_blocks(ceil_div(n, 8), kBlock);
    T* const w = static_cast<T*>(W) + first;
    if (f.count > 0)
      fold_perturb_kernel<T><<<grid, kBlock, 0, stream>>>(w, static_cast<T*>(plus), static_cast<T*>(minus), n,
                                                          first / 8, f, p);
    else if (minus != nullptr)
      perturb_weight_pair_kernel<T><<<grid, kBlock, 0, stream>>>(static_cast<T*>(plus), static_cast<T*>(minus), w,
                                                                 n, first / 8, p);
    else
      perturb_weight_kernel<T><<<grid, kBlock, 0, stream>>>(static_cast<T*>(plus), w, n, first / 8, p);
    CUDA_CHECK_LAUNCH();
  });
}

// The held updates of `held` (at most kFoldMaxUpdates) as the fold kernel takes them; count 0 when none.
FoldArgs fold_args(const PendingUpdates::Entry& held) {
  FoldArgs f;
  if (held.param == nullptr) return f;
  f.tensor = update_tensor(*held.param);
  for (const UpdateArgs& u : held.updates) f.rules[f.count++] = UpdateRule{u.coef, u.decay, u.seed};
  return f;
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

// CudaBackend::linear's operands checked (one line each, naming the weight).
void check_linear_args(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
                       const Probe& probe) {
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
}

// What linear_path_choose and linear_scratch_plan need to know of a call.
LinearCall linear_call(const Tensor& in, const Param& weight, const Probe& probe, LinearPathMode mode) {
  LinearCall call;
  call.rows_per_probe = probe.pair ? in.rows / 2 : in.rows;
  call.n = weight.w.rows;
  call.k = in.cols;
  call.perturbed = probe.scale != 0.0f && weight.info.trainable;
  call.pair = probe.pair;
  call.storage = weight.w.dtype;
  call.mode = mode;
  return call;
}

// out(M, N) += b', each half of a pair under its own probe.
void add_bias(const Tensor& out, const Param& bias, const Probe& probe, cudaStream_t stream) {
  const int halves = probe.pair ? 2 : 1;
  const int64_t Mh = out.rows / halves, N = out.cols;
  for (int h = 0; h < halves; h++) {
    const Probe p = probe.pair ? half_probe(probe, h == 0 ? +1 : -1) : probe;
    const bool perturb_b = p.scale != 0.0f && bias.info.trainable;
    bias_epilogue(bias.w.dtype, out.f32() + h * Mh * N, bias.w.data, Mh, N, perturb_b, probe_args(bias, p), stream);
  }
}

cudaDataType cuda_data_type(DType dtype) {
  switch (dtype) {
    case DTYPE_F32: return CUDA_R_32F;
    case DTYPE_F16: return CUDA_R_16F;
    case DTYPE_BF16: return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

// One batched GEMM's problems (cublasGemmBatchedEx): problem i is out_i = B_i · A_iᵀ as linear's GEMM.
struct BatchedProblems {
  std::vector<const void*> a, b;  // W' (or W) and x of each problem
  std::vector<void*> c;           // its output
  // The pointer table cublasGemmBatchedEx reads: [A_0.. | B_0.. | C_0..].
  std::vector<const void*> table() const {
    std::vector<const void*> t(a);
    t.insert(t.end(), b.begin(), b.end());
    t.insert(t.end(), c.begin(), c.end());
    return t;
  }
};

// The problems of the group's items `members` (one N; plan: linear_group_plan): for each item, each half
// of a pair (its W+ or W-, its rows of x and of out), or all rows under its one W' or W.
BatchedProblems group_problems(const std::vector<LinearItem>& items, const std::vector<size_t>& members,
                               const LinearGroupScratch& plan, char* scratch_base, const void* x, int64_t M,
                               int64_t K, bool pair) {
  BatchedProblems p;
  const int halves = pair ? 2 : 1;
  const int64_t m = M / halves;
  const int64_t x_size = dtype_size(items[0].weight->w.dtype);  // x as the GEMM reads it: W's dtype
  for (size_t i : members)
    for (int h = 0; h < halves; h++) {
      const LinearItem& it = items[i];
      p.a.push_back(plan.copies == 0 ? it.weight->w.data
                                     : scratch_base + plan.offsets[i] + h * plan.w_bytes[i]);
      p.b.push_back(static_cast<const char*>(x) + h * m * K * x_size);
      p.c.push_back(it.out.f32() + h * m * it.out.cols);
    }
  return p;
}

// To column-major cuBLAS the row-major W (N,K), x (M,K), out (M,N) are Wᵀ (K x N, ld K), xᵀ (K x M,
// ld K), outᵀ (N x M, ld N): out = x·Wᵀ is outᵀ = op_T(W) · xᵀ, m = N, n = M, k = K, no copy.
// Weight rows [n0, n0 + rows) give out's columns from out + n0, same ldc = N. A pair (batches = 2):
// batch 0 = W+ times the first row half, batch 1 = W- (stride_w elements further) times the second.
// fp32: PEDANTIC forbids TF32 whatever the math mode (CPU reference up to summation order).
void gemm_weight_rows(cublasHandle_t cublas, DType wt, const void* w_rows, const void* x_gemm, float* out, int64_t M,
                      int64_t N, int64_t K, int64_t n0, int64_t rows, int batches, long long stride_w) {
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType ab = cuda_data_type(wt);
  const cublasComputeType_t compute = wt == DTYPE_F32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
  if (batches == 1) {
    CUBLAS_CHECK(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows), static_cast<int>(M),
                              static_cast<int>(K), &alpha, w_rows, ab, static_cast<int>(K), x_gemm, ab,
                              static_cast<int>(K), &beta, out + n0, CUDA_R_32F, static_cast<int>(N), compute,
                              CUBLAS_GEMM_DEFAULT));
    return;
  }
  const int64_t m = M / batches;
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows), static_cast<int>(m), static_cast<int>(K), &alpha,
      w_rows, ab, static_cast<int>(K), stride_w, x_gemm, ab, static_cast<int>(K), static_cast<long long>(m * K),
      &beta, out + n0, CUDA_R_32F, static_cast<int>(N), static_cast<long long>(m * N), batches, compute,
      CUBLAS_GEMM_DEFAULT));
}

}  // namespace

// A packed weight (--weights packed; frozen, so never perturbed itself): W' dequantised row block by row
// block (packed_dequant.cu) in packed_wprime_dtype_, into the scratch linear_scratch_plan gives a W' path
// of that dtype (the memory estimate counts it), then cuBLAS as the W' path. Its scales under --tune
// scales: a perturbing pair gets W+ and W- from its two halves' scales (two dequantisations, one batch-2
// GEMM); otherwise one W' (the probe's, or the file's) serves every row.
void CudaBackend::linear_packed(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
                                const Probe& probe) {
  const int64_t M = in.rows, K = in.cols, N = weight.w.rows;
  const DType wt = packed_wprime_dtype_;
  const bool pair = probe.pair && packed_scales_perturbed(weight, probe);
  const LinearCall call{pair ? M / 2 : M, N, K, /*perturbed=*/true, pair, wt, LINEAR_MODE_WPRIME};
  const LinearScratch plan = linear_scratch_plan(call, pair ? LINEAR_MATERIALISE_PAIR : LINEAR_MATERIALISE);
  bind_cublas();
  char* base = static_cast<char*>(scratch(static_cast<size_t>(plan.total())));
  const void* x_gemm = in.data;
  if (wt != DTYPE_F32) {
    x_gemm = base + plan.copies * plan.w_bytes;
    convert_input(wt, base + plan.copies * plan.w_bytes, in.f32(), M * K, stream_);
  }
  const Probe single = probe.pair ? Probe{} : probe;  // an unperturbed pair reads the scales as stored
  for (int64_t n0 = 0; n0 < N; n0 += plan.block_rows) {
    const int64_t rows = std::min(plan.block_rows, N - n0);
    launch_dequant_packed(wt, base, weight, nullptr, n0, rows, pair ? half_probe(probe, +1) : single, stream_);
    if (pair) launch_dequant_packed(wt, base + plan.w_bytes, weight, nullptr, n0, rows, half_probe(probe, -1), stream_);
    gemm_weight_rows(cublas_, wt, base, x_gemm, out.f32(), M, N, K, n0, rows, pair ? 2 : 1,
                     static_cast<long long>(plan.w_bytes / dtype_size(wt)));
  }
  if (bias) add_bias(out, *bias, probe, stream_);
}

void CudaBackend::linear(const Tensor& out, const Tensor& in, const Param& weight,
                         const Param* bias, const Probe& probe) {
  check_linear_args(out, in, weight, bias, probe);
  const Tensor& W = weight.w;
  const int64_t M = in.rows, K = in.cols, N = W.rows;
  if (M == 0 || N == 0) return;
  if (W.packed()) return linear_packed(out, in, weight, bias, probe);

  bind_cublas();  // the GEMM must run on our stream

  const DType wt = W.dtype;
  const LinearCall call = linear_call(in, weight, probe, linear_mode_);
  const LinearPath path = linear_path_choose(call);
  const bool wprime = path == LINEAR_MATERIALISE || path == LINEAR_MATERIALISE_PAIR;
  // the fold: the W' pass below applies W's held updates; any other path has update() apply them now
  const FoldArgs fold = fold_args(held_.take_for_linear(*this, W, wprime ? kFoldMaxUpdates : 0));

  // One scratch request: [W' block (W+ | W-) | x in 16 bits] (linear_scratch_plan).
  const LinearScratch plan = linear_scratch_plan(call, path);
  const size_t w_bytes = static_cast<size_t>(plan.w_bytes);
  char* scratch_base =
      plan.total() > 0 ? static_cast<char*>(scratch(static_cast<size_t>(plan.total()))) : nullptr;

  const void* x_gemm = in.data;
  if (wt != DTYPE_F32 && path != LINEAR_FUSED) {  // fused rounds x tile by tile itself
    void* x_scratch = scratch_base + static_cast<size_t>(plan.copies) * w_bytes;
    convert_input(wt, x_scratch, in.f32(), M * K, stream_);
    x_gemm = x_scratch;
  }

  // the GEMM: gemm_weight_rows (W' blocks: W+ and W- w_bytes apart)
  auto gemm_rows = [&](const void* w_rows, int64_t n0, int64_t rows, int batches) {
    gemm_weight_rows(cublas_, wt, w_rows, x_gemm, out.f32(), M, N, K, n0, rows, batches,
                     static_cast<long long>(w_bytes / dtype_size(wt)));
  };
  if (path == LINEAR_FUSED) {
    launch_fused_linear(fused_params(out, in, weight, probe), stream_);
  } else if (!wprime) {
    gemm_rows(W.data, 0, N, 1);  // one W for every row (also a pair on an unperturbed weight)
  } else {
    const bool pair = path == LINEAR_MATERIALISE_PAIR;  // W+ and W- from one noise generation
    const ProbeArgs p = probe_args(weight, pair ? half_probe(probe, +1) : probe);
    for (int64_t n0 = 0; n0 < N; n0 += plan.block_rows) {
      const int64_t rows = std::min(plan.block_rows, N - n0);
      // stream order makes the next block's W' wait for this GEMM's reads
      form_wprime_block(wt, scratch_base, pair ? scratch_base + w_bytes : nullptr, W.data, n0 * K, rows * K, p,
                        fold, stream_);
      gemm_rows(scratch_base, n0, rows, pair ? 2 : 1);
    }
  }
  if (bias) add_bias(out, *bias, probe, stream_);
}

// Linears that read one input (q|k|v, gate|up; the model's groups), as linear() item by item gives
// them, with fewer launches: x converted once, each item's W' formed whole into its own scratch region
// (its own noise key and held updates, as linear's W' pass), then ONE cublasGemmBatchedEx per distinct
// N (q|k|v: one; GQA, where k and v have fewer rows than q: two; gate|up: one), whose problems are
// (item, half of a pair) with separate outputs: no copy of the activations. Biases as linear adds them.
// Groups only what linear_group_plan groups (same path, never fused; all W' within one W' block);
// anything else is linear() per item, blocked as the knob says. Model (predicted): per layer 3
// conversion and 3 GEMM launches fewer (2 GEMMs under GQA), and 3·M·K·(4 + 2) bytes of conversion
// less; smollm2-135m's groups fit the default 64 MiB block, llama-7b's need 384 MiB (ARCHITECTURE.md).
void CudaBackend::linear_group(const std::vector<LinearItem>& items, const Tensor& in, const Probe& probe) {
  std::vector<LinearCall> calls;
  for (const LinearItem& it : items) {
    check_linear_args(it.out, in, *it.weight, it.bias, probe);
    calls.push_back(linear_call(in, *it.weight, probe, linear_mode_));
  }
  const LinearGroupScratch plan = in.rows > 0 ? linear_group_plan(calls) : LinearGroupScratch{};
  const bool any_packed = std::any_of(items.begin(), items.end(), [](const LinearItem& it) { return it.weight->w.packed(); });
  // packed items: linear() item by item, each dequantising its W' blocks (linear_packed)
  if (!plan.grouped || any_packed) return Backend::linear_group(items, in, probe);
  const int64_t M = in.rows, K = in.cols;
  const DType wt = items[0].weight->w.dtype;
  bind_cublas();
  const bool pair = plan.path == LINEAR_MATERIALISE_PAIR;
  std::vector<FoldArgs> folds;  // each item's held updates, applied by its W' pass (else now)
  for (const LinearItem& it : items)
    folds.push_back(fold_args(held_.take_for_linear(*this, it.weight->w, plan.copies > 0 ? kFoldMaxUpdates : 0)));
  char* scratch_base = plan.total() > 0 ? static_cast<char*>(scratch(static_cast<size_t>(plan.total()))) : nullptr;
  const void* x_gemm = in.data;
  if (wt != DTYPE_F32) {
    convert_input(wt, scratch_base + plan.x_offset, in.f32(), M * K, stream_);
    x_gemm = scratch_base + plan.x_offset;
  }
  std::vector<std::vector<size_t>> by_n;  // the items of each distinct N, in order of first appearance
  for (size_t i = 0; i < items.size(); i++) {
    const LinearItem& it = items[i];
    if (plan.copies > 0) {
      const ProbeArgs p = probe_args(*it.weight, pair ? half_probe(probe, +1) : probe);
      form_wprime_block(wt, scratch_base + plan.offsets[i], pair ? scratch_base + plan.offsets[i] + plan.w_bytes[i] : nullptr,
                        it.weight->w.data, 0, it.weight->w.numel(), p, folds[i], stream_);
    }
    auto same_n = [&](const std::vector<size_t>& g) { return items[g[0]].out.cols == it.out.cols; };
    auto g = std::find_if(by_n.begin(), by_n.end(), same_n);
    if (g == by_n.end()) by_n.push_back({i});
    else g->push_back(i);
  }
  const float alpha = 1.0f, beta = 0.0f;
  const cublasComputeType_t compute = wt == DTYPE_F32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
  const cudaDataType ab = cuda_data_type(wt);
  for (const std::vector<size_t>& members : by_n) {
    const BatchedProblems bp = group_problems(items, members, plan, scratch_base, x_gemm, M, K, pair);
    const void* const* t = pointer_table(bp.table());
    const int batch = static_cast<int>(bp.a.size()), N = static_cast<int>(items[members[0]].out.cols);
    // as linear's gemm_rows: outᵀ (N x m, ld N) = op_T(W') (N x K, ld K) · xᵀ (K x m, ld K)
    CUBLAS_CHECK(cublasGemmBatchedEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, N, static_cast<int>(M / (pair ? 2 : 1)),
                                     static_cast<int>(K), &alpha, t, ab, static_cast<int>(K), t + batch, ab,
                                     static_cast<int>(K), &beta, const_cast<void* const*>(t + 2 * batch), CUDA_R_32F,
                                     N, batch, compute, CUBLAS_GEMM_DEFAULT));
  }
  for (const LinearItem& it : items)
    if (it.bias) add_bias(it.out, *it.bias, probe, stream_);
  grouped_linears_++;
}

}  // namespace smezo
