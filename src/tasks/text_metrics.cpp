// SQuAD v1.1 exact match and token F1 (see text_metrics.h).
#include "tasks/text_metrics.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>

#include "common/check.h"

namespace smezo {

namespace {

bool is_ascii_punctuation(unsigned char c) {
  return c < 0x80 && std::strchr("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) != nullptr && c != 0;
}

// Python's str.split() separators within ASCII: space, \t \n \v \f \r and \x1c-\x1f.
bool is_space(unsigned char c) { return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f); }

// Python's \w for this purpose: ASCII letters, digits, '_', and (see the header) any byte >= 0x80.
bool is_word_char(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

// re.sub(r'\b(a|an|the)\b', ' ', text): a whole word that is an article becomes a space.
std::string replace_articles(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const bool starts_word = is_word_char(s[i]) && (i == 0 || !is_word_char(s[i - 1]));
    size_t end = i;
    if (starts_word)
      while (end < s.size() && is_word_char(s[end])) end++;
    const std::string word = starts_word ? s.substr(i, end - i) : std::string();
    if (word == "a" || word == "an" || word == "the") {
      out += ' ';
      i = end;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// Python's text.split(): the runs of non-space characters.
std::vector<std::string> split_whitespace(const std::string& text) {
  std::vector<std::string> tokens;
  std::string current;
  for (unsigned char c : text) {
    if (is_space(c)) {
      if (!current.empty()) tokens.push_back(current);
      current.clear();
    } else {
      current += static_cast<char>(c);
    }
  }
  if (!current.empty()) tokens.push_back(current);
  return tokens;
}

}  // namespace

std::string squad_normalize(const std::string& text) {
  std::string kept;  // lower-cased, punctuation removed
  for (unsigned char c : text)
    if (!is_ascii_punctuation(c)) kept += static_cast<char>(c < 0x80 ? std::tolower(c) : c);
  std::string out;
  for (const std::string& t : split_whitespace(replace_articles(kept))) out += (out.empty() ? "" : " ") + t;
  return out;
}

std::vector<std::string> squad_tokens(const std::string& text) { return split_whitespace(squad_normalize(text)); }

double exact_match(const std::string& prediction, const std::string& reference) {
  return squad_normalize(prediction) == squad_normalize(reference) ? 1.0 : 0.0;
}

double token_f1(const std::string& prediction, const std::string& reference) {
  const std::vector<std::string> p = squad_tokens(prediction);
  const std::vector<std::string> r = squad_tokens(reference);
  std::map<std::string, int64_t> in_reference;
  for (const std::string& t : r) in_reference[t]++;
  int64_t common = 0;
  for (const std::string& t : p) {
    auto it = in_reference.find(t);
    if (it != in_reference.end() && it->second > 0) {
      it->second--;
      common++;
    }
  }
  if (common == 0) return 0.0;
  const double precision = static_cast<double>(common) / static_cast<double>(p.size());
  const double recall = static_cast<double>(common) / static_cast<double>(r.size());
  return 2.0 * precision * recall / (precision + recall);
}

double max_exact_match(const std::string& prediction, const std::vector<std::string>& references) {
  SMEZO_REQUIRE(!references.empty(), "exact match against no reference answer");
  double best = 0.0;
  for (const std::string& r : references) best = std::max(best, exact_match(prediction, r));
  return best;
}

double max_token_f1(const std::string& prediction, const std::vector<std::string>& references) {
  SMEZO_REQUIRE(!references.empty(), "token F1 against no reference answer");
  double best = 0.0;
  for (const std::string& r : references) best = std::max(best, token_f1(prediction, r));
  return best;
}

}  // namespace smezo
