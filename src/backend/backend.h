// The op interface the model is written over, implemented by the CPU reference (src/cpu/) and
// the CUDA backend (cuda/). Every op reads its parameters through the Probe, so perturbations
// never touch stored weights. Activations are (tokens, features) row-major; M = token rows.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/pending_updates.h"  // UpdateArgs
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

// For code that must decide by the backend (the op benchmark's dtypes); name() is for messages.
enum BackendKind { BACKEND_CPU, BACKEND_CUDA };

// What a backend allocates besides its tensors, for model/memory_estimate.h.
struct BackendMemoryPlan {
  // The most scratch one perturbed (n, k) linear over m rows asks, single probe or pair.
  int64_t (*linear_scratch)(int64_t n, int64_t k, int64_t m, DType storage);
  // The streaming load's scratch when the largest tensor has this many elements (0: none).
  int64_t (*load_scratch)(int64_t largest_numel, DType storage);
  int64_t library_bytes;  // the backend's libraries' own buffers (cuBLAS's workspace)
  // The most scratch one linear_group of (ns[i], k) linears over m rows asks beyond its linears' own
  // (null: linear_group is linear() item by item).
  int64_t (*linear_group_scratch)(const std::vector<int64_t>& ns, int64_t k, int64_t m, DType storage) = nullptr;
};

// One linear of a group that reads the same input (q, k, v; gate, up).
struct LinearItem {
  Tensor out;                   // (M, N_i)
  const Param* weight;          // (N_i, K)
  const Param* bias = nullptr;  // (1, N_i), or null
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
  // Streaming load: dst.numel() elements stored as src_dtype at src (any alignment) into dst,
  // converted on the backend and checked as dst stores them (first_non_finite_in). Returns the first
  // bad index (dst then holds garbage) or -1. This default stages through one fp32 host buffer.
  virtual int64_t upload_stored(const Tensor& dst, const void* src, DType src_dtype);
  // --weights packed: a (rows, cols) tensor holding rows * row_bytes bytes of GGUF blocks of packed_type
  // copied from src (formats/packed_weights.h); its ops dequantise the rows they read. This default
  // refuses (a backend that reads packed weights overrides it).
  virtual Tensor alloc_packed(int64_t rows, int64_t cols, uint32_t packed_type, int64_t row_bytes, const void* src);
  // Bytes the backend could still allocate (CPU: MemAvailable; CUDA: cudaMemGetInfo), or -1.
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
  // out(M, N) = in(M, K) · W(N, K)ᵀ (+ bias(1, N)). The one op that takes a probe pair (M even):
  // each half equals the single-probe call bit for bit on the CPU, on CUDA within GEMM tolerance.
  virtual void linear(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
                      const Probe& probe) = 0;
  // linear(item.out, in, *item.weight, item.bias, probe) for each item, in order (this default). The
  // CUDA backend forms the items' W' side by side and multiplies them in one batched GEMM per
  // distinct N where they fit one W' block (cuda/linear.cu): fewer launches, x converted once.
  virtual void linear_group(const std::vector<LinearItem>& items, const Tensor& in, const Probe& probe);
  // rotary embedding in place on x(M, n_heads*head_dim), head_dim = 2 * inv_freq.size(): pair j of
  // row m turns by positions[m] * inv_freq[j] (model/rope_freq.h makes the table)
  virtual void rope(const Tensor& x, const std::vector<int32_t>& positions, int64_t n_heads,
                    const std::vector<float>& inv_freq, RopeStyle style) = 0;
  virtual void attention(const AttentionParams& p) = 0;
  // out = silu(gate) * up, all (M, H)
  virtual void swiglu(const Tensor& out, const Tensor& gate, const Tensor& up) = 0;
  virtual void relu(const Tensor& x) = 0;
  // x += y (same shape)
  virtual void add(const Tensor& x, const Tensor& y) = 0;
  // x += alpha * y, each entry fma(alpha, y, x) (LoRA's (alpha / r) · B A x onto the output)
  virtual void add_scaled(const Tensor& x, const Tensor& y, float alpha) = 0;
  // out(R, D) = in[rows[r]]
  virtual void gather_rows(const Tensor& out, const Tensor& in, const std::vector<int64_t>& rows) = 0;
  // dst rows [dst_row, dst_row + src.rows) = src
  virtual void copy_rows(const Tensor& dst, int64_t dst_row, const Tensor& src) = 0;

  // ---- optimiser
  // W <- W - coef * m(W) ⊙ z(seed, tensor_id) - decay * m(W) ⊙ W (coef = lr * g, decay = lr * wd
  // or 0). Per kept entry: w1 = fma(-coef, z, w); w_new = fma(-decay, w, w1) (decay 0: w1 exactly).
  // The mask is computed from W before the update. Untrainable parameters are left alone.
  virtual void update(Param& p, float coef, float decay, uint64_t seed) = 0;
  // The fold (pending_updates.h): holds p's updates (update_foldable; one step's, in order) until
  // the first linear() that reads p under a perturbing probe applies them inside its W' pass, bit
  // for bit update() of each in turn before the read; any other linear() of p applies them with
  // update() first. Reading a held weight otherwise (download, abs_quantile, upload) throws. This
  // default, for a backend that does not fold, applies them now.
  virtual void defer_updates(Param& p, const std::vector<UpdateArgs>& updates);
  // Applies every held update with update(): before evaluation, generation, a checkpoint, the end.
  virtual void flush_updates() {}
  // the q-quantile of |W| by exact selection (the k-th smallest, k = floor(q * (n - 1)))
  virtual float abs_quantile(const Param& p, double q) = 0;

  // ---- a forward pass as one unit (Model::forward)
  // Runs `pass`, every op of one forward and its logits' read-back. `shape` names what fixes the pass's
  // launches (rows, logit rows, sequences, the probe's kind). The CUDA backend with --graphs on captures
  // it as a CUDA graph and launches that (cuda/cuda_graphs.cu); this default runs it as it comes.
  virtual void forward_pass(const std::string& shape, const std::function<void()>& pass) {
    (void)shape;
    pass();
  }
};

}  // namespace smezo
