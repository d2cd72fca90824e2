// The PCRE2 pre-tokeniser of the byte-level BPE tokenizer (see bpe_pretokenizer.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/bpe_pretokenizer.h"

#include <pcre2.h>

#include "common/check.h"

namespace smezo {

const char* const kBpeGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* const kBpeDigitPattern = R"(\p{N})";

const char* const kBpeLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kBpeQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::vector<std::string> bpe_pre_patterns_for_gguf(const std::string& pre, const std::string& where) {
  if (pre == "gpt-2") return {kBpeGpt2Pattern};
  if (pre == "smollm") return {kBpeDigitPattern, kBpeGpt2Pattern};
  if (pre == "llama-bpe") return {kBpeLlama3Pattern};  // Llama 3.x
  if (pre == "qwen2") return {kBpeQwen2Pattern};       // Qwen2, Qwen2.5, Qwen3
  throw_error("%s: tokenizer.ggml.pre \"%s\" is not a supported pre-tokeniser (supported: gpt-2, smollm, llama-bpe, "
              "qwen2)", where.c_str(), pre.c_str());
}

std::string bpe_rewrite_whitespace_classes(const std::string& pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  for (size_t i = 0; i < pattern.size(); i++) {
    if (pattern[i] != '\\' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char next = pattern[i + 1];
    if (next == 's') {
      out += "\\p{White_Space}";
    } else if (next == 'S') {
      out += "\\P{White_Space}";
    } else if (next == 'Q') {  // \Q...\E is literal text: copy it through untouched
      size_t end = pattern.find("\\E", i + 2);
      end = end == std::string::npos ? pattern.size() : end + 2;
      out.append(pattern, i, end - i);
      i = end - 1;
      continue;
    } else {
      out += '\\';
      out += next;
    }
    i++;
  }
  return out;
}

struct BpePreTokenizer::Stage {
  pcre2_code* code = nullptr;
  ~Stage() { pcre2_code_free(code); }
};

BpePreTokenizer::BpePreTokenizer(const std::vector<std::string>& patterns) : patterns_(patterns) {
  SMEZO_REQUIRE(!patterns.empty(), "a byte-level BPE pre-tokeniser needs at least one regex");
  for (const std::string& pattern : patterns) {
    const std::string rewritten = bpe_rewrite_whitespace_classes(pattern);
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    auto stage = std::make_unique<Stage>();
    stage->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                                PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &error_offset,
                                nullptr);
    if (stage->code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      throw_error("pre-tokeniser regex /%s/ does not compile at offset %zu: %s", pattern.c_str(),
                  static_cast<size_t>(error_offset), reinterpret_cast<const char*>(message));
    }
    // JIT makes matching several times faster; without JIT support PCRE2 interprets.
    pcre2_jit_compile(stage->code, PCRE2_JIT_COMPLETE);
    stages_.push_back(std::move(stage));
  }
}

BpePreTokenizer::~BpePreTokenizer() = default;

namespace {

using Range = std::pair<size_t, size_t>;

// Cuts text[piece] into the matches of code and the gaps between them, appending to *out.
void split_piece(const pcre2_code* code, pcre2_match_data* match, const std::string& text, Range piece,
                 std::vector<Range>* out) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + piece.first);
  const PCRE2_SIZE length = piece.second - piece.first;
  PCRE2_SIZE pos = 0, gap_start = 0;
  while (pos < length) {
    int rc = pcre2_match(code, subject, length, pos, 0, match, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      throw_error("pre-tokeniser regex failed on a %zu-byte piece of text: %s", static_cast<size_t>(length),
                  reinterpret_cast<const char*>(message));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
    const PCRE2_SIZE match_start = ovector[0], match_end = ovector[1];
    if (match_end == match_start) {  // an empty match cuts nothing: step over one character
      pos = match_start + 1;
      while (pos < length && (subject[pos] & 0xC0) == 0x80) pos++;
      continue;
    }
    if (match_start > gap_start) out->emplace_back(piece.first + gap_start, piece.first + match_start);
    out->emplace_back(piece.first + match_start, piece.first + match_end);
    gap_start = pos = match_end;
  }
  if (gap_start < length) out->emplace_back(piece.first + gap_start, piece.second);
}

}  // namespace

void BpePreTokenizer::split(const std::string& text, size_t begin, size_t end, std::vector<Range>* words) const {
  SMEZO_REQUIRE(begin <= end && end <= text.size(), "pre-tokeniser range [%zu, %zu) outside a %zu-byte text",
                begin, end, text.size());
  if (begin == end) return;
  pcre2_match_data* match = pcre2_match_data_create(1, nullptr);
  SMEZO_REQUIRE(match != nullptr, "out of memory creating PCRE2 match data");
  std::vector<Range> pieces{{begin, end}}, next;
  try {
    for (size_t s = 0; s < stages_.size(); s++) {
      std::vector<Range>* out = s + 1 == stages_.size() ? words : &next;
      for (const Range& piece : pieces) split_piece(stages_[s]->code, match, text, piece, out);
      if (out == &next) {
        pieces.swap(next);
        next.clear();
      }
    }
  } catch (...) {
    pcre2_match_data_free(match);
    throw;
  }
  pcre2_match_data_free(match);
}

}  // namespace smezo
