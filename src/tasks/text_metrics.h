// Scoring generated text against references as the official SQuAD v1.1 script (evaluate-v1.1.py):
//   exact match  normalised prediction == normalised reference (1 or 0)
//   token F1     over the whitespace tokens of both normalised strings, as multisets: common = sum
//                over tokens of min(count in prediction, count in reference); 0 when common is 0
//                (even for two empty strings), else 2·P·R/(P+R), P = common/|prediction|,
//                R = common/|reference|
// With several references, the best score. Normalisation: lower-case, drop ASCII punctuation, replace
// the whole words "a", "an", "the" by a space, collapse whitespace runs to one space and trim. Unlike
// Python, for non-ASCII text only: lower-casing is ASCII-only, and every byte >= 0x80 is a word
// character (so a non-ASCII letter next to "a" keeps it a non-word, as Python's \b would).
#pragma once

#include <string>
#include <vector>

namespace smezo {

std::string squad_normalize(const std::string& text);
// The whitespace tokens of squad_normalize(text).
std::vector<std::string> squad_tokens(const std::string& text);

double exact_match(const std::string& prediction, const std::string& reference);
double token_f1(const std::string& prediction, const std::string& reference);
// The best over several references; an empty list is an error (nothing to score against).
double max_exact_match(const std::string& prediction, const std::vector<std::string>& references);
double max_token_f1(const std::string& prediction, const std::vector<std::string>& references);

}  // namespace smezo
