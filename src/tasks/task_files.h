// Your own data as a task: a task spec plus train/dev/test data files (task_spec.h,
// data_file.h) -> TaskSplits, --check-data's report of every problem, and the export of a
// built-in task's sampled splits as such files.
//
// From files there is no sampling: each split is the file's rows in order, the first n of
// them (n_train, n_dev, n_test). Minibatch order still follows the run's data seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tasks/task_data.h"
#include "tokenizer/tokenizer.h"

namespace smezo {

struct TaskFiles {
  std::string spec;               // task spec (JSON)
  std::string train, dev, test;   // data files; dev/test may be empty (no such split)
};

// Throws at the first problem (one line naming file, line and field). files.train may be
// empty only when n_train is 0 (evaluation without demonstrations).
TaskSplits load_task_files(const TaskFiles& files, int64_t n_train, int64_t n_dev, int64_t n_test);

// What --check-data checks candidate lengths against: the tokenizer training would use, and
// --max-len. Every candidate's option tokens (the verbalizer, per-record option or
// completion: never cut, task_encode.h), with BOS when the tokenizer wants one, must fit in
// max_len. No tokenizer: lengths are not checked.
struct TaskLengthLimit {
  const Tokenizer* tokenizer = nullptr;
  int64_t max_len = 0;
};

// Every problem of the spec and the files, one line each, in file order; empty: all clean.
// Reads all rows (no caps): a problem anywhere in a file is reported.
std::vector<std::string> check_task_files(const TaskFiles& files, const TaskLengthLimit& limit = {});

// One line warning that a training step will be slow because the examples have many
// candidates (each candidate of each example is one sequence of every forward pass), else "".
// passes: forward passes per example and step (2 per SPSA probe, times --accumulate).
std::string task_candidates_warning(const TaskSplits& splits, int64_t batch, int64_t passes);

// A hash (FNV-1a 64, 16 hex digits) of the train and dev examples' text, candidates and gold:
// the seed log records it so a resume refuses other data, whatever file or task it came from
// (an export of a built-in task hashes as the task).
std::string task_examples_fingerprint(const TaskSplits& splits);

// Writes DIR/spec.json (the task's built-in spec) and DIR/train.jsonl, dev.jsonl, test.jsonl
// holding the records load_task(name, seed, ...) samples, in its order, so that training
// from them sees the same examples; returns a one-line description. Creates DIR.
std::string export_task(const std::string& name, uint64_t seed, int64_t n_train, int64_t n_dev, int64_t n_test,
                        const std::string& data_dir, const std::string& out_dir);

}  // namespace smezo
