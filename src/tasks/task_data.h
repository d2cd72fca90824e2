// Task datasets: reading the GLUE/SuperGLUE files, applying MeZO's templates (as the built-in
// task specs, task_spec.h), and MeZO's train/dev/test sampling. Your own data files:
// task_files.h.
//
// Files (under a data directory, by default asset_path("data")):
//   sst2     glue/SST-2/train.tsv, dev.tsv     TSV, header "sentence\tlabel", label 0/1
//   rte      superglue/RTE/train.jsonl, val.jsonl       premise, hypothesis, label (string)
//   cb       superglue/CB/train.jsonl, val.jsonl        premise, hypothesis, label (string)
//   copa     superglue/COPA/train.jsonl, val.jsonl      premise, choice1, choice2, question, label
//   boolq    superglue/BoolQ/val.jsonl                  passage, question, label (bool)
//   wic      superglue/WiC/val.jsonl                    word, sentence1, sentence2, label (bool)
//   multirc  superglue/MultiRC/val.jsonl   passage{text, questions[{question, answers[{text,
//            label}]}]}; one example per answer row.
// JSONL: one JSON object per line; blank lines are skipped. Every error names the file and,
// for a bad row, its 1-based line number.
//
// Sampling (load_task), MeZO's protocol (large_models/run.py, tasks.py, mezo.sh).
//  * Permutations are numpy's: np.random.seed(seed); np.random.permutation(n), reproduced
//    exactly (MT19937 seeded by init_genrand, which std::mt19937 shares; Fisher-Yates for
//    i = n-1 .. 1 swapping i with a draw in [0, i] by numpy's masked rejection sampling).
//    Seeds are 0 .. 2^32-1, as numpy requires. So for the tasks with a train split the
//    chosen rows are exactly the ones MeZO trains and tests on with --train_set_seed seed.
//  * Tasks with a train split (sst2, rte, cb, copa): permute the train split; train = the
//    first n_train rows, dev = the next n_dev (MeZO samples n_train + n_dev rows and keeps
//    the last n_dev as dev). When the split holds fewer than n_train + n_dev rows,
//    dev = min(n_dev, 100, rows / 2) and train = the rows before it, up to n_train (MeZO's
//    mezo.sh uses DEV=100 for CB and COPA: 150/100 and 300/100 rows).
//    Test: the first n_test rows of a fresh permutation of the validation split with the same
//    seed (the whole split when smaller), as MeZO's sample_subset("valid", seed, num_eval).
//  * Tasks without a full train split here (boolq, wic, multirc): MeZO trains on the official
//    train split, which is not available; the validation file is the only labelled pool, so
//    train/dev are carved from it and the rest is the test pool, disjointly. Rows are grouped
//    (MultiRC: by passage, so no passage is shared between train, dev and test; BoolQ, WiC:
//    one row per group). Sizes: n_train' = n_train and n_dev' = n_dev when they fit in half
//    the pool; otherwise both are scaled down to fill half of it (floor of n * rows / 2 /
//    (n_train + n_dev)), leaving about half of the pool for testing. One generator (numpy's,
//    seeded with seed) permutes the groups; train takes whole groups until it holds
//    >= n_train' rows, then dev until >= n_dev'; the remaining groups form the test pool. The
//    same generator then shuffles each part's rows, which are cut to n_train', n_dev', n_test.
//    split_note says all of this.
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
// All but COPA train "as classification" (cross-entropy over candidate scores); COPA trains
// on the gold option's tokens (MeZO's --train_as_classification False).
bool task_trains_as_classification(TaskId task);
// Whether the task has a full train split here (false: train/dev are carved from val).
bool task_has_train_split(TaskId task);

// Reads one data file of the task and applies the template. groups, when given, receives one
// group id per example (MultiRC: the passage's position in the file; others: the row index).
// The examples come from the task's built-in spec (task_spec.h, src/tasks/specs/<name>.json).
std::vector<TaskExample> task_read_file(TaskId task, const std::string& path,
                                        std::vector<int64_t>* groups = nullptr);
// The records task_read_file turns into examples, one per example in the same order
// (MultiRC's passages flattened to paragraph, question, answer, label); `smezo train
// --export-data` writes these.
DataFile task_read_records(TaskId task, const std::string& path, std::vector<int64_t>* groups = nullptr);
// {file train/dev are sampled from, file test is sampled from} under data_dir (the same file
// when train/dev are carved from the validation set).
std::vector<std::string> task_source_files(TaskId task, const std::string& data_dir);

struct TaskSplits {
  TaskId task = TASK_SST2;              // the built-in task (not meaningful for data files)
  std::string name;                     // canonical name, e.g. "sst2"
  bool train_as_classification = true;  // see task_trains_as_classification
  std::vector<TaskExample> train;
  std::vector<TaskExample> dev;
  std::vector<TaskExample> test;
  // Position of each chosen example in task_read_file()'s output for its source file
  // (train/dev: the train file, or the validation file when carved; test: the validation file).
  std::vector<int64_t> train_index, dev_index, test_index;
  int64_t train_source_rows = 0;  // rows in the file train/dev came from
  int64_t test_source_rows = 0;   // rows in the file test came from (same file when carved)
  std::string split_note;         // human-readable: which files, sizes, seed, carving
  // Generation tasks (every example has references): evaluation decodes greedily at most
  // max_new_tokens tokens after the prompt and cuts the text at the first stop string.
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
