// The op interface the model is written over. Two implementations: the CPU reference
// (src/cpu/, fp32, plain loops) and the CUDA backend (cuda/). Every op reads its parameters
// through the current Probe, i.e. as w + probe.scale * m(w) * z (src/common/noise_spec.h),
// so perturbations never touch stored weights.
//
// Shapes: activations are (tokens, features) row-major; M = number of token rows.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/tensor.h"
#include "smezo/model_config.h"

namespace smezo {

// One sequence's slice of a packed batch, for attention.
struct AttentionSeq {
  int64_t q_row = 0;   // first query row in q/out
  int64_t q_len = 0;   // number of query rows
  int64_t kv_row = 0;  // first key/value row in k/v
  int64_t kv_len = 0;  // keys/values visible: positions 0..kv_len-1; query i sits at kv_len-q_len+i
};

struct AttentionParams {
  Tensor out;  // (M, n_heads*head_dim)
  Tensor q;    // (M, n_heads*head_dim)
  Tensor k;    // (rows, n_kv_heads*head_dim)
  Tensor v;    // (rows, n_kv_heads*head_dim)
  std::vector<AttentionSeq> seqs;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t sliding_window = 0;  // 0 = full causal attention
};

// What a backend is, for code that must decide by it (the op benchmark's dtypes); name() is
// for messages.
enum BackendKind { BACKEND_CPU, BACKEND_CUDA };

// What a backend allocates besides the tensors asked of it, as the memory estimate counts it
// (model/memory_estimate.h). The CPU's: cpu_memory_plan (src/cpu/linear.cpp); the CUDA's:
// cuda_memory_plan (cuda/cuda_plan.h, host only, so a CPU-only build estimates a GPU too).
struct BackendMemoryPlan {
  // The most scratch one perturbed linear asks: an (n, k) weight in `storage`, m input rows,
  // a single probe or a probe pair (m/2 rows per probe).
  int64_t (*linear_scratch)(int64_t n, int64_t k, int64_t m, DType storage);
  // The streaming load's scratch when the largest tensor has this many elements (0: none).
  int64_t (*load_scratch)(int64_t largest_numel, DType storage);
  int64_t library_bytes;  // the backend's libraries' own buffers (cuBLAS's workspace)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual BackendKind kind() const = 0;
  virtual BackendMemoryPlan memory_plan() const = 0;

  // ---- memory: tensors live until the backend is destroyed
  virtual Tensor alloc(int64_t rows, int64_t cols, DType dtype) = 0;
  virtual void upload(const Tensor& dst, const float* src) = 0;   // host fp32 -> dst dtype
  virtual void download(const Tensor& src, float* dst) = 0;       // src dtype -> host fp32
  virtual int64_t bytes_allocated() const = 0;
  // Streaming load: dst.numel() elements stored as src_dtype at src (typically inside a
  // mapped model file, so any alignment) into dst, converted to dst.dtype on the backend,
  // checking every value as dst stores it (first_non_finite_in's rule, dtype_convert.h).
  // Returns the index of the first value that is NaN/Inf in the file or becomes Inf in
  // dst.dtype (a finite value out of its range: f32 70000 into F16), or -1; dst holds
  // garbage when it is >= 0. No host copy of the tensor is made by the CPU and CUDA backends
  // (CUDA converts on the GPU). This default goes through one fp32 host buffer of the
  // tensor's size (for wrappers such as cpu_bench's).
  virtual int64_t upload_stored(const Tensor& dst, const void* src, DType src_dtype);
  // Memory the backend could still allocate, in bytes (CPU: MemAvailable of /proc/meminfo;
  // CUDA: cudaMemGetInfo's free), or -1 when unknown. Model loading compares it with
  // estimate_model_memory(memory_plan()) before allocating anything (model/memory_estimate.h).
  virtual int64_t free_memory_bytes() const { return -1; }

  // ---- ops (parameters read through the probe; a single probe except in linear)
  // out(M, dim) = table[tokens[m]]
  virtual void embedding(const Tensor& out, const Param& table, const std::vector<int32_t>& tokens,
                         const Probe& probe) = 0;
  // out(M, dim) += table[positions[m] + offset]  (OPT learned positions)
  virtual void add_position_embedding(const Tensor& out, const Param& table,
                                      const std::vector<int32_t>& positions, int64_t offset,
                                      const Probe& probe) = 0;
  // RMSNorm (bias == nullptr) or LayerNorm (kind NORM_LAYER, bias may be set)
  virtual void norm(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
                    NormKind kind, float eps, const Probe& probe) = 0;
  // out(M, N) = in(M, K) · W(N, K)ᵀ (+ bias(1, N)). The one op that takes a probe pair
  // (Probe::pair, M even): rows [0, M/2) read W at +scale, rows [M/2, M) at -scale, from one
  // noise generation; each half equals the single-probe call on it bit for bit on the CPU,
  // and on CUDA within the GEMM tolerance (the same W', summed by another cuBLAS GEMM shape:
  // tests/test_backend_ops.cu, LinearProbePairMatchesSeparateProbes).
  virtual void linear(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
                      const Probe& probe) = 0;
  // rotary embedding in place on x(M, n_heads*head_dim)
  virtual void rope(const Tensor& x, const std::vector<int32_t>& positions, int64_t n_heads,
                    int64_t head_dim, float theta, RopeStyle style) = 0;
  virtual void attention(const AttentionParams& p) = 0;
  // out = silu(gate) * up, all (M, H)
  virtual void swiglu(const Tensor& out, const Tensor& gate, const Tensor& up) = 0;
  virtual void relu(const Tensor& x) = 0;
  // x += y (same shape)
  virtual void add(const Tensor& x, const Tensor& y) = 0;
  // x += alpha * y (same shape), each entry one fused multiply-add: fma(alpha, y, x). LoRA's
  // scaled update (alpha / r) · B A x onto the base layer's output.
  virtual void add_scaled(const Tensor& x, const Tensor& y, float alpha) = 0;
  // out(R, D) = in[rows[r]]
  virtual void gather_rows(const Tensor& out, const Tensor& in, const std::vector<int64_t>& rows) = 0;
  // dst rows [dst_row, dst_row + src.rows) = src
  virtual void copy_rows(const Tensor& dst, int64_t dst_row, const Tensor& src) = 0;

  // ---- optimiser
  // W <- W - coef * m(W) ⊙ z(seed, tensor_id) - decay * m(W) ⊙ W   (coef = lr * g,
  // decay = lr * weight_decay or 0). Per kept entry, in float with explicit FMAs:
  //   w1 = fma(-coef, z, w);  w_new = fma(-decay, w, w1)   (decay 0 gives w1 exactly)
  // The mask is computed from W before the update. Untrainable parameters are left alone.
  virtual void update(Param& p, float coef, float decay, uint64_t seed) = 0;
  // the q-quantile of |W| by exact selection (the k-th smallest, k = floor(q * (n - 1)))
  virtual float abs_quantile(const Param& p, double q) = 0;
};

}  // namespace smezo
