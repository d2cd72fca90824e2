// MeZO's prompt templates and verbalizers (princeton-nlp/MeZO, large_models/templates.py, each task's
// default in tasks.py) in C++: the reference the built-in task specs (src/tasks/task_spec.h) are tested
// against, as TaskExamples (src/tasks/templates.h says how context and option split). BoolQ is MeZO's
// default BoolQTemplateV3 (question's first letter upper-cased, "?" appended if missing); COPA's choices
// get their first word lower-cased unless it is "I" (CopaTemplate, capitalization "correct"; ASCII-only).
#pragma once

#include <string>

#include "tasks/templates.h"

namespace smezo_test {

using smezo::TaskExample;

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

}  // namespace smezo_test
