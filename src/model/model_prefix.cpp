// Model::add_prefix and the prefixed attention of --tune prefix (see model/prefix.h).
#include <algorithm>
#include <numeric>
#include <vector>

#include "common/check.h"
#include "model/model.h"

namespace smezo {

namespace {

std::vector<int32_t> first_rows(int64_t count) {
  std::vector<int32_t> rows(static_cast<size_t>(count));
  std::iota(rows.begin(), rows.end(), 0);
  return rows;
}

// PEFT keeps a prefix as one tensor; these are smezo's own names of its per-layer parts.
std::string prefix_name(size_t layer, bool key) {
  return "prefix.layers." + std::to_string(layer) + (key ? ".key" : ".value");
}

}  // namespace

void Model::add_prefix(const PrefixOptions& options, uint64_t seed) {
  prefix_validate(options);
  const ModelConfig& c = config_;
  const int64_t P = options.tokens;
  SMEZO_REQUIRE(prefix_.empty(), "add_prefix: the model already has a prefix");
  SMEZO_REQUIRE(lora_.empty(), "--tune prefix and LoRA adapters do not go together");
  SMEZO_REQUIRE(stage_.whole(), "--tune prefix runs on a whole model, not on pipeline stage %d of %d", stage_.index,
                stage_.count);
  prefix_require_room(P, c.max_seq_len);
  SMEZO_REQUIRE(P <= max_tokens_, "--prefix-tokens %lld: the model's workspace holds %lld tokens", (long long)P,
                (long long)max_tokens_);
  // MeZO's init by real activations: the base model's keys/values of P tokens (positions 0..P-1)
  enable_kv_cache(P);
  std::vector<float> logits;
  forward_cached(prefix_init_tokens(seed, c.vocab_size, P), 0, &logits);
  const int64_t kv_dim = c.n_kv_heads * c.head_dim;
  prefix_.resize(weights_.layers.size());  // never resized again: params() points into it
  uint32_t tensor_id = static_cast<uint32_t>(param_list_.size());  // after the base tensors
  for (size_t l = 0; l < prefix_.size(); l++) {
    for (bool key : {true, false}) {
      Param& p = key ? prefix_[l].key : prefix_[l].value;
      p.w = backend_.alloc(P, kv_dim, DTYPE_F32);
      backend_.copy_rows(p.w, 0, tensor_rows(key ? cache_k_[l] : cache_v_[l], 0, P));
      p.info.name = prefix_name(l, key);
      p.info.role = key ? ROLE_ATTN_K : ROLE_ATTN_V;
      p.info.adapter = key ? ADAPTER_PREFIX_KEY : ADAPTER_PREFIX_VALUE;
      p.info.tensor_id = tensor_id++;
      param_list_.push_back(&p);
    }
  }
  prefix_options_ = options;
  const int64_t gathered = max_tokens_ + P * std::min(max_tokens_, max_logit_rows_);
  ws_.prefix_src_k = backend_.alloc(max_tokens_ + 2 * P, kv_dim, DTYPE_F32);
  ws_.prefix_src_v = backend_.alloc(max_tokens_ + 2 * P, kv_dim, DTYPE_F32);
  ws_.prefix_k = backend_.alloc(gathered, kv_dim, DTYPE_F32);
  ws_.prefix_v = backend_.alloc(gathered, kv_dim, DTYPE_F32);
}

void Model::prefix_layout(const std::vector<AttentionSeq>& seqs, const Probe& probe, int64_t M,
                          std::vector<int64_t>* kv_index, std::vector<AttentionSeq>* prefixed) const {
  const int64_t P = prefix_options_.tokens;
  kv_index->clear();
  prefixed->clear();
  for (size_t s = 0; s < seqs.size(); s++) {
    // a pair's second half of the sequences (pack() appends them) reads the - half's prefix
    const int64_t prefix_row = M + (probe.pair && s >= seqs.size() / 2 ? P : 0);
    AttentionSeq span = seqs[s];
    span.kv_row = static_cast<int64_t>(kv_index->size());
    span.kv_len = P + seqs[s].kv_len;
    for (int64_t t = 0; t < P; t++) kv_index->push_back(prefix_row + t);
    for (int64_t t = 0; t < seqs[s].kv_len; t++) kv_index->push_back(seqs[s].kv_row + t);
    prefixed->push_back(span);
  }
  SMEZO_REQUIRE(static_cast<int64_t>(kv_index->size()) <= ws_.prefix_k.rows,
                "--tune prefix: %zu sequences of %lld tokens need %zu prefixed key rows, the workspace holds %lld "
                "(every sequence of a batch must ask for a logit row)", seqs.size(), (long long)M, kv_index->size(),
                (long long)ws_.prefix_k.rows);
}

void Model::prefix_attention(int64_t l, const Probe& probe, int64_t M, const std::vector<int64_t>& kv_index,
                             AttentionParams* ap) {
  const int64_t P = prefix_options_.tokens;
  const PrefixLayer& prefix = prefix_[static_cast<size_t>(l)];
  const std::vector<int32_t> rows = first_rows(P);
  const int64_t halves = probe.pair ? 2 : 1;
  Tensor src_k = ws_.prefix_src_k, src_v = ws_.prefix_src_v, k = ws_.prefix_k, v = ws_.prefix_v;
  src_k.rows = src_v.rows = M + halves * P;
  k.rows = v.rows = static_cast<int64_t>(kv_index.size());
  for (int64_t h = 0; h < halves; h++) {  // the prefix read through the probe, like an embedding table
    const Probe half = probe.pair ? half_probe(probe, h == 0 ? +1 : -1) : probe;
    backend_.embedding(tensor_rows(src_k, M + h * P, P), prefix.key, rows, half);
    backend_.embedding(tensor_rows(src_v, M + h * P, P), prefix.value, rows, half);
  }
  backend_.gather_rows(k, src_k, kv_index);
  backend_.gather_rows(v, src_v, kv_index);
  ap->k = k;
  ap->v = v;
}

}  // namespace smezo
