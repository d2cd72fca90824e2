// The byte-level BPE tokenizer (GPT-2, OPT, SmolLM2) behind the Tokenizer interface. encode(text):
//   1. invalid UTF-8 -> U+FFFD per maximal subpart (bpe_bytes.h), as HF sees such text;
//   2. added tokens (<|im_start|>, ...) are cut out, leftmost first, longest at a position;
//   3. the rest is cut into words (bpe_pretokenizer.h) whose bytes are merged (bpe_merge.h); words
//      up to 64 bytes are cached. A byte without a token is dropped or becomes missing_byte_id, as HF.
//   add_bos prepends bos_id() (throws when the model has none).
// decode(ids): every token's bytes but control tokens (as skip_special_tokens), invalid UTF-8
//   as U+FFFD. No leading space is dropped: byte-level BPE adds none.
// decode_piece(prev, id): id's raw bytes ("" for control): a character may split over pieces,
//   so stream bytewise; the pieces concatenate to the decoded text.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/bpe_merge.h"
#include "tokenizer/bpe_pretokenizer.h"
#include "tokenizer/bpe_vocab.h"
#include "tokenizer/tokenizer.h"

namespace smezo {

class BpeTokenizer : public Tokenizer {
 public:
  // Validates the vocabulary (bpe_vocab_validate) and builds the lookup tables.
  explicit BpeTokenizer(BpeVocab vocab);

  std::vector<int32_t> encode(const std::string& text, bool add_bos) const override;
  std::string decode(const std::vector<int32_t>& tokens) const override;
  std::string decode_piece(int32_t prev, int32_t token) const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(vocab_.tokens.size()); }
  int32_t bos_id() const override { return vocab_.bos_id; }
  int32_t eos_id() const override { return vocab_.eos_id; }
  bool add_bos_by_default() const override { return vocab_.add_bos; }

  const BpeVocab& vocab() const { return vocab_; }

 private:
  struct AddedToken {
    std::string text;
    int32_t id;
  };
  // Appends the tokens of text[begin, end), which holds no added token.
  void encode_plain(const std::string& text, size_t begin, size_t end, std::vector<int32_t>* out) const;
  void encode_word(const char* bytes, size_t n, std::vector<int32_t>* out) const;

  BpeVocab vocab_;
  std::vector<std::string> token_bytes_;  // (n_vocab) the bytes each token decodes to
  std::unordered_map<std::string, int32_t> word_ids_;  // (ignore_merges) word bytes -> model token
  std::unique_ptr<BpePreTokenizer> pre_;
  BpeMerger merger_;
  std::array<std::vector<AddedToken>, 256> added_by_first_byte_;  // each list longest first
  bool has_added_ = false;

  static constexpr size_t kCacheMaxWordBytes = 64;
  static constexpr size_t kCacheMaxWords = 1 << 16;  // then the cache starts over
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace smezo
