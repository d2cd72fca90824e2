// Task specs: how a data record (data_file.h) becomes a TaskExample. One code path for your
// own data (smezo train --task-spec FILE) and for the built-in tasks, whose specs ship with
// the project (src/tasks/specs/*.json, compiled in: task_spec_builtin).
//
// A spec is a JSON object:
//   "name"      the task's name in logs and summaries (required)
//   "kind"      "classification" (default) or "generation"
//   "prompt"    a template over the record's fields, e.g. "{sentence|strip} It was"
//   "maps"      optional named value maps for the map filter: {"NAME": {"value": "text", ...}}
// classification:
//   "candidates" a list of templates, one per candidate (the verbalizers, e.g. [" terrible",
//                " great"], or per-record text like [" {choice1}", " {choice2}"]), or
//                {"field": F, "prefix": " "}: the record's field F is a list of strings, the
//                options, each after the prefix (default "")
//   "label"      {"field": F, "values": [v0, v1, ...]}: the record's F names the gold candidate,
//                v_i meaning candidate i (matched by text: "1", 1 and true/"true" as written;
//                the values are strings, integers or booleans, no two the same).
//                Without "values": F is the candidate's 0-based index, or (with a candidate
//                field) the gold option's text. An index is a number or a string of its
//                decimal digits ("0", "12"; not "01", "+1" or " 1"), the same rule in every
//                format: CSV and TSV values are strings, so "0" has to be index 0 there, and it
//                is in JSON Lines too. A string that is one option's text and another
//                option's index is refused (give the index as a JSON number).
//   "train_as_classification"  true (default): the loss is the cross-entropy over the
//                candidates' mean option-token log-probs; false: the gold option's tokens
//                (MeZO's COPA)
// generation:
//   "completion_field"   F: a string, or a list of strings (the first is the training
//                        completion; all of them are the references evaluation scores against)
//   "completion_prefix"  text put between the prompt and the completion, e.g. " " (default "")
//   "max_new_tokens"     greedy decoding bound at evaluation (default 32)
//   "stop"               list of stop strings (default none)
// Unknown keys, unknown filters and a malformed template are errors naming the spec file.
// Candidates must be told apart: two fixed candidates with the same text (trailing spaces
// aside) or two equal label values are errors naming the spec; a record whose candidates
// render the same text, or whose option list holds one option or one twice, is an error
// naming the record (file:line). With such candidates training sits at the loss of a coin
// toss and accuracy measures nothing.
//
// Templates: "{field}" is the record's field (a string); "{field|f1|f2}" applies filters left
// to right; "{{" and "}}" are literal braces. Filters (Python semantics, ASCII case rules):
//   strip                 str.strip()                 rstrip   str.rstrip()
//   capitalize_first      first character upper-cased
//   ensure_question_mark  "?" appended unless the text ends with one
//   drop_final_period     one final "." removed
//   lower_first_word      first word lower-cased unless it is "I" (MeZO's COPA)
//   map:NAME              replaced by maps[NAME][text]; a value not in the map is an error
//
// Examples, as templates.h: context = prompt with spaces stripped from both ends; option =
// what (prompt + candidate), stripped the same way, holds beyond the context, so a space
// between the prompt and the label word belongs to the option. Generation examples have one
// candidate (the completion) and references.
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
  int64_t max_new_tokens = 32;
  std::vector<std::string> stop;
};

TaskSpec task_spec_parse(const std::string& json_text, const std::string& origin);
TaskSpec task_spec_read(const std::string& path);
// The spec of a built-in task, and its JSON text (what src/tasks/specs/<name>.json holds).
TaskSpec task_spec_builtin(TaskId task);
const char* task_spec_builtin_text(TaskId task);

// The record fields the spec reads, in first-use order.
std::vector<std::string> task_spec_fields(const TaskSpec& spec);

// A value's text for label matching: strings as they are, integers in decimal, booleans
// "true"/"false"; other values "" (never match).
std::string task_spec_value_text(const nlohmann::json& v);

// The example of one record; errors read "<path>:<line>: ..." naming the field.
TaskExample task_spec_example(const TaskSpec& spec, const DataFile& file, const DataRow& row);

// How a message names candidate i of the spec's examples: 'field "F" (the completion)',
// 'field "F", option i' or 'candidate i (template "...")'.
std::string task_spec_candidate_name(const TaskSpec& spec, size_t i);

// Puts the spec's task-level settings on splits (name, generation, stop, ...).
void task_spec_apply(const TaskSpec& spec, TaskSplits* splits);

}  // namespace smezo
