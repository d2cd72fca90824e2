// `smezo train`: zeroth-order fine-tuning on a task, end to end (docs/ARCHITECTURE.md,
// docs/training.md). A run directory holds:
//   seed_log.txt     step, seed, g, lr per step (and seed, g per further probe: src/run/seed_log.h);
//                    replay and resume read it
//   metrics.jsonl    one line per step (loss, g, lr) and per evaluation (dev_acc)
//   summary.json     task, method, hyperparameters, accuracies, wall time, steps/s, memory
//   plot.svg         training loss and dev accuracy vs step
//   checkpoint/      Hugging Face model directory (every --checkpoint-every steps and at the end)
// --resume rebuilds the weights from the base model and the seed log, bit for bit: a kill loses at
// most the steps since the last flush. A finished run is left as it is (bar a missing final
// checkpoint); an empty folder starts at step 1; a non-run folder is refused (run/run_dir.h).
// A failed checkpoint is a warning (TrainResult::checkpoint_error for the final one).
#pragma once

#include "smezo/train.h"
#include "tasks/task_data.h"
#include "train/spsa.h"

namespace smezo {

// train() on examples the caller made instead of o.task's (one process); o.task is only recorded.
TrainResult train_on_splits(const TrainOptions& o, const TaskSplits& splits);

}  // namespace smezo
