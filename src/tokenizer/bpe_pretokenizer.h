// Pre-tokenisation of the byte-level BPE tokenizer: cutting text into the words that BPE merges within.
// A list of regex stages (PCRE2, UTF + UCP: Unicode classes). Each stage cuts every piece of the
// stages before into its matches and the gaps, all kept ("isolated"), searching each piece on its own
// (a lookahead sees the piece's end), as HF's Split(Isolated) / Digits / ByteLevel(use_regex) and
// llama.cpp's regex_exprs do. The known schemes:
//   GPT-2 / OPT ("gpt-2"):  ByteLevel's regex  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+|
//                           ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   SmolLM2 ("smollm"):     \p{N} (every digit alone), then the GPT-2 regex on each piece.
//   Llama 3 ("llama-bpe"):  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//                           ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+   (its tokenizer.json's Split)
//   Qwen2/2.5/3 ("qwen2"):  the same with \p{N} (one digit) for \p{N}{1,3}
// \s / \S are rewritten to \p{White_Space} / \P{White_Space}, as HF's Oniguruma has them: PCRE2's \s
// also matches U+180E. Invalid UTF-8 is safe (PCRE2_MATCH_INVALID_UTF: matches nothing, stays in a gap).
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
// Llama 3's and Qwen2's regexes (llama.cpp's "llama-bpe" and "qwen2").
extern const char* const kBpeLlama3Pattern;
extern const char* const kBpeQwen2Pattern;

// The stages of a tokenizer.ggml.pre name; an unknown one throws, naming where and the known.
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

  // Appends the words of text[begin, end) as byte ranges, in order, covering it. Thread-safe.
  void split(const std::string& text, size_t begin, size_t end,
             std::vector<std::pair<size_t, size_t>>* words) const;

  const std::vector<std::string>& patterns() const { return patterns_; }

 private:
  struct Stage;
  std::vector<std::string> patterns_;
  std::vector<std::unique_ptr<Stage>> stages_;
};

}  // namespace smezo
