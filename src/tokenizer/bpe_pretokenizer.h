// Pre-tokenisation of the byte-level BPE tokenizer: cutting text into the words that BPE
// merges within (merges never cross a word boundary).
//
// A pre-tokeniser is a list of regex stages (PCRE2, UTF + UCP so \p{L}, \p{N}, \s are
// Unicode classes). Each stage cuts every piece that the stages before it produced into its
// matches and the gaps between them, all kept ("isolated"), searching each piece on its own
// (a lookahead sees the end of the piece, not the text after it). This is what Hugging
// Face's Split(behavior="Isolated") / Digits / ByteLevel(use_regex) steps and llama.cpp's
// regex_exprs lists both do. The known schemes:
//   GPT-2 / OPT ("gpt-2"):  ByteLevel's regex  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+|
//                           ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   SmolLM2 ("smollm"):     \p{N} (every digit alone: HF Digits(individual_digits=true)),
//                           then the GPT-2 regex on each piece. SmolLM2's tokenizer.json is
//                           Sequence[Digits(individual_digits), ByteLevel(use_regex)];
//                           llama.cpp's "smollm" pre-type is the same two expressions.
//
// Whitespace: \s / \S in every pattern are rewritten to \p{White_Space} / \P{White_Space}
// (Unicode's White_Space property, which is what Hugging Face's Oniguruma regexes use):
// PCRE2's own \s also matches U+180E (MONGOLIAN VOWEL SEPARATOR), which HF's does not.
// Matching is safe on invalid UTF-8 (PCRE2_MATCH_INVALID_UTF: an invalid sequence matches
// nothing and stays in a gap), though the tokenizer sanitises its input first.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace smezo {

// GPT-2's ByteLevel regex, as Hugging Face tokenizers writes it.
extern const char* const kBpeGpt2Pattern;
// One Unicode number character (HF's Digits(individual_digits=true)).
extern const char* const kBpeDigitPattern;

// The regex stages of a GGUF tokenizer.ggml.pre name; an unknown name throws smezo::Error
// naming it and the supported ones. where names the file for the message.
std::vector<std::string> bpe_pre_patterns_for_gguf(const std::string& pre, const std::string& where);

// pattern with \s / \S (outside \Q..\E) spelled as \p{White_Space} / \P{White_Space}.
std::string bpe_rewrite_whitespace_classes(const std::string& pattern);

class BpePreTokenizer {
 public:
  // Compiles every stage; a pattern PCRE2 rejects throws smezo::Error with PCRE2's message.
  explicit BpePreTokenizer(const std::vector<std::string>& patterns);
  ~BpePreTokenizer();
  BpePreTokenizer(const BpePreTokenizer&) = delete;
  BpePreTokenizer& operator=(const BpePreTokenizer&) = delete;

  // Appends the words of text[begin, end) to *words as [begin, end) byte ranges of text,
  // in order and covering the range exactly. Thread-safe.
  void split(const std::string& text, size_t begin, size_t end,
             std::vector<std::pair<size_t, size_t>>* words) const;

  const std::vector<std::string>& patterns() const { return patterns_; }

 private:
  struct Stage;
  std::vector<std::string> patterns_;
  std::vector<std::unique_ptr<Stage>> stages_;
};

}  // namespace smezo
