// The byte-level BPE tokenizer (GPT-2, OPT, SmolLM2) behind the Tokenizer interface.
//
// encode(text):
//   1. invalid UTF-8 -> U+FFFD per maximal subpart (bpe_bytes.h), as HF sees such text;
//   2. control and user-defined tokens (<|im_start|>, <|endoftext|>, ...) are cut out of the
//      text where they occur, leftmost first and the longest at a position, as HF's added
//      tokens are; they become their own id;
//   3. the text between them is cut into words (bpe_pretokenizer.h), and each word's bytes
//      are merged (bpe_merge.h). Words of up to 64 bytes are cached, so the repeated words
//      of a long text are merged once. A byte that has no token is dropped, or becomes
//      missing_byte_id when the vocabulary names one (bpe_vocab.h), as in HF.
//   add_bos prepends bos_id() (throws when the model has no BOS); add_bos_by_default() says
//   what the model's own tokenizer does (SmolLM2: no BOS).
// decode(ids): the bytes of every token but control tokens (BOS, EOS, <|im_start|>...,
//   like HF's skip_special_tokens), with invalid UTF-8 replaced by U+FFFD as HF's
//   ByteLevel decoder does. No leading space is dropped: byte-level BPE adds none.
// decode_piece(prev, id): the raw bytes of id ("" for a control token). A character that
//   spans tokens comes out split over pieces, so a stream must be written bytewise; the
//   concatenated pieces are exactly the decoded text.
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
