// Encoding task examples into token sequences; see task_encode.h.
#include "tasks/task_encode.h"

#include <algorithm>

#include "common/check.h"

namespace smezo {

namespace {

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t k = 0;
  while (k < a.size() && k < b.size() && a[k] == b[k]) k++;
  return k;
}

// A context and the context + option tokenized; the option's tokens are full[shared..].
struct ContextOption {
  std::vector<int32_t> context, full;
  size_t shared = 0;  // common prefix of context and full
  int64_t option_tokens() const { return static_cast<int64_t>(full.size() - shared); }
  bool merged() const { return shared != context.size(); }  // a token spans the boundary
};

// --- long texts: a tail is tokenized, not the whole
// Left truncation keeps a prompt's last tokens, so of a long prompt only a byte tail is tokenized. The
// tokenizers split at whitespace and merge within a word, so a tail's tokens equal the whole text's
// except in its first (cut) word: the tail holds >= 2·keep + kTailMarginTokens tokens and only its
// last `keep` are used. The first tail guesses kTailBytesPerToken bytes per token and grows 4x until
// it holds enough.
constexpr size_t kTailMinBytes = 8192;  // texts up to this long are always tokenized whole
constexpr size_t kTailBytesPerToken = 16;
constexpr int64_t kTailMarginTokens = 64;

// The last bytes of text, at least `bytes` of them, from the start of a UTF-8 character.
std::string utf8_tail(const std::string& text, size_t bytes) {
  if (text.size() <= bytes) return text;
  size_t at = text.size() - bytes;
  while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xc0) == 0x80) at--;
  return text.substr(at);
}

// The first bytes of text, at most `bytes` of them, ending before a UTF-8 character.
std::string utf8_head(const std::string& text, size_t bytes) {
  if (text.size() <= bytes) return text;
  size_t at = bytes;
  while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xc0) == 0x80) at--;
  return text.substr(0, at);
}

// A long option is judged by its head, not tokenized whole (a megabyte takes minutes): the number of
// tokens its head holds beyond a cut word (kTailMarginTokens), a lower bound of the whole option's,
// when that is more than `limit`; -1 when the option is short, or its head within the limit.
int64_t option_tokens_beyond(const Tokenizer& tok, const std::string& option, int64_t limit) {
  const size_t bytes = kTailMinBytes + static_cast<size_t>(limit + kTailMarginTokens) * kTailBytesPerToken;
  if (option.size() <= bytes) return -1;
  const int64_t n = static_cast<int64_t>(tok.encode(utf8_head(option, bytes), false).size()) - kTailMarginTokens;
  return n > limit ? n : -1;
}

struct LastTokens {
  std::vector<int32_t> tokens;  // encode(text), or its last `keep` tokens when a tail was tokenized
  int64_t dropped = 0;          // tokens of the tail left out (the whole text has more)
};

// encode(text); of a long text only its last `keep` tokens, tokenized from a tail.
LastTokens encode_last_tokens(const Tokenizer& tok, const std::string& text, int64_t keep) {
  const int64_t wanted = 2 * keep + kTailMarginTokens;
  for (size_t bytes = kTailMinBytes + static_cast<size_t>(wanted) * kTailBytesPerToken;; bytes *= 4) {
    if (text.size() <= bytes) return {tok.encode(text, false), 0};
    std::vector<int32_t> t = tok.encode(utf8_tail(text, bytes), false);
    const int64_t n = static_cast<int64_t>(t.size());
    if (n >= wanted) return {std::vector<int32_t>(t.end() - keep, t.end()), n - keep};
  }
}

// The option's tokens depend only on its context's end: a long context gives its last kTailMinBytes.
ContextOption tokenize_context_option(const Tokenizer& tok, const std::string& whole_context,
                                      const std::string& option) {
  const std::string context = utf8_tail(whole_context, kTailMinBytes);
  ContextOption t;
  t.context = tok.encode(context, false);
  t.full = tok.encode(context + option, false);
  t.shared = common_prefix(t.context, t.full);
  SMEZO_REQUIRE(t.option_tokens() > 0, "option \"%s\" adds no tokens after its context (context %zu tokens, context "
                "+ option %zu tokens)", printable(option, 60).c_str(), t.context.size(), t.full.size());
  return t;
}

EncodedCandidate encode_candidate(const Tokenizer& tok, const std::string& context, const std::string& option,
                                  int64_t max_len, const std::string& icl_prefix) {
  const std::string prompt = template_lstrip_whitespace(icl_prefix + context);
  const int64_t n_bos = tokenizer_wants_bos(tok) ? 1 : 0;
  const int64_t at_least = option_tokens_beyond(tok, option, max_len);
  SMEZO_REQUIRE(at_least < 0, "option \"%s\" (%zu bytes) is at least %lld tokens long and does not fit in max_len "
                "%lld ---> HINT: raise --max-len, or shorten it", printable(option, 60).c_str(), option.size(),
                static_cast<long long>(at_least), static_cast<long long>(max_len));
  const ContextOption t = tokenize_context_option(tok, context, option);
  const int64_t n_option = t.option_tokens();
  SMEZO_REQUIRE(n_option + n_bos <= max_len, "option \"%s\" is %lld tokens long and does not fit in max_len "
                "%lld%s ---> HINT: raise --max-len", printable(option, 60).c_str(), static_cast<long long>(n_option),
                static_cast<long long>(max_len), n_bos ? " with BOS" : "");
  EncodedCandidate cand;
  if (n_bos) cand.tokens.push_back(tok.bos_id());
  LastTokens kept;
  if (!t.merged()) {
    kept = encode_last_tokens(tok, prompt, max_len - n_bos - n_option);
    cand.tokens.insert(cand.tokens.end(), kept.tokens.begin(), kept.tokens.end());
    cand.tokens.insert(cand.tokens.end(), t.full.begin() + static_cast<std::ptrdiff_t>(t.shared), t.full.end());
  } else {  // merged across the boundary: score the whole string's tail
    kept = encode_last_tokens(tok, prompt + option, max_len - n_bos);
    SMEZO_REQUIRE(static_cast<int64_t>(kept.tokens.size()) >= n_option, "option \"%s\": the full prompt has %zu "
                  "tokens, fewer than the %lld option tokens", printable(option, 60).c_str(), kept.tokens.size(),
                  static_cast<long long>(n_option));
    cand.tokens.insert(cand.tokens.end(), kept.tokens.begin(), kept.tokens.end());
  }
  const int64_t len = static_cast<int64_t>(cand.tokens.size());
  cand.option_start = len - n_option;
  cand.prompt_tokens_cut = kept.dropped;
  if (len > max_len) {  // left truncation, right after BOS
    const int64_t drop = len - max_len;
    cand.tokens.erase(cand.tokens.begin() + n_bos, cand.tokens.begin() + n_bos + drop);
    cand.option_start -= drop;
    cand.prompt_tokens_cut += drop;
  }
  return cand;
}

}  // namespace

int64_t encode_option_tokens(const Tokenizer& tok, const std::string& context, const std::string& option,
                             int64_t limit, bool* exact) {
  const int64_t at_least = option_tokens_beyond(tok, option, limit);
  if (exact) *exact = at_least < 0;
  return at_least >= 0 ? at_least : tokenize_context_option(tok, context, option).option_tokens();
}

EncodedExample encode_example(const Tokenizer& tok, const TaskExample& ex, int64_t max_len,
                              const std::string& icl_prefix) {
  SMEZO_REQUIRE(ex.contexts.size() == ex.options.size() && !ex.options.empty(),
                "task example has %zu contexts and %zu options (need the same, non-zero count)",
                ex.contexts.size(), ex.options.size());
  SMEZO_REQUIRE(ex.gold >= 0 && ex.gold < static_cast<int>(ex.options.size()),
                "task example's gold index %d is not one of its %zu candidates", ex.gold,
                ex.options.size());
  SMEZO_REQUIRE(max_len >= 2, "max_len %lld is too small (need BOS and one option token)",
                static_cast<long long>(max_len));  // (2 also without BOS: one prompt token at least)
  EncodedExample out;
  out.gold = ex.gold;
  for (size_t i = 0; i < ex.options.size(); i++) {
    try {
      out.candidates.push_back(encode_candidate(tok, ex.contexts[i], ex.options[i], max_len, icl_prefix));
    } catch (const Error& e) {  // say which record and candidate (--check-data also names the field)
      if (ex.source.empty()) throw;
      throw Error(format_string("%s: candidate %zu: %s", ex.source.c_str(), i, e.message().c_str()), e.hint());
    }
  }
  return out;
}

std::string build_icl_prefix(const std::vector<TaskExample>& demos) {
  if (demos.empty()) return "";
  std::string joined;
  for (size_t i = 0; i < demos.size(); i++) {
    const TaskExample& d = demos[i];
    SMEZO_REQUIRE(d.gold >= 0 && d.gold < static_cast<int>(d.options.size()) &&
                      d.contexts.size() == d.options.size(),
                  "demonstration %zu has gold index %d outside its %zu candidates", i, d.gold,
                  d.options.size());
    if (i) joined += "\n\n";
    joined += template_strip_whitespace(d.contexts[d.gold] + d.options[d.gold]);
  }
  return template_strip_whitespace(joined) + "\n\n";
}

namespace {

// Runs of whitespace become one space; the ends are trimmed.
std::string fold_whitespace(const std::string& text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

}  // namespace

IclDemoCounter::IclDemoCounter(const Tokenizer& tok, const std::vector<TaskExample>& demos)
    : tok_(tok), n_bos_(tokenizer_wants_bos(tok) ? 1 : 0) {
  for (const TaskExample& d : demos) {
    const std::string text = template_strip_whitespace(d.contexts[d.gold] + d.options[d.gold]);
    demos_.push_back(fold_whitespace(tok.decode(tok.encode(text, false))));
  }
}

int64_t IclDemoCounter::whole_demos(const EncodedExample& ex) const {
  int64_t fewest = static_cast<int64_t>(demos_.size());
  for (const EncodedCandidate& c : ex.candidates) {
    if (c.prompt_tokens_cut == 0) continue;
    const std::string kept = fold_whitespace(
        tok_.decode(std::vector<int32_t>(c.tokens.begin() + n_bos_, c.tokens.begin() + c.option_start)));
    // the last demonstrations, in order, right to left, each ending before the next one starts
    size_t end = kept.size();
    int64_t whole = 0;
    for (size_t j = demos_.size(); j-- > 0;) {
      const std::string& d = demos_[j];
      if (d.size() > end) break;
      const size_t at = kept.rfind(d, end - d.size());
      if (at == std::string::npos) break;
      whole++;
      end = at;
    }
    fewest = std::min(fewest, whole);
  }
  return fewest;
}

}  // namespace smezo
