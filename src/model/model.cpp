// Loading and the forward pass of the decoder-only transformer over Backend ops.
#include "model/model.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "common/check.h"
#include "common/stopwatch.h"
#include "formats/packed_weights.h"
#include "model/model_check.h"
#include "model/model_params.h"
#include "model/model_size.h"
#include "model/rope_freq.h"

namespace smezo {

namespace {

const char* non_finite_name(float v) {
  if (std::isnan(v)) return "NaN";
  return v > 0 ? "+Inf" : "-Inf";
}

// fn(first_row, rows, single_probe) over all M rows, or once per half of a probe pair.
template <typename Fn>
void per_half(const Probe& probe, int64_t M, Fn fn) {
  if (!probe.pair) {
    fn(int64_t{0}, M, probe);
    return;
  }
  fn(int64_t{0}, M / 2, half_probe(probe, +1));
  fn(M / 2, M / 2, half_probe(probe, -1));
}

}  // namespace

Model::Model(const WeightSource& source, Backend& backend, DType storage, int64_t max_tokens,
             int64_t max_logit_rows, const ModelStage& stage)
    : config_(source.config),
      stage_(stage),
      backend_(backend),
      storage_(storage),
      max_tokens_(max_tokens),
      max_logit_rows_(max_logit_rows) {
  SMEZO_REQUIRE(max_tokens > 0 && max_logit_rows > 0, "model workspace needs positive sizes");
  check_weight_source(source);  // config ranges, every tensor's presence/shape: nothing allocated yet
  const ModelConfig& c = config_;
  if (stage_.end_layer < 0) stage_.end_layer = c.n_layers;
  SMEZO_REQUIRE(stage_.count >= 1 && stage_.index >= 0 && stage_.index < stage_.count && stage_.first_layer >= 0 &&
                    stage_.first_layer < stage_.end_layer && stage_.end_layer <= c.n_layers &&
                    (!stage_.first() || stage_.first_layer == 0) && (!stage_.last() || stage_.end_layer == c.n_layers),
                "pipeline stage %d of %d with layers [%lld, %lld) does not fit a model of %lld layers", stage_.index,
                stage_.count, (long long)stage_.first_layer, (long long)stage_.end_layer, (long long)c.n_layers);
  ModelSize size;
  model_size_of(c, &size);
  if (c.position == POSITION_ROPE) rope_inv_freq_ = rope_inverse_frequencies(c);
  try {
    load(source, storage);
    const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
    ws_.x = backend_.alloc(max_tokens, c.dim, DTYPE_F32);
    ws_.xn = backend_.alloc(max_tokens, c.dim, DTYPE_F32);
    ws_.q = backend_.alloc(max_tokens, q_dim, DTYPE_F32);
    ws_.att = backend_.alloc(max_tokens, q_dim, DTYPE_F32);
    ws_.k = backend_.alloc(max_tokens, kv_dim, DTYPE_F32);
    ws_.v = backend_.alloc(max_tokens, kv_dim, DTYPE_F32);
    ws_.h_gate = backend_.alloc(max_tokens, c.mlp_kind == MLP_SWIGLU ? c.hidden_dim : 0, DTYPE_F32);
    ws_.h_up = backend_.alloc(max_tokens, c.hidden_dim, DTYPE_F32);
    const int64_t logit_rows = stage_.last() ? max_logit_rows : 0;  // only the last stage has logits
    ws_.last = backend_.alloc(logit_rows, c.dim, DTYPE_F32);
    ws_.logits = backend_.alloc(logit_rows, c.vocab_size, DTYPE_F32);
  } catch (const std::bad_alloc&) {
    throw_error("model %s: out of memory on the %s backend: the model needs %s for its %s "
                "parameters as %s, plus its workspace for %lld tokens (%s allocated when it ran "
                "out); ---> HINT: use a smaller model, a smaller --batch/--max-len, or a "
                "16-bit --dtype on cuda", source.path.c_str(), backend_.name(),
                format_bytes(model_weight_bytes(size, storage)).c_str(),
                format_count(size.parameters).c_str(), dtype_name(storage),
                static_cast<long long>(max_tokens), format_bytes(backend_.bytes_allocated()).c_str());
  }
}

namespace {

// "loading weights: 120/291 tensors, ..." on stderr after 1 s: in place on a terminal, else every 5 s.
class LoadProgress {
 public:
  LoadProgress(int64_t tensors, int64_t bytes)
      : tensors_(tensors), bytes_(bytes), start_(SteadyClock::now()), tty_(isatty(2) != 0) {}
  void tensor_done(int64_t bytes) {
    done_tensors_++;
    done_bytes_ += bytes;
    const double t = seconds();
    if (t < 1.0 || t - last_print_ < (tty_ ? 0.25 : 5.0)) return;
    last_print_ = t;
    print(tty_ ? "\r" : "", tty_ ? "" : "\n");
  }
  void finish() {
    if (last_print_ < 0) return;
    print(tty_ ? "\r" : "", "\n");
  }

 private:
  double seconds() const { return seconds_since(start_); }
  void print(const char* pre, const char* post) {
    const double t = seconds();
    std::fprintf(stderr, "%sloading weights: %lld/%lld tensors, %s/%s, %.2f GB/s in %.1f s%s", pre,
                 static_cast<long long>(done_tensors_), static_cast<long long>(tensors_),
                 format_bytes(done_bytes_).c_str(), format_bytes(bytes_).c_str(),
                 t > 0 ? done_bytes_ / t / 1e9 : 0.0, t, post);
    std::fflush(stderr);
  }
  int64_t tensors_, bytes_, done_tensors_ = 0, done_bytes_ = 0;
  SteadyClock::time_point start_;
  bool tty_;
  double last_print_ = -1.0;
};

// Throws for the value at index `bad` of tensor v as loaded into `storage`: a NaN/Inf, or out of range.
[[noreturn]] void throw_bad_value(const HostTensorView& v, int64_t bad, float value, int64_t cols, DType storage) {
  if (std::isfinite(value))  // finite in the file, Inf in the storage dtype
    throw_error("tensor %s in %s holds %g at index %lld (row %lld, column %lld), out of range for "
                "the %s storage dtype (largest finite value %g) ---> HINT: load it with --dtype %s",
                v.name.c_str(), v.file.c_str(), value, static_cast<long long>(bad),
                static_cast<long long>(bad / cols), static_cast<long long>(bad % cols), dtype_name(storage),
                dtype_max_finite(storage), storage == DTYPE_F16 ? "bf16 or f32" : "f32");
  throw_error("tensor %s in %s holds %s at index %lld (row %lld, column %lld); the checkpoint is "
              "corrupt (or was saved from a diverged run)", v.name.c_str(), v.file.c_str(),
              non_finite_name(value), static_cast<long long>(bad),
              static_cast<long long>(bad / cols), static_cast<long long>(bad % cols));
}

// p's tensor from the file's values, converted to the storage dtype and checked. A quantised one is
// dequantised about 4 MB of fp32 at a time into *decoded and uploaded row chunk by row chunk: no
// whole-tensor fp32 copy on the host (SmolLM2's Q8_0 embedding would be 113 MB).
void upload_checked(Backend& backend, const HostTensorView& v, int64_t rows, int64_t cols, DType storage, Param* param,
                    std::vector<float>* decoded) {
  Param& p = *param;
  p.w = backend.alloc(rows, cols, storage);
  if (!v.decode) {
    const int64_t bad = backend.upload_stored(p.w, v.data, v.dtype);
    if (bad < 0) return;
    float value;
    convert_to_f32(static_cast<const char*>(v.data) + bad * dtype_size(v.dtype), v.dtype, 1, &value);
    throw_bad_value(v, bad, value, cols, storage);
  }
  const int64_t chunk_rows = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(cols, 1));
  const int64_t row_bytes = v.nbytes / std::max<int64_t>(rows, 1);  // whole blocks a row (the GGUF reader)
  decoded->resize(static_cast<size_t>(std::min(chunk_rows, rows) * cols));
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const int64_t n = std::min(chunk_rows, rows - r0);
    v.decode(static_cast<const char*>(v.data) + r0 * row_bytes, n * cols, decoded->data());
    const int64_t bad = backend.upload_stored(tensor_rows(p.w, r0, n), decoded->data(), DTYPE_F32);
    if (bad >= 0) throw_bad_value(v, r0 * cols + bad, (*decoded)[static_cast<size_t>(bad)], cols, storage);
  }
}

// --weights packed: p's tensor as the file's blocks (formats/packed_weights.h), every value checked finite.
void upload_packed(Backend& backend, const HostTensorView& v, int64_t rows, int64_t cols, Param* p) {
  const int64_t row_bytes = packed_row_bytes(v.packed_type, cols, "tensor " + v.name + " in " + v.file);
  const Tensor in_file{const_cast<void*>(v.data), DTYPE_F32, rows, cols, v.packed_type, row_bytes};
  const int64_t bad = first_non_finite_packed(in_file);
  if (bad >= 0) {
    const int64_t block = packed_block_size(in_file);
    std::vector<float> values(static_cast<size_t>(block));
    dequantize_packed(in_file, bad / block * block, block, values.data());
    throw_error("tensor %s in %s holds %s at index %lld (row %lld, column %lld); the checkpoint is corrupt",
                v.name.c_str(), v.file.c_str(), non_finite_name(values[bad % block]), (long long)bad,
                (long long)(bad / cols), (long long)(bad % cols));
  }
  p->w = backend.alloc_packed(rows, cols, v.packed_type, row_bytes, v.data);
}

}  // namespace

// One tensor at a time, file dtype straight to the backend (converted, checked), then its pages dropped.
void Model::load(const WeightSource& source, DType storage) {
  std::vector<ParamSlot> slots;
  std::vector<uint32_t> tensor_ids;  // canonical: the noise of a stage's tensor is the whole model's
  uint32_t canonical_id = 0;
  for (ParamSlot& slot : list_param_slots(config_, weights_)) {
    if (stage_holds(stage_, config_, slot)) {
      slots.push_back(slot);
      tensor_ids.push_back(canonical_id);
    }
    canonical_id++;
  }
  int64_t total_bytes = 0;
  auto stored_bytes = [](const HostTensorView& v) {
    return v.nbytes > 0 || v.decode ? v.nbytes : v.numel() * dtype_size(v.dtype);
  };
  for (const ParamSlot& slot : slots) total_bytes += stored_bytes(*source.find(slot.name));
  LoadProgress progress(static_cast<int64_t>(slots.size()), total_bytes);
  std::vector<float> decoded;  // quantised tensors only
  for (size_t i = 0; i < slots.size(); i++) {
    ParamSlot& slot = slots[i];
    const HostTensorView* view = source.find(slot.name);  // present and shaped: checked
    const int64_t rows = slot.shape.size() == 2 ? slot.shape[0] : 1;
    const int64_t cols = slot.shape.back();
    Param& p = *slot.param;
    if (source.keep_packed && view->packed_type != 0 && slot.shape.size() == 2) {
      upload_packed(backend_, *view, rows, cols, &p);
      packed_file_names_[slot.name] = view->file_name.empty() ? slot.name : view->file_name;
    } else {
      upload_checked(backend_, *view, rows, cols, storage, &p, &decoded);
    }
    view->release_pages();
    progress.tensor_done(stored_bytes(*view));
    p.info.name = slot.name;
    p.info.tensor_id = tensor_ids[i];
    p.info.is_linear = slot.is_linear;
    p.info.role = slot.role;
    p.info.is_bias = slot.is_bias;
    param_list_.push_back(&p);
  }
  progress.finish();
}

int64_t Model::parameter_count() const {
  int64_t n = 0;
  for (const Param* p : param_list_) n += p->w.numel();
  return n;
}

void Model::run(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
                const std::vector<AttentionSeq>& seqs, bool cached, const Probe& probe,
                const float* hidden_in) {
  const ModelConfig& c = config_;
  const int64_t M = static_cast<int64_t>(tokens.size());
  SMEZO_REQUIRE(M > 0 && M <= max_tokens_, "batch of %lld tokens does not fit the workspace (%lld)",
                (long long)M, (long long)max_tokens_);
  SMEZO_REQUIRE(!probe.pair || (M % 2 == 0 && !cached), "a probe pair needs two equal packed halves");
  auto rows = [M](Tensor t) {
    t.rows = M;
    return t;
  };
  // --tune prefix: the keys/values go where the prefix rows follow them (prefix_attention)
  const bool prefixed = !prefix_.empty();
  Tensor x = rows(ws_.x), xn = rows(ws_.xn), q = rows(ws_.q), att = rows(ws_.att),
         k = rows(prefixed ? ws_.prefix_src_k : ws_.k), v = rows(prefixed ? ws_.prefix_src_v : ws_.v),
         h_gate = rows(ws_.h_gate), h_up = rows(ws_.h_up);
  std::vector<int64_t> prefix_kv_index;  // the same for every layer
  std::vector<AttentionSeq> prefix_seqs;
  if (prefixed && !cached) prefix_layout(seqs, probe, M, &prefix_kv_index, &prefix_seqs);
  auto bias = [](const Param& p) { return p.w.data ? &p : nullptr; };

  // Embeddings and norms run per half of a pair; linears take it whole (noise made once).
  embed(tokens, positions, probe, hidden_in, x);
  auto norm = [&](const Param& w, const Param* b) {
    per_half(probe, M, [&](int64_t r0, int64_t n, const Probe& p) {
      backend_.norm(tensor_rows(xn, r0, n), tensor_rows(x, r0, n), w, b, c.norm_kind, c.norm_eps, p);
    });
  };

  for (int64_t l = stage_.first_layer; l < stage_.end_layer; l++) {
    LayerParams& L = weights_.layers[l];
    // a layer's linear, plus its LoRA adapter's scaled B (A x) under --tune lora
    auto linear = [&](const Tensor& out, const Tensor& in, const Param& w, const Param* b, ParamRole role) {
      backend_.linear(out, in, w, b, probe);
      if (!lora_.empty()) add_lora_delta(l, role, out, in, probe);
    };
    // linears that read one input, as one group (one batched GEMM on CUDA), then their adapters
    auto linear_group = [&](const Tensor& in, const std::vector<LinearItem>& items,
                            const std::vector<ParamRole>& roles) {
      backend_.linear_group(items, in, probe);
      if (!lora_.empty())
        for (size_t i = 0; i < items.size(); i++) add_lora_delta(l, roles[i], items[i].out, in, probe);
    };
    // attention block
    norm(L.attn_norm, bias(L.attn_norm_bias));
    linear_group(xn, {{q, &L.wq, bias(L.bq)}, {k, &L.wk, bias(L.bk)}, {v, &L.wv, bias(L.bv)}},
                 {ROLE_ATTN_Q, ROLE_ATTN_K, ROLE_ATTN_V});
    position_qk(L, q, k, positions, probe);
    AttentionParams ap{att, q, k, v, seqs, c.n_heads, c.n_kv_heads, c.head_dim, c.sliding_window};
    if (cached) {  // a prefix: the first P rows of each slot, written by forward_cached
      for (const AttentionSeq& s : seqs) {
        backend_.copy_rows(cache_k_[l], s.kv_row + s.kv_len - s.q_len, tensor_rows(k, s.q_row, s.q_len));
        backend_.copy_rows(cache_v_[l], s.kv_row + s.kv_len - s.q_len, tensor_rows(v, s.q_row, s.q_len));
      }
      ap.k = cache_k_[l];
      ap.v = cache_v_[l];
    } else if (prefixed) {
      prefix_attention(l, probe, M, prefix_kv_index, &ap);
      ap.seqs = prefix_seqs;
    }
    backend_.attention(ap);
    linear(xn, att, L.wo, bias(L.bo), ROLE_ATTN_O);  // xn is free again: it holds the output
    backend_.add(x, xn);
    // MLP block
    norm(L.ffn_norm, bias(L.ffn_norm_bias));
    if (c.mlp_kind == MLP_SWIGLU) {
      linear_group(xn, {{h_gate, &L.w_gate, bias(L.b_gate)}, {h_up, &L.w_up, bias(L.b_up)}},
                   {ROLE_MLP_GATE, ROLE_MLP_UP});
      backend_.swiglu(h_up, h_gate, h_up);
    } else {
      linear(h_up, xn, L.w_up, bias(L.b_up), ROLE_MLP_UP);
      backend_.relu(h_up);
    }
    linear(xn, h_up, L.w_down, bias(L.b_down), ROLE_MLP_DOWN);
    backend_.add(x, xn);
  }
}

void Model::position_qk(const LayerParams& L, const Tensor& q, const Tensor& k, const std::vector<int32_t>& positions,
                        const Probe& probe) {
  const ModelConfig& c = config_;
  // q/k norms: RMSNorm per head, q as (M * n_heads, head_dim) and k as (M * n_kv_heads, head_dim)
  auto head_norm = [&](const Tensor& t, int64_t heads, const Param& gain) {
    const Tensor view{t.data, t.dtype, t.rows * heads, c.head_dim};
    per_half(probe, view.rows, [&](int64_t r0, int64_t n, const Probe& p) {
      const Tensor half = tensor_rows(view, r0, n);
      backend_.norm(half, half, gain, nullptr, NORM_RMS, c.norm_eps, p);
    });
  };
  if (c.qk_norm) {
    head_norm(q, c.n_heads, L.q_norm);
    head_norm(k, c.n_kv_heads, L.k_norm);
  }
  if (c.position == POSITION_ROPE) {
    backend_.rope(q, positions, c.n_heads, rope_inv_freq_, c.rope_style);
    backend_.rope(k, positions, c.n_kv_heads, rope_inv_freq_, c.rope_style);
  }
}

void Model::embed(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions, const Probe& probe,
                  const float* hidden_in, const Tensor& x) {
  SMEZO_REQUIRE((hidden_in == nullptr) == stage_.first(), "pipeline stage %d of %d: %s", stage_.index, stage_.count,
                stage_.first() ? "the first stage embeds the tokens itself" : "needs the previous stage's hidden states");
  if (hidden_in != nullptr) return backend_.upload(x, hidden_in);
  per_half(probe, x.rows, [&](int64_t r0, int64_t n, const Probe& p) {
    const std::vector<int32_t> tok(tokens.begin() + r0, tokens.begin() + r0 + n);
    const std::vector<int32_t> pos(positions.begin() + r0, positions.begin() + r0 + n);
    backend_.embedding(tensor_rows(x, r0, n), weights_.tok_embedding, probe.pair ? tok : tokens, p);
    if (weights_.pos_embedding.w.data)
      backend_.add_position_embedding(tensor_rows(x, r0, n), weights_.pos_embedding, probe.pair ? pos : positions,
                                      config_.learned_pos_offset, p);
  });
}

void Model::add_lora_delta(int64_t l, ParamRole role, const Tensor& out, const Tensor& in, const Probe& probe) {
  const LoraPair& adapter = lora_[static_cast<size_t>(l)].of(role);
  if (!adapter.present()) return;
  Tensor mid = ws_.lora_mid, delta = ws_.lora_out;
  mid.rows = in.rows;
  delta.rows = out.rows;  // a (rows, out.cols) view of the (max_tokens, widest) buffer
  delta.cols = out.cols;
  // A and B are read through the probe like any tuned weight (a pair: both halves at once)
  backend_.linear(mid, in, adapter.a, nullptr, probe);
  backend_.linear(delta, mid, adapter.b, nullptr, probe);
  backend_.add_scaled(out, delta, lora_options_.scale());
}

void Model::compute_logits(const std::vector<int64_t>& rows, const Probe& probe,
                           std::vector<float>* out) {
  const ModelConfig& c = config_;
  const int64_t R = static_cast<int64_t>(rows.size());
  SMEZO_REQUIRE(stage_.last(), "pipeline stage %d of %d has no LM head: logits come from the last stage",
                stage_.index, stage_.count);
  SMEZO_REQUIRE(R > 0 && R <= max_logit_rows_, "%lld logit rows asked, workspace holds %lld",
                (long long)R, (long long)max_logit_rows_);
  SMEZO_REQUIRE(!probe.pair || R % 2 == 0, "a probe pair needs two equal sets of logit rows");
  Tensor last = ws_.last, logits = ws_.logits;
  last.rows = R;
  logits.rows = R;
  backend_.gather_rows(last, ws_.x, rows);
  per_half(probe, R, [&](int64_t r0, int64_t n, const Probe& p) {
    const Tensor half = tensor_rows(last, r0, n);
    backend_.norm(half, half, weights_.final_norm,
                  weights_.final_norm_bias.w.data ? &weights_.final_norm_bias : nullptr, c.norm_kind,
                  c.norm_eps, p);
  });
  const Param& head = c.tied_lm_head ? weights_.tok_embedding : weights_.lm_head;
  backend_.linear(logits, last, head, nullptr, probe);
  out->resize(static_cast<size_t>(R * c.vocab_size));
  backend_.download(logits, out->data());
}

void Model::pack_positions(const ForwardBatch& batch, std::vector<int32_t>* positions,
                           std::vector<AttentionSeq>* seqs) const {
  int64_t row = 0;
  const int64_t first = prefix_tokens();  // a prefix stands at positions 0..P-1
  for (int64_t len : batch.seq_lens) {
    SMEZO_REQUIRE(len > 0 && len <= config_.max_seq_len - first,
                  "sequence of %lld tokens: the model supports 1..%lld%s", (long long)len,
                  (long long)(config_.max_seq_len - first), first > 0 ? " after its prefix" : "");
    seqs->push_back(AttentionSeq{row, len, row, len});
    for (int64_t i = 0; i < len; i++) positions->push_back(static_cast<int32_t>(first + i));
    row += len;
  }
  SMEZO_REQUIRE(row == (int64_t)batch.tokens.size(), "batch: sequence lengths sum to %lld, %zu tokens",
                (long long)row, batch.tokens.size());
}

Model::PackedRun Model::pack(const ForwardBatch& batch, const Probe& probe) const {
  PackedRun r;
  pack_positions(batch, &r.positions, &r.seqs);
  r.tokens = batch.tokens;
  r.logit_rows = batch.logit_rows;
  if (!probe.pair) return r;
  // The pair: the batch twice, side by side; the second copy's sequences start `row` later.
  const int64_t row = static_cast<int64_t>(batch.tokens.size());
  r.tokens.insert(r.tokens.end(), batch.tokens.begin(), batch.tokens.end());
  const std::vector<int32_t> positions1 = r.positions;
  r.positions.insert(r.positions.end(), positions1.begin(), positions1.end());
  const size_t n_seqs = r.seqs.size();
  for (size_t i = 0; i < n_seqs; i++) {
    AttentionSeq s = r.seqs[i];
    s.q_row += row;
    s.kv_row += row;
    r.seqs.push_back(s);
  }
  for (int64_t lr : batch.logit_rows) r.logit_rows.push_back(lr + row);
  return r;
}

void Model::forward_stage(const ForwardBatch& batch, const Probe& probe, const std::vector<float>& hidden_in,
                          std::vector<float>* out) {
  const PackedRun r = pack(batch, probe);
  const int64_t M = static_cast<int64_t>(r.tokens.size());
  if (!stage_.first())
    SMEZO_REQUIRE(static_cast<int64_t>(hidden_in.size()) == M * config_.dim,
                  "pipeline stage %d of %d: %zu hidden values in for %lld tokens of width %lld", stage_.index,
                  stage_.count, hidden_in.size(), (long long)M, (long long)config_.dim);
  run(r.tokens, r.positions, r.seqs, false, probe, stage_.first() ? nullptr : hidden_in.data());
  if (stage_.last()) {
    compute_logits(r.logit_rows, probe, out);
    return;
  }
  Tensor x = ws_.x;
  x.rows = M;
  out->resize(static_cast<size_t>(M * config_.dim));
  backend_.download(x, out->data());
}

void Model::forward(const ForwardBatch& batch, const Probe& probe, std::vector<float>* logits) {
  SMEZO_REQUIRE(stage_.whole(), "forward() runs the whole model; pipeline stage %d of %d runs forward_stage()",
                stage_.index, stage_.count);
  const PackedRun r = pack(batch, probe);
  // the launches are fixed by the rows, logit rows, sequences and the probe's kind (not its seed or scale)
  const std::string shape = format_string("rows %zu logits %zu seqs %zu pair %d perturbed %d", r.tokens.size(),
                                          r.logit_rows.size(), r.seqs.size(), probe.pair ? 1 : 0,
                                          probe.scale != 0.0f ? 1 : 0);
  backend_.forward_pass(shape, [&] {
    run(r.tokens, r.positions, r.seqs, false, probe);
    compute_logits(r.logit_rows, probe, logits);
  });
}

}  // namespace smezo
