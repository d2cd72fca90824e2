// `smezo train`: zeroth-order fine-tuning on a task, end to end (DESIGN.md, "Runs").
//
// A run directory holds:
//   seed_log.txt     step, seed, g, lr per step (src/run/seed_log.h): replay and resume read it
//   metrics.jsonl    one line per step (loss, g, lr) and per evaluation (dev_acc)
//   summary.json     task, method, hyperparameters, accuracies, wall time, steps/s, memory
//   plot.svg         training loss and dev accuracy vs step
//   checkpoint/      Hugging Face model directory (every --checkpoint-every steps and at the end)
// Resume (--resume) rebuilds the weights from the base model and the seed log (the same
// updates, bit for bit), so a killed run loses at most the steps since the last flush.
#pragma once

#include <cstdint>
#include <string>

#include "train/spsa.h"

namespace smezo {

struct TrainOptions {
  std::string model_path;        // base model
  std::string tokenizer_path;    // empty: resolve_tokenizer_path()
  std::string device = "cpu";
  std::string dtype;             // weight storage: "" = the device's default (cpu f32, cuda bf16)
  std::string task = "sst2";
  std::string data_dir;          // empty: asset_path("data")
  int64_t n_train = 1000, n_dev = 500, n_test = 1000;
  uint64_t data_seed = 0;        // sampling of the splits
  int64_t max_len = 256;         // tokens per candidate (context truncated from the left)
  int64_t batch = 16;            // examples per step
  int64_t steps = 20000;
  int64_t eval_every = 500;      // 0: only at the end
  int64_t eval_examples = 0;     // dev examples per periodic evaluation; 0: all
  int64_t checkpoint_every = 0;  // 0: only at the end
  int64_t flush_every = 10;      // seed-log durability interval (steps)
  int64_t max_tokens = 8192;     // workspace tokens per forward (larger batches are chunked)
  bool fixed_batch = false;      // reuse the first minibatch every step (overfitting checks)
  bool skip_test = false;        // no test-set evaluation at the end
  bool resume = false;
  int64_t progress_every = 0;    // plain progress line interval; 0: about 20 lines per run
  std::string out_dir;           // required
  SpsaOptions spsa;              // total_steps is set from steps
};

struct TrainResult {
  int64_t steps_done = 0;
  double first_loss = 0, last_loss = 0;
  double final_dev_acc = -1, best_dev_acc = -1, test_acc = -1;
  double wall_s = 0;
};

TrainResult train(const TrainOptions& opts);

}  // namespace smezo
