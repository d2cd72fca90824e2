// Your own data as a task: a task spec plus train/dev/test data files (task_spec.h, data_file.h) ->
// TaskSplits, --check-data's report, and the export of a built-in task's splits as such files. No
// sampling: each split is its file's first n rows in order (minibatches follow the data seed).
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

// Throws at the first problem (naming file, line, field); files.train may be empty if n_train is 0.
TaskSplits load_task_files(const TaskFiles& files, int64_t n_train, int64_t n_dev, int64_t n_test);

// --check-data's length limit: the tokenizer (none: unchecked) and --max-len (options + BOS must fit).
struct TaskLengthLimit {
  const Tokenizer* tokenizer = nullptr;
  int64_t max_len = 0;
};

// Every problem of the spec and the files (all rows, no caps), one line each in file order.
std::vector<std::string> check_task_files(const TaskFiles& files, const TaskLengthLimit& limit = {});

// A warning that steps will be slow (many candidates), else ""; passes: forwards per example and step.
std::string task_candidates_warning(const TaskSplits& splits, int64_t batch, int64_t passes);

// FNV-1a 64 of the train and dev examples: the seed log records it so a resume refuses other data.
std::string task_examples_fingerprint(const TaskSplits& splits);

// Creates DIR with spec.json and train/dev/test.jsonl (load_task's records); returns a description.
std::string export_task(const std::string& name, uint64_t seed, int64_t n_train, int64_t n_dev, int64_t n_test,
                        const std::string& data_dir, const std::string& out_dir);

}  // namespace smezo
