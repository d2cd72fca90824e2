// Task specs: how a data record (data_file.h) becomes a TaskExample, for your own data (--task-spec
// FILE) and the built-in tasks alike (src/tasks/specs/*.json, compiled in). A spec is a JSON object:
//   "name"      the task's name in logs and summaries (required)
//   "kind"      "classification" (default) or "generation"
//   "prompt"    a template over the record's fields, e.g. "{sentence|strip} It was"
//   "maps"      optional named value maps for the map filter: {"NAME": {"value": "text", ...}}
// classification:
//   "candidates" a list of templates, one per candidate ([" terrible", " great"], or per record
//                [" {choice1}", " {choice2}"]), or {"field": F, "prefix": " "}: the record's F is
//                a list of strings, the options, each after the prefix (default "")
//   "label"      {"field": F, "values": [v0, v1, ...]}: F's value names candidate i when its text matches
//                v_i ("1", 1 and true/"true" as written; strings, integers or booleans, all distinct).
//                Without "values": F is the 0-based index or (with a candidate field) the gold option's
//                text. An index is a number or a string of decimal digits ("0", "12"; not "01", "+1",
//                " 1"). A string that is one option's text and another's index is refused (use a number).
//   "train_as_classification"  true (default): cross-entropy over the candidates' mean
//                option-token log-probs; false: the gold option's tokens (MeZO's COPA)
// generation:
//   "completion_field"   F: a string or a list of strings (the first is the training completion;
//                        all are the references evaluation scores against)
//   "completion_prefix"  text between the prompt and the completion, e.g. " " (default "")
//   "max_new_tokens"     greedy decoding bound at evaluation (default 32; at most 1048576)
//   "stop"               list of stop strings (default none)
// Errors name the spec (unknown keys or filters, a malformed template, fixed candidates equal up
// to trailing spaces, equal label values) or the record (file:line: candidates rendering the same
// text, an option list with one option or a repeat: training would sit at coin-toss loss).
// Templates: "{field}" is the record's (string) field; "{field|f1|f2}" applies filters left to right;
// "{{" and "}}" are literal braces. Filters (Python semantics, ASCII case rules):
//   strip  str.strip()    rstrip  str.rstrip()    capitalize_first  first character upper-cased
//   ensure_question_mark  "?" appended unless already last    drop_final_period  one final "." removed
//   lower_first_word      first word lower-cased unless it is "I" (MeZO's COPA)
//   map:NAME              replaced by maps[NAME][text]; a value not in the map is an error
// Examples are (context, option) pairs as in templates.h; a generation example has one: the completion.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tasks/data_file.h"
#include "tasks/task_data.h"
#include "tasks/templates.h"

namespace smezo {

enum TaskSpecKind { SPEC_CLASSIFICATION, SPEC_GENERATION };

struct SpecTemplatePiece {
  std::string literal;               // text (when field is empty)
  std::string field;                 // record field to insert
  std::vector<std::string> filters;  // applied left to right ("map:NAME" keeps its argument)
};

struct SpecTemplate {
  std::string text;                       // as written in the spec
  std::vector<SpecTemplatePiece> pieces;  // parsed
};

constexpr int64_t kSpecMaxNewTokens = int64_t{1} << 20;

struct TaskSpec {
  std::string origin;  // the spec file (or "built-in spec of sst2") for messages
  std::string name;
  TaskSpecKind kind = SPEC_CLASSIFICATION;
  SpecTemplate prompt;
  std::map<std::string, std::map<std::string, std::string>> maps;
  // classification
  std::vector<SpecTemplate> candidates;  // fixed candidates (empty when candidates_field is set)
  std::string candidates_field;          // per-record options
  std::string candidates_prefix;         // put before each per-record option, e.g. " "
  std::string label_field;
  std::vector<std::string> label_values;  // text form of each candidate's label; empty: an index
  bool train_as_classification = true;
  // generation
  std::string completion_field;
  std::string completion_prefix;
  int64_t max_new_tokens = 32;  // 1 .. kSpecMaxNewTokens
  std::vector<std::string> stop;
};

TaskSpec task_spec_parse(const std::string& json_text, const std::string& origin);
TaskSpec task_spec_read(const std::string& path);
// The spec of a built-in task, and its JSON text (what src/tasks/specs/<name>.json holds).
TaskSpec task_spec_builtin(TaskId task);
const char* task_spec_builtin_text(TaskId task);

// The record fields the spec reads, in first-use order.
std::vector<std::string> task_spec_fields(const TaskSpec& spec);

// Label-matching text: strings as is, integers in decimal, booleans "true"/"false", else "" (no match).
std::string task_spec_value_text(const nlohmann::json& v);

// The example of one record; errors read "<path>:<line>: ..." naming the field.
TaskExample task_spec_example(const TaskSpec& spec, const DataFile& file, const DataRow& row);

// How messages name candidate i: 'field "F" (the completion)', 'field "F", option i', 'candidate i (template "...")'.
std::string task_spec_candidate_name(const TaskSpec& spec, size_t i);

// Puts the spec's task-level settings on splits (name, generation, stop, ...).
void task_spec_apply(const TaskSpec& spec, TaskSplits* splits);

}  // namespace smezo
