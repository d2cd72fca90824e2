// BPE merging within one pre-token word (byte-level vocabularies).
//
// A word starts as one symbol per byte (the token of that byte's alphabet character). Then,
// repeatedly, the adjacent pair whose merge has the lowest rank is replaced by the merged
// token, the leftmost pair first among equal ranks, until no adjacent pair has a merge.
// This is Hugging Face's BPE (Word::merge_all) and GPT-2's original bpe() result.
//
// Cost: O(n log n) in the word's length n. Adjacent pairs sit in a min-heap keyed by
// (rank, position); a merge links its two symbols into one (a doubly linked list over the
// byte positions) and pushes the two new pairs it forms; stale heap entries are skipped when
// popped. No rescans, so a 100 kB word without spaces is as fast per byte as a short one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace smezo {

class BpeMerger {
 public:
  BpeMerger() { byte_ids_.fill(-1); }
  // The token of byte b's alphabet character.
  void set_byte_id(uint8_t b, int32_t id) { byte_ids_[b] = id; }
  int32_t byte_id(uint8_t b) const { return byte_ids_[b]; }
  // (left, right) merges into merged at rank (lower first). A pair added again takes the
  // later rank, as Hugging Face's merge map does.
  void add_merge(int32_t left, int32_t right, int32_t merged, int32_t rank);
  int64_t n_merges() const { return static_cast<int64_t>(merges_.size()); }

  // Appends the tokens of the word bytes[0, n) to *out. A byte whose id is -1 is left out
  // before merging (its neighbours become adjacent), as HF's BPE does for a character that
  // has no token and no unk.
  void merge_word(const char* bytes, size_t n, std::vector<int32_t>* out) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t merged;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  std::array<int32_t, 256> byte_ids_;
  std::unordered_map<uint64_t, Merge> merges_;
};

}  // namespace smezo
