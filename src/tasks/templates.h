// MeZO's prompt templates and verbalizers (princeton-nlp/MeZO, large_models/templates.py,
// the template each task uses by default in large_models/tasks.py), rewritten in C++.
// The built-in tasks now read their rows through task specs (task_spec.h,
// src/tasks/specs/*.json); these functions stay as the reference the specs are tested against
// (TaskSpec.BuiltInSpecsAreMeZOsTemplatesOnEveryRealRow).
//
// A TaskExample holds one (context, option) text pair per candidate. context + option is
// exactly MeZO's verbalize(sample, candidate).strip(' ') and context is exactly MeZO's
// encode(sample).strip(' '), so a space that the template puts between the prompt and the
// label word belongs to the option (" great", " the toilet filled with water."). The
// candidates are in MeZO's order, and gold indexes them.
//
// Templates (P = premise, H = hypothesis, "\n" = newline):
//   SST-2    "<sentence.strip()> It was" + {" terrible", " great"}            (label 0, 1)
//   RTE      "<P>\nDoes this mean that \"<H>\" is true? Yes or No?\n" + {"Yes", "No"}
//            (entailment, not_entailment)
//   CB       "Suppose <P> Can we infer that \"<H>\"? Yes, No, or Maybe?\n" + {"Yes", "No", "Maybe"}
//            (entailment, contradiction, neutral)
//   BoolQ    "<passage> <Question>?\n" + {"Yes", "No"}  (answer true, false; MeZO's default
//            BoolQTemplateV3: first letter of the question upper-cased, "?" appended if missing)
//   WiC      "Does the word \"<word>\" have the same meaning in these two sentences? Yes, No?\n"
//            "<sentence1>\n<sentence2>\n" + {"No", "Yes"}                     (label false, true)
//   MultiRC  "<paragraph>\nQuestion: <question>\nI found this answer \"<answer>\". Is that "
//            "correct? Yes or No?\n" + {"No", "Yes"}                          (label 0, 1)
//   COPA     "<premise without its final '.'> so" (effect) or " because" (cause), then
//            {" " + choice1, " " + choice2}, the first word of a choice lower-cased unless it
//            is "I" (MeZO's CopaTemplate, capitalization "correct"). Lower-casing is ASCII-only.
#pragma once

#include <string>
#include <vector>

namespace smezo {

struct TaskExample {
  std::vector<std::string> contexts;  // (n_candidates) prompt text of each candidate
  std::vector<std::string> options;   // (n_candidates) verbalized continuation of each candidate
  int gold = 0;                       // index of the correct candidate
  // Generation examples (a task spec of kind "generation", src/tasks/task_spec.h): one
  // candidate, contexts[0] the prompt and options[0] the training completion; evaluation
  // decodes greedily from the prompt and scores the text against these references (exact
  // match, token F1). Empty for classification examples.
  std::vector<std::string> references;
  // Where the example came from, for messages: "<file>:<line>" of its record; "" when unknown.
  std::string source;
};

// Each takes the raw fields of one row and the label already mapped to MeZO's candidate index
// (the order listed above); an out-of-range label throws smezo::Error.
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

}  // namespace smezo
