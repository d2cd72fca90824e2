// Scoring generated text against reference answers as the official SQuAD v1.1 evaluation
// script does (evaluate-v1.1.py): both strings normalised, then
//   exact match  normalised prediction == normalised reference (1 or 0)
//   token F1     over the whitespace tokens of the normalised strings, counted as multisets:
//                common = sum over tokens of min(count in prediction, count in reference);
//                0 when common is 0 (so an empty prediction scores 0, even against an empty
//                reference), else 2·P·R/(P+R) with P = common/|prediction|, R = common/|reference|
// and, with several references, the best score over them.
// Normalisation: lower-case, drop ASCII punctuation (Python's string.punctuation), replace
// the whole words "a", "an", "the" by a space, collapse whitespace runs to one space and trim.
// Differences from Python, for non-ASCII text only: lower-casing is ASCII-only, and every byte
// >= 0x80 counts as a word character (so a non-ASCII letter next to "a" keeps it a non-word,
// as Python's \b would; non-ASCII punctuation and spaces are kept as word characters).
#pragma once

#include <string>
#include <vector>

namespace smezo {

std::string squad_normalize(const std::string& text);
// The whitespace tokens of squad_normalize(text).
std::vector<std::string> squad_tokens(const std::string& text);

// Against one reference.
double exact_match(const std::string& prediction, const std::string& reference);
double token_f1(const std::string& prediction, const std::string& reference);
// The best over several references; an empty list is an error (nothing to score against).
double max_exact_match(const std::string& prediction, const std::vector<std::string>& references);
double max_token_f1(const std::string& prediction, const std::vector<std::string>& references);

}  // namespace smezo
