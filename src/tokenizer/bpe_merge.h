// BPE merging within one pre-token word (byte-level vocabularies). A word starts as one symbol per
// byte; repeatedly the adjacent pair of lowest merge rank (leftmost among equals) is merged, until
// none has a merge: HF's Word::merge_all and GPT-2's bpe() result. O(n log n): pairs in a min-heap
// keyed by (rank, position), symbols in a doubly linked list, stale entries skipped when popped.
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
  // Lower rank merges first; a pair added again takes the later rank, as in HF.
  void add_merge(int32_t left, int32_t right, int32_t merged, int32_t rank);
  int64_t n_merges() const { return static_cast<int64_t>(merges_.size()); }

  // Appends the tokens of bytes[0, n); a byte with id -1 is left out before merging, as in HF.
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
