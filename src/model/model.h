// The decoder-only transformer, written once over Backend ops. Batches are packed (no padding; each
// sequence restarts at position 0 and attends causally within itself); logits only for rows that ask.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/lora.h"
#include "model/model_stage.h"
#include "model/prefix.h"
#include "model/weight_source.h"

namespace smezo {

struct LayerParams {
  Param attn_norm;       // (1, dim)
  Param attn_norm_bias;  // (1, dim), LayerNorm only
  Param wq;              // (n_heads*head_dim, dim)
  Param wk;              // (n_kv_heads*head_dim, dim)
  Param wv;              // (n_kv_heads*head_dim, dim)
  Param wo;              // (dim, n_heads*head_dim)
  Param bq, bk, bv;      // (1, out_features), qkv_bias only
  Param bo;              // (1, dim), o_bias only
  Param q_norm, k_norm;  // (1, head_dim), qk_norm only: per-head RMSNorm gains
  Param ffn_norm;        // (1, dim)
  Param ffn_norm_bias;   // (1, dim), LayerNorm only
  Param w_gate;          // (hidden, dim), SwiGLU only
  Param w_up;            // (hidden, dim): SwiGLU up_proj, or OPT fc1
  Param w_down;          // (dim, hidden): SwiGLU down_proj, or OPT fc2
  Param b_gate, b_up;    // (1, hidden), mlp_bias only
  Param b_down;          // (1, dim), mlp_bias only
};

struct ModelParams {
  Param tok_embedding;     // (vocab, dim)
  Param pos_embedding;     // (max_seq_len + offset, dim), OPT only
  std::vector<LayerParams> layers;
  Param final_norm;        // (1, dim)
  Param final_norm_bias;   // (1, dim), LayerNorm only
  Param lm_head;           // (vocab, dim); absent when tied to tok_embedding
};

struct ForwardBatch {
  std::vector<int32_t> tokens;      // packed tokens of all sequences
  std::vector<int64_t> seq_lens;    // length of each sequence; they sum to tokens.size()
  std::vector<int64_t> logit_rows;  // rows of `tokens` whose next-token logits are wanted
};

// New tokens of one sequence of the key/value cache (Model::forward_cached).
struct CachedChunk {
  int64_t slot = 0;             // which of the cache's sequences
  int64_t pos = 0;              // position of tokens[0], counted after a prefix
  std::vector<int32_t> tokens;  // at positions [pos, pos + tokens.size())
};

class Model {
 public:
  // Loads and checks `stage`'s tensors (whole by default) as `storage`; max_* size the workspace.
  Model(const WeightSource& source, Backend& backend, DType storage, int64_t max_tokens,
        int64_t max_logit_rows, const ModelStage& stage = ModelStage{});

  const ModelConfig& config() const { return config_; }
  Backend& backend() { return backend_; }
  // The dtype the weights were loaded in (the run's storage dtype). A packed weight keeps its GGUF
  // blocks, and its Tensor says F32 whatever this is: ask here, not a weight's tensor.
  DType storage_dtype() const { return storage_; }

  // Host logits (batch.logit_rows.size(), vocab); a probe pair: (2 * logit_rows, vocab), + rows first.
  void forward(const ForwardBatch& batch, const Probe& probe, std::vector<float>* logits);
  // One pipeline stage's share of forward(): the first embeds batch.tokens, the others start from
  // hidden_in (tokens, dim) fp32 (a pair: + copy, then - copy); *out gets the hidden states, or the
  // logits at the last stage. Chained stages equal forward() bit for bit.
  void forward_stage(const ForwardBatch& batch, const Probe& probe, const std::vector<float>& hidden_in,
                     std::vector<float>* out);
  const ModelStage& stage() const { return stage_; }
  // What one batch may hold under `probe` (half the workspace for a pair).
  int64_t batch_tokens_capacity(const Probe& probe) const { return probe.pair ? max_tokens_ / 2 : max_tokens_; }
  int64_t batch_logit_rows_capacity(const Probe& probe) const {
    return probe.pair ? max_logit_rows_ / 2 : max_logit_rows_;
  }

  // A key/value cache for `slots` sequences of max_len rows (after a prefix's P); size it once (never freed).
  void enable_kv_cache(int64_t max_len, int64_t slots = 1);
  int64_t kv_cache_slots() const { return cache_slots_; }
  // Slot 0, no probe: feeds tokens at [pos, pos + tokens.size()), logits of the last one.
  void forward_cached(const std::vector<int32_t>& tokens, int64_t pos, std::vector<float>* logits);
  // Several slots' chunks in one run under a single probe: logits (chunks.size(), vocab) of each last
  // token. A chunk at pos 0 restarts its slot; later ones must use the probe of its cached keys/values.
  void forward_cached(const std::vector<CachedChunk>& chunks, const Probe& probe, std::vector<float>* logits);

  // --tune lora (lora.h): A and B join params() after the base tensors. LLaMA, whole model, once.
  void add_lora(const LoraOptions& options, uint64_t seed);
  bool has_lora() const { return !lora_.empty(); }
  const LoraOptions& lora_options() const { return lora_options_; }

  // --tune prefix (prefix.h): the P rows join params() after the base tensors; sequences sit at P.. and
  // each must ask for a logit row. Whole model, no LoRA, once; workspace >= P tokens.
  void add_prefix(const PrefixOptions& options, uint64_t seed);
  bool has_prefix() const { return !prefix_.empty(); }
  const PrefixOptions& prefix_options() const { return prefix_options_; }
  const std::vector<PrefixLayer>& prefix_layers() const { return prefix_; }
  // the position of a sequence's first token: P, or 0
  int64_t prefix_tokens() const { return prefix_.empty() ? 0 : prefix_options_.tokens; }

  // --tune scales: every packed weight (--weights packed) gets its f32 master block scales as a trainable
  // Param (tensor.h Param::scales), from the file's f16 ones, joining params() after the base tensors in
  // canonical order. with_m: the types with a second scale (Q4_1/Q5_1 m, K-quant dmin) tune it too.
  // Throws when no weight is packed. Whole model, no LoRA or prefix, once.
  void add_scales(bool with_m);
  bool has_scales() const { return !scales_.empty(); }
  bool scales_with_m() const { return scales_with_m_; }
  // Whether p is one of the master-scale Params of add_scales.
  bool is_scales(const Param* p) const;
  // The file's name of a packed weight (GGUF: blk.0.attn_q.weight), by its info.name; throws for another.
  const std::string& packed_file_name(const std::string& name) const;

  // All parameters in canonical order (tensor_id = index), absent ones skipped.
  const std::vector<Param*>& params() { return param_list_; }
  const ModelParams& weights() const { return weights_; }
  int64_t parameter_count() const;
  int64_t max_tokens() const { return max_tokens_; }
  int64_t max_logit_rows() const { return max_logit_rows_; }

 private:
  struct Workspace {
    // (max_tokens, ...); xn also takes o_proj/down_proj outputs. memory_estimate.cpp counts these.
    Tensor x, xn, q, k, v, att;
    Tensor h_gate, h_up;              // (max_tokens, hidden)
    Tensor last, logits;              // (max_logit_rows, dim), (max_logit_rows, vocab)
    // --tune lora only, by add_lora (memory_estimate counts these under adapters)
    Tensor lora_mid;                  // (max_tokens, rank): A x
    Tensor lora_out;                  // (max_tokens, widest adapted output): B (A x)
    // --tune prefix only, by add_prefix (kv = n_kv_heads*head_dim)
    Tensor prefix_src_k, prefix_src_v;  // (max_tokens + 2P, kv): the tokens', then the probed prefix's
    // (max_tokens + P x min(max_tokens, max_logit_rows), kv): each sequence's P prefix rows, then its own
    Tensor prefix_k, prefix_v;
  };
  // Layer l's attention under --tune prefix: probed prefix rows after the tokens' keys/values.
  void prefix_attention(int64_t l, const Probe& probe, int64_t M, const std::vector<int64_t>& kv_index,
                        AttentionParams* ap);
  // the prefix, read through the probe, as the first P cache rows of `slot`
  void prefix_into_cache(int64_t slot, const Probe& probe);
  // kv_index (rows of ws_.prefix_src_* per gathered row) and the sequences' gathered spans
  void prefix_layout(const std::vector<AttentionSeq>& seqs, const Probe& probe, int64_t M,
                     std::vector<int64_t>* kv_index, std::vector<AttentionSeq>* prefixed) const;
  // out += scale · B (A in) for layer l's adapter of `role`, when it has one.
  void add_lora_delta(int64_t l, ParamRole role, const Tensor& out, const Tensor& in, const Probe& probe);
  void load(const WeightSource& source, DType storage);
  // A layer's q (M, n_heads*head_dim) and k (M, n_kv_heads*head_dim) in place: q/k norms, then RoPE.
  void position_qk(const LayerParams& L, const Tensor& q, const Tensor& k, const std::vector<int32_t>& positions,
                   const Probe& probe);
  void embed(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions, const Probe& probe,
             const float* hidden_in, const Tensor& x);
  // This stage's layers into ws_.x (hidden_in null: embed the tokens); cached: key/values in the cache.
  void run(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
           const std::vector<AttentionSeq>& seqs, bool cached, const Probe& probe,
           const float* hidden_in = nullptr);
  // positions and attention spans of a packed batch (checked)
  void pack_positions(const ForwardBatch& batch, std::vector<int32_t>* positions, std::vector<AttentionSeq>* seqs) const;
  // run()'s input: under a probe pair, the batch twice side by side.
  struct PackedRun {
    std::vector<int32_t> tokens, positions;
    std::vector<AttentionSeq> seqs;
    std::vector<int64_t> logit_rows;
  };
  PackedRun pack(const ForwardBatch& batch, const Probe& probe) const;
  void compute_logits(const std::vector<int64_t>& rows, const Probe& probe, std::vector<float>* out);

  ModelConfig config_;
  ModelStage stage_;
  Backend& backend_;
  DType storage_;
  ModelParams weights_;
  std::vector<Param*> param_list_;
  std::vector<LoraLayer> lora_;  // per layer; empty unless add_lora
  LoraOptions lora_options_;
  std::vector<PrefixLayer> prefix_;  // per layer; empty unless add_prefix
  PrefixOptions prefix_options_;
  std::deque<Param> scales_;  // --tune scales: one per packed weight; a deque: params() points into it
  bool scales_with_m_ = false;
  std::map<std::string, std::string> packed_file_names_;  // packed weights: info.name -> the file's name
  int64_t max_tokens_;
  int64_t max_logit_rows_;
  Workspace ws_;
  // per layer (slots x (P + max_len), n_kv_heads*head_dim); slot s from row s x cache_stride_
  std::vector<Tensor> cache_k_, cache_v_;
  int64_t cache_slots_ = 0;
  int64_t cache_stride_ = 0;  // rows per slot: P + max_len
  std::vector<float> rope_inv_freq_;  // (head_dim/2) RoPE's per-pair inverse frequencies (rope_freq.h)
};

// Hugging Face names and shapes that the family's tensor table lists for the config, in canonical order.
struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
  bool is_linear;
  ParamRole role;
  bool is_bias;
};
std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config);

}  // namespace smezo
