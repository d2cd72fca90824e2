// Public API for embedding smezo's training in another program: plain option structs in,
// results out. Link build/libsmezo.a (plus -lsentencepiece -fopenmp, and -lcublas -lcudart in
// CUDA builds) and call smezo::train(); docs/examples/train_embedded.cpp is a complete program.
// The command-line `smezo train` is a thin layer over this. Errors throw std::runtime_error
// (smezo::Error) with a one-line message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "smezo/noise.h"  // NoiseKind

namespace smezo {

// The enums' names on the command line and in the run's files are those of `smezo train --help`.
// METHOD_FZOO: FZOO's one-sided batched Rademacher estimate, its step divided by the spread of
// the probe losses (src/train/spsa.h); dense, like MeZO.
enum Method : int { METHOD_MEZO, METHOD_SMEZO, METHOD_RMEZO, METHOD_FZOO };
enum LrSchedule : int { LR_CONSTANT, LR_LINEAR };
// What the probes measure: the task's loss, 1 - the minibatch's candidate accuracy, or 1 - the
// token F1 of greedy generations (generation tasks).
enum Objective : int { OBJECTIVE_LOSS, OBJECTIVE_ACCURACY, OBJECTIVE_F1 };
// Which parameters are tuned (TrainOptions::tune).
enum Tune : int { TUNE_FULL, TUNE_LORA, TUNE_PREFIX };
// PROBES_PAIR: both probes of a step in one forward pass, side by side (one noise generation
// per weight for both); PROBES_SEPARATE: two passes. Same losses and weights bit for bit.
enum ProbePasses : int { PROBES_PAIR, PROBES_SEPARATE };

struct SpsaOptions {
  Method method = METHOD_SMEZO;
  // Unset: the method's default (resolve_defaults): sparsity 0.75 and lr 2e-6 for smezo and
  // rmezo; 0 and 1e-6 for mezo and fzoo, which tune every entry.
  std::optional<double> sparsity;  // fraction of each linear weight NOT tuned (S-MeZO, R-MeZO)
  float eps = 1e-3f;
  std::optional<float> lr;
  LrSchedule schedule = LR_CONSTANT;
  int64_t total_steps = 1;       // for the linear decay (resolve_defaults: TrainOptions::steps)
  float weight_decay = 0.0f;     // applied to tuned entries of weights (not biases or norms)
  uint64_t seed = 42;            // run seed: step seeds and the R-MeZO mask derive from it
  bool freeze_embeddings = false;
  bool freeze_norms = false;
  bool freeze_biases = false;
  bool stochastic_rounding = false;  // round updates stochastically to bf16 storage (CUDA)
  NoiseKind noise = NOISE_AUTO;  // z: NOISE_GAUSSIAN, NOISE_GAUSSIAN_V1 or NOISE_RADEMACHER;
                                 // NOISE_AUTO: gaussian for a new run, and on resume the noise
                                 // the run's seed log names (gaussian-v1 for logs without one)
  int64_t probes = 1;            // probes per step (q): the averaged q-probe SPSA estimate, each
                                 // probe with its own seed; fzoo: its N one-sided probes (>= 2)
};

struct TrainOptions {
  std::string model_path;        // base model; empty: the bundled stories260K
  std::string tokenizer_path;    // empty: tokenizer.model beside the model (bundled one for stories260K)
  std::string device = "cpu";
  std::string dtype;             // weight storage: "" = the device's default (cpu f32, cuda bf16)
  // How a perturbed linear runs on the GPU: "wprime" (W' written to scratch, then cuBLAS),
  // "fused" (cuda/fused_linear.cu: W' formed in shared memory, never written) or "auto" (fused
  // only where a measured crossover table says it is faster; none is measured yet, so auto is
  // wprime). The CPU has one path: "fused" is refused there.
  std::string linear_path = "auto";
  std::string task = "sst2";
  std::string data_dir;          // empty: asset_path("data")
  // Your own data (instead of a built-in task's files): JSON Lines or CSV/TSV with a header,
  // read through the task spec (a JSON file; src/tasks/task_spec.h). train_file is required
  // with them; dev/test files are optional (no dev/test evaluation without them).
  std::string task_spec, train_file, dev_file, test_file;
  Objective objective = OBJECTIVE_LOSS;
  int64_t n_train = 1000, n_dev = 500, n_test = 1000;  // n_dev 0: no dev evaluation
  uint64_t data_seed = 0;        // sampling of the splits; 0: spsa.seed
  int64_t max_len = 256;         // tokens per candidate (context truncated from the left)
  int64_t batch = 16;            // examples per step
  int64_t accumulate = 1;        // minibatches per step (K), all under the same probes, their
                                 // losses averaged: an effective batch of K x batch
  int64_t steps = 20000;
  int64_t eval_every = 500;      // 0: only at the end
  int64_t eval_examples = 0;     // dev examples per periodic evaluation; 0: all
  int64_t checkpoint_every = 0;  // 0: only at the end
  std::string checkpoint_dtype;  // "f32" | "f16" | "bf16"; "": the weights' storage dtype
  int64_t flush_every = 10;      // seed-log durability interval (steps)
  int64_t max_tokens = 8192;     // cap on the workspace tokens per forward: the workspace holds
                                 // batch * max_len tokens up to this (larger batches are chunked)
  bool fixed_batch = false;      // reuse the first minibatch every step (overfitting checks)
  ProbePasses probe_passes = PROBES_PAIR;
  bool skip_test = false;        // no test-set evaluation at the end
  bool resume = false;
  int64_t progress_every = 0;    // plain progress line interval; 0: about 20 lines per run
  std::string out_dir;           // "": runs/TASK-METHOD (TASK: task, or the stem of task_spec)
  double mpi_timeout_s = 1800;   // under mpirun/srun: seconds a rank waits for the others in one
                                 // exchange before the job ends naming the silent rank
  int pipeline_stages = 1;       // under mpirun: split the layers over this many ranks (pipeline
                                 // parallel); ranks / stages data-parallel replicas of the pipeline
  int64_t micro_batches = 0;     // pipeline micro-batches in flight; 0: pipeline_stages on cuda, 1 on cpu
  // Which parameters are tuned: TUNE_FULL (all, less the freezes), TUNE_LORA (only LoRA adapters
  // A (r, in), B (out, r) on the lora_targets linears of every layer, y = W x + (lora_alpha /
  // lora_r)·B A x) or TUNE_PREFIX (only prefix_tokens key/value rows per layer that every query
  // attends to, initialised from the model's own activations); under lora and prefix the base
  // weights stay as loaded and checkpoints are PEFT adapter folders.
  Tune tune = TUNE_FULL;
  int64_t lora_r = 8;
  float lora_alpha = 16.0f;
  std::string lora_targets = "q,v";  // roles among q,k,v,o,gate,up,down (PEFT's LLaMA default)
  int64_t prefix_tokens = 5;         // MeZO's default num_prefix
  SpsaOptions spsa;
};

// The options as a run uses them: what the caller left unset filled in the way `smezo train`
// fills it (spsa.lr and spsa.sparsity by method, data_seed, out_dir, spsa.total_steps = steps).
// train() starts with it; call it to see what a run will use.
TrainOptions resolve_defaults(TrainOptions o);

// Learning rates above this print a warning (stderr) but are used: zeroth-order updates
// lr·g·z at such rates usually blow the weights up (MeZO: 1e-7 to 1e-5; stories260K: ~1e-3).
constexpr double kLrWarnAbove = 0.1;

struct TrainResult {
  int64_t steps_done = 0;
  double first_loss = 0, last_loss = 0;
  double final_dev_acc = -1, best_dev_acc = -1, test_acc = -1;  // -1: not measured
  // generation tasks instead: exact match and token F1 of greedy generations (-1: not measured)
  double final_dev_em = -1, final_dev_f1 = -1, best_dev_f1 = -1, test_em = -1, test_f1 = -1;
  double wall_s = 0;
  // Why the final checkpoint was not written ("" when it was). The run itself is complete:
  // summary.json and the seed log hold it, and `smezo replay` (or --resume) rebuilds the
  // checkpoint; the CLI exits with 3 in this case.
  std::string checkpoint_error;
};

// With pipeline_stages K > 1 the ranks form K-stage pipelines (each rank loads only its
// layers), K × replicas = ranks; same results bit for bit (src/train/pipeline.h).
// Under mpirun or srun with several ranks (a build with MPI), the ranks train data-parallel:
// each scores its share of every batch, rank 0 alone writes the run folder, and the result is
// bit-identical to one process. There an error on any rank ends the whole job (MPI_Abort after
// printing it, naming the rank) instead of throwing.
TrainResult train(const TrainOptions& opts);

}  // namespace smezo
