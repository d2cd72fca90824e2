// The BPE merge loop (see bpe_merge.h).
#include "tokenizer/bpe_merge.h"

#include <queue>

namespace smezo {

void BpeMerger::add_merge(int32_t left, int32_t right, int32_t merged, int32_t rank) {
  merges_[pair_key(left, right)] = Merge{rank, merged};
}

namespace {

// A pair of adjacent symbols that has a merge, as it was when pushed.
struct Candidate {
  int32_t rank;
  int32_t left, right;         // symbol positions (index of each symbol's first kept byte)
  int32_t left_id, right_id;   // their tokens then; a change means the entry is stale
  int32_t merged;
};

// Orders the heap so that top() is the lowest rank, then the leftmost position.
struct LaterFirst {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  }
};

}  // namespace

void BpeMerger::merge_word(const char* bytes, size_t n, std::vector<int32_t>* out) const {
  // symbol i starts as the i-th kept byte; a symbol merged into its left neighbour gets -1
  std::vector<int32_t> token;
  token.reserve(n);
  for (size_t i = 0; i < n; i++) {
    const int32_t id = byte_ids_[static_cast<uint8_t>(bytes[i])];
    if (id >= 0) token.push_back(id);
  }
  const int32_t count = static_cast<int32_t>(token.size());
  if (count <= 1) {
    out->insert(out->end(), token.begin(), token.end());
    return;
  }
  std::vector<int32_t> prev(count), next(count);
  for (int32_t i = 0; i < count; i++) {
    prev[i] = i - 1;
    next[i] = i + 1 < count ? i + 1 : -1;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, LaterFirst> heap;
  auto push_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    auto it = merges_.find(pair_key(token[left], token[right]));
    if (it != merges_.end())
      heap.push(Candidate{it->second.rank, left, right, token[left], token[right], it->second.merged});
  };
  for (int32_t i = 0; i + 1 < count; i++) push_pair(i, i + 1);

  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    // Symbols only grow, so unchanged tokens and adjacency mean the pair is still there.
    if (token[c.left] != c.left_id || next[c.left] != c.right || token[c.right] != c.right_id) continue;
    token[c.left] = c.merged;
    token[c.right] = -1;
    next[c.left] = next[c.right];
    if (next[c.right] >= 0) prev[next[c.right]] = c.left;
    push_pair(prev[c.left], c.left);
    push_pair(c.left, next[c.left]);
  }
  for (int32_t i = 0; i >= 0; i = next[i]) out->push_back(token[i]);
}

}  // namespace smezo
