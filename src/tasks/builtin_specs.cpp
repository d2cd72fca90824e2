// The built-in tasks' specs, byte for byte src/tasks/specs/<name>.json (a test checks): edit both.
#include "tasks/task_spec.h"

#include "common/check.h"

namespace smezo {

namespace {
const char kSst2[] = R"json({
  "name": "sst2",
  "kind": "classification",
  "prompt": "{sentence|strip} It was",
  "candidates": [" terrible", " great"],
  "label": {"field": "label", "values": ["0", "1"]}
}
)json";
const char kRte[] = R"json({
  "name": "rte",
  "kind": "classification",
  "prompt": "{premise}\nDoes this mean that \"{hypothesis}\" is true? Yes or No?\n",
  "candidates": ["Yes", "No"],
  "label": {"field": "label", "values": ["entailment", "not_entailment"]}
}
)json";
const char kBoolq[] = R"json({
  "name": "boolq",
  "kind": "classification",
  "prompt": "{passage} {question|ensure_question_mark|capitalize_first}\n",
  "candidates": ["Yes", "No"],
  "label": {"field": "label", "values": [true, false]}
}
)json";
const char kWic[] = R"json({
  "name": "wic",
  "kind": "classification",
  "prompt": "Does the word \"{word}\" have the same meaning in these two sentences? Yes, No?\n{sentence1}\n{sentence2}\n",
  "candidates": ["No", "Yes"],
  "label": {"field": "label", "values": [false, true]}
}
)json";
const char kMultirc[] = R"json({
  "name": "multirc",
  "kind": "classification",
  "prompt": "{paragraph}\nQuestion: {question}\nI found this answer \"{answer}\". Is that correct? Yes or No?\n",
  "candidates": ["No", "Yes"],
  "label": {"field": "label", "values": [0, 1]}
}
)json";
const char kCopa[] = R"json({
  "name": "copa",
  "kind": "classification",
  "prompt": "{premise|rstrip|drop_final_period}{question|map:connective}",
  "maps": {"connective": {"cause": " because ", "effect": " so "}},
  "candidates": ["{choice1|lower_first_word}", "{choice2|lower_first_word}"],
  "label": {"field": "label", "values": [0, 1]},
  "train_as_classification": false
}
)json";
const char kCb[] = R"json({
  "name": "cb",
  "kind": "classification",
  "prompt": "Suppose {premise} Can we infer that \"{hypothesis}\"? Yes, No, or Maybe?\n",
  "candidates": ["Yes", "No", "Maybe"],
  "label": {"field": "label", "values": ["entailment", "contradiction", "neutral"]}
}
)json";
}  // namespace

const char* task_spec_builtin_text(TaskId task) {
  switch (task) {
    case TASK_SST2: return kSst2;
    case TASK_RTE: return kRte;
    case TASK_BOOLQ: return kBoolq;
    case TASK_WIC: return kWic;
    case TASK_MULTIRC: return kMultirc;
    case TASK_COPA: return kCopa;
    case TASK_CB: return kCb;
  }
  throw_error("no built-in spec for task id %d", static_cast<int>(task));
}

TaskSpec task_spec_builtin(TaskId task) {
  return task_spec_parse(task_spec_builtin_text(task), std::string("built-in spec of ") + task_name(task));
}

}  // namespace smezo
