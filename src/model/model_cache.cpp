// The key/value cache of generation: Model::run with the attention's key/value spans in the cache.
#include <algorithm>
#include <numeric>
#include <vector>

#include "common/check.h"
#include "model/model.h"

namespace smezo {

void Model::enable_kv_cache(int64_t max_len, int64_t slots) {
  const int64_t first = prefix_tokens();  // each slot holds a prefix first
  SMEZO_REQUIRE(max_len > 0 && max_len <= config_.max_seq_len - first,
                "generation length %lld: the model supports 1..%lld positions%s", (long long)max_len,
                (long long)(config_.max_seq_len - first), first > 0 ? " after its prefix" : "");
  SMEZO_REQUIRE(slots > 0, "key/value cache of %lld sequences", (long long)slots);
  const int64_t stride = std::max(first + max_len, cache_stride_);
  slots = std::max(slots, cache_slots_);
  if (stride == cache_stride_ && slots == cache_slots_) return;
  const int64_t kv_dim = config_.n_kv_heads * config_.head_dim;
  cache_k_.clear();  // the old tensors stay allocated: backend memory lives as long as the backend
  cache_v_.clear();
  for (int64_t l = 0; l < config_.n_layers; l++) {
    cache_k_.push_back(backend_.alloc(slots * stride, kv_dim, DTYPE_F32));
    cache_v_.push_back(backend_.alloc(slots * stride, kv_dim, DTYPE_F32));
  }
  cache_slots_ = slots;
  cache_stride_ = stride;
}

void Model::forward_cached(const std::vector<int32_t>& tokens, int64_t pos, std::vector<float>* logits) {
  forward_cached({CachedChunk{0, pos, tokens}}, Probe{}, logits);
}

void Model::forward_cached(const std::vector<CachedChunk>& chunks, const Probe& probe, std::vector<float>* logits) {
  SMEZO_REQUIRE(stage_.whole(), "generation runs the whole model, not a pipeline stage");
  SMEZO_REQUIRE(cache_slots_ > 0, "forward_cached: call enable_kv_cache first");
  SMEZO_REQUIRE(!probe.pair, "cached generation runs a single probe: decode a pair's halves apart (half_probe)");
  SMEZO_REQUIRE(!chunks.empty(), "forward_cached: no tokens to run");
  const int64_t first = prefix_tokens();  // every slot's sequence sits after the prefix
  std::vector<int32_t> tokens, positions;
  std::vector<AttentionSeq> seqs;
  std::vector<int64_t> logit_rows;
  std::vector<bool> seen(static_cast<size_t>(cache_slots_), false);
  for (const CachedChunk& c : chunks) {
    const int64_t n = static_cast<int64_t>(c.tokens.size());
    SMEZO_REQUIRE(c.slot >= 0 && c.slot < cache_slots_ && !seen[c.slot], "forward_cached: slot %lld is not one of "
                  "the cache's %lld or comes twice in one run", (long long)c.slot, (long long)cache_slots_);
    seen[c.slot] = true;
    SMEZO_REQUIRE(n > 0 && c.pos >= 0 && first + c.pos + n <= cache_stride_,
                  "forward_cached: %lld tokens at position %lld of slot %lld, past the cache (%lld positions)",
                  (long long)n, (long long)c.pos, (long long)c.slot, (long long)(cache_stride_ - first));
    if (first > 0 && c.pos == 0) prefix_into_cache(c.slot, probe);  // a new sequence
    const int64_t row = static_cast<int64_t>(tokens.size());
    seqs.push_back(AttentionSeq{row, n, c.slot * cache_stride_, first + c.pos + n});
    tokens.insert(tokens.end(), c.tokens.begin(), c.tokens.end());
    for (int64_t i = 0; i < n; i++) positions.push_back(static_cast<int32_t>(first + c.pos + i));
    logit_rows.push_back(row + n - 1);
  }
  run(tokens, positions, seqs, true, probe);
  compute_logits(logit_rows, probe, logits);
}

void Model::prefix_into_cache(int64_t slot, const Probe& probe) {
  const int64_t P = prefix_options_.tokens;
  std::vector<int32_t> rows(static_cast<size_t>(P));
  std::iota(rows.begin(), rows.end(), 0);
  for (size_t l = 0; l < prefix_.size(); l++) {  // read through the probe, as prefix_attention does
    backend_.embedding(tensor_rows(cache_k_[l], slot * cache_stride_, P), prefix_[l].key, rows, probe);
    backend_.embedding(tensor_rows(cache_v_[l], slot * cache_stride_, P), prefix_[l].value, rows, probe);
  }
}

}  // namespace smezo
