// MeZO's prompt templates and verbalizers (princeton-nlp/MeZO, large_models/templates.py, each task's
// default in tasks.py) in C++: the reference the built-in task specs (task_spec.h) are tested against.
// A TaskExample holds one (context, option) text pair per candidate: context + option is exactly
// MeZO's verbalize(sample, candidate).strip(' ') and context is encode(sample).strip(' '), so a space
// between the prompt and the label word belongs to the option (" great"). Candidates are in MeZO's
// order; gold indexes them. BoolQ is MeZO's default BoolQTemplateV3 (question's first letter
// upper-cased, "?" appended if missing); COPA's choices get their first word lower-cased unless it is
// "I" (CopaTemplate, capitalization "correct"; ASCII-only).
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

// Each takes one row's raw fields and the label as MeZO's candidate index (out of range: throws).
TaskExample template_sst2(const std::string& sentence, int label);
TaskExample template_rte(const std::string& premise, const std::string& hypothesis, int label);
TaskExample template_cb(const std::string& premise, const std::string& hypothesis, int label);
// answer: BoolQ's true/false (true -> candidate 0 "Yes").
TaskExample template_boolq(const std::string& passage, const std::string& question, bool answer);
TaskExample template_wic(const std::string& word, const std::string& sentence1,
                         const std::string& sentence2, bool label);
TaskExample template_multirc(const std::string& paragraph, const std::string& question,
                             const std::string& answer, int label);
// question: "cause" or "effect" (anything else throws); label: 0 -> choice1, 1 -> choice2.
TaskExample template_copa(const std::string& premise, const std::string& choice1,
                          const std::string& choice2, const std::string& question, int label);

// Python's str.strip() family, used to reproduce MeZO's string handling exactly.
std::string template_strip_spaces(const std::string& s);      // s.strip(' ')
std::string template_strip_whitespace(const std::string& s);  // s.strip()
std::string template_lstrip_whitespace(const std::string& s); // s.lstrip()
std::string template_rstrip_whitespace(const std::string& s); // s.rstrip()

}  // namespace smezo
