// Task datasets: reading the GLUE/SuperGLUE files through the built-in task specs (task_spec.h,
// MeZO's templates) and MeZO's train/dev/test sampling. Your own data files: task_files.h.
// Files (under a data directory, by default asset_path("data")):
//   sst2     glue/SST-2/train.tsv, dev.tsv     TSV, header "sentence\tlabel", label 0/1
//   rte      superglue/RTE/train.jsonl, val.jsonl       premise, hypothesis, label (string)
//   cb       superglue/CB/train.jsonl, val.jsonl        premise, hypothesis, label (string)
//   copa     superglue/COPA/train.jsonl, val.jsonl      premise, choice1, choice2, question, label
//   boolq    superglue/BoolQ/val.jsonl                  passage, question, label (bool)
//   wic      superglue/WiC/val.jsonl                    word, sentence1, sentence2, label (bool)
//   multirc  superglue/MultiRC/val.jsonl   passage{text, questions[{question, answers[{text,
//            label}]}]}; one example per answer row.
// JSONL: one JSON object per line; blank lines skipped. Errors name the file and a bad row's 1-based line.
// Sampling (load_task) follows MeZO (large_models/run.py, tasks.py, mezo.sh):
//  * Permutations are exactly numpy's np.random.seed(seed); np.random.permutation(n) (seeds
//    0 .. 2^32-1), so with a train split the rows are exactly MeZO's with --train_set_seed seed.
//  * With a train split (sst2, rte, cb, copa): permute it; train = the first n_train rows, dev = the
//    next n_dev. With fewer than n_train + n_dev rows, dev = min(n_dev, 100, rows / 2) and train =
//    the rows before it, up to n_train (mezo.sh's DEV=100 for CB and COPA). Test: the first n_test
//    rows of a fresh permutation (same seed) of the validation split, as MeZO's sample_subset.
//  * Without one (boolq, wic, multirc: MeZO's train split is not available): train, dev and the
//    test pool are carved disjointly from the validation file, by groups (MultiRC: passages; BoolQ,
//    WiC: one row each). n_train' = n_train, n_dev' = n_dev if they fit in half the pool, else both
//    scaled to fill half (floor(n * rows / 2 / (n_train + n_dev))). One numpy generator (seed)
//    permutes the groups; train takes whole groups until >= n_train' rows, then dev until >= n_dev';
//    the rest is the test pool. The same generator shuffles each part's rows, cut to n_train',
//    n_dev', n_test. split_note says all of this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/assets.h"
#include "tasks/data_file.h"
#include "tasks/templates.h"

namespace smezo {

enum TaskId { TASK_SST2, TASK_RTE, TASK_BOOLQ, TASK_WIC, TASK_MULTIRC, TASK_COPA, TASK_CB };

// "sst2", "RTE", ... (case-insensitive); an unknown name throws, listing the known ones.
TaskId task_parse_name(const std::string& name);
const char* task_name(TaskId task);  // canonical lower-case name
std::vector<std::string> task_names();  // every task's canonical name, in TaskId order
// False for COPA only: it trains on the gold option's tokens (MeZO's --train_as_classification False).
bool task_trains_as_classification(TaskId task);

// One data file through the built-in spec; groups: per example (MultiRC: its passage; else the row).
std::vector<TaskExample> task_read_file(TaskId task, const std::string& path,
                                        std::vector<int64_t>* groups = nullptr);
// The records task_read_file turns into examples, one per example (MultiRC flattened); for --export-data.
DataFile task_read_records(TaskId task, const std::string& path, std::vector<int64_t>* groups = nullptr);
// {train/dev's source file, test's source file} under data_dir (the same file when carved).
std::vector<std::string> task_source_files(TaskId task, const std::string& data_dir);

struct TaskSplits {
  TaskId task = TASK_SST2;              // the built-in task (not meaningful for data files)
  std::string name;                     // canonical name, e.g. "sst2"
  bool train_as_classification = true;  // see task_trains_as_classification
  std::vector<TaskExample> train;
  std::vector<TaskExample> dev;
  std::vector<TaskExample> test;
  // Each chosen example's position in task_read_file()'s output for its source file.
  std::vector<int64_t> train_index, dev_index, test_index;
  int64_t train_source_rows = 0;  // rows in the file train/dev came from
  int64_t test_source_rows = 0;   // rows in the file test came from (same file when carved)
  std::string split_note;         // human-readable: which files, sizes, seed, carving
  // Generation tasks: evaluation decodes at most max_new_tokens greedily, cut at the first stop.
  bool generation = false;
  int64_t max_new_tokens = 32;
  std::vector<std::string> stop;
};

TaskSplits load_task(const std::string& name, uint64_t seed, int64_t n_train = 1000,
                     int64_t n_dev = 500, int64_t n_test = 1000,
                     const std::string& data_dir = asset_path("data"));

// numpy's np.random.seed(seed); np.random.permutation(n) (see above; exposed for tests).
std::vector<int64_t> task_permutation(int64_t n, uint64_t seed);

}  // namespace smezo
