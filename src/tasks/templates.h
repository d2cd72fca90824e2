// A task's example as prompt texts (TaskExample), and Python's strip family, which the task specs
// (task_spec.h) use to render MeZO's templates exactly. A TaskExample holds one (context, option) text
// pair per candidate: context + option is exactly MeZO's verbalize(sample, candidate).strip(' ') and
// context is encode(sample).strip(' '), so a space between the prompt and the label word belongs to the
// option (" great"). Candidates are in MeZO's order; gold indexes them. MeZO's templates themselves,
// written out in C++, are the tests' reference (tests/mezo_templates.h).
#pragma once

#include <string>
#include <vector>

namespace smezo {

struct TaskExample {
  std::vector<std::string> contexts;  // (n_candidates) prompt text of each candidate
  std::vector<std::string> options;   // (n_candidates) verbalized continuation of each candidate
  int gold = 0;                       // index of the correct candidate
  // Generation examples: the references greedy decoding is scored against; empty for classification.
  std::vector<std::string> references;
  std::string source;  // "<file>:<line>" of its record, for messages; "" when unknown
};

// Python's str.strip() family, used to reproduce MeZO's string handling exactly.
std::string template_strip_spaces(const std::string& s);      // s.strip(' ')
std::string template_strip_whitespace(const std::string& s);  // s.strip()
std::string template_lstrip_whitespace(const std::string& s); // s.lstrip()
std::string template_rstrip_whitespace(const std::string& s); // s.rstrip()

}  // namespace smezo
