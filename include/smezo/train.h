// Public API for embedding smezo's training in another program: option structs in, results out.
// Link build/libsmezo.a (plus -lsentencepiece -fopenmp, and -lcublas -lcudart in CUDA builds);
// docs/examples/train_embedded.cpp is a complete program. Errors throw std::runtime_error
// (smezo::Error) with a one-line message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "smezo/device.h"  // Device, DType, LinearPathMode
#include "smezo/noise.h"   // NoiseKind

namespace smezo {

// Names as in `smezo train --help`. METHOD_FZOO: FZOO's one-sided batched Rademacher estimate; dense.
enum Method : int { METHOD_MEZO, METHOD_SMEZO, METHOD_RMEZO, METHOD_FZOO };
enum LrSchedule : int { LR_CONSTANT, LR_LINEAR };
// What the probes measure: the loss, 1 - candidate accuracy, or 1 - token F1 of generations.
enum Objective : int { OBJECTIVE_LOSS, OBJECTIVE_ACCURACY, OBJECTIVE_F1 };
// Which parameters are tuned (TrainOptions::tune).
enum Tune : int { TUNE_FULL, TUNE_LORA, TUNE_PREFIX, TUNE_SCALES };
// PROBES_PAIR: both probes of a step in one forward pass; PROBES_SEPARATE: two passes.
enum ProbePasses : int { PROBES_PAIR, PROBES_SEPARATE };

struct SpsaOptions {
  Method method = METHOD_SMEZO;
  // Unset: the method's default (smezo, rmezo: sparsity 0.75, lr 2e-6; mezo, fzoo: 0, 1e-6).
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
  NoiseKind noise = NOISE_AUTO;  // AUTO: gaussian for a new run, on resume the log's (none: gaussian-v1)
  int64_t probes = 1;            // probes per step, each with its own seed (fzoo: N >= 2)
};

struct TrainOptions {
  std::string model_path;        // base model; empty: the bundled stories260K
  std::string tokenizer_path;    // empty: tokenizer.model beside the model (bundled one for stories260K)
  Device device = DEVICE_CPU;
  std::optional<DType> dtype;    // weight storage; unset: the device's default (cpu f32, cuda bf16)
  LinearPathMode linear_path = LINEAR_MODE_AUTO;  // how a perturbed linear runs on the GPU
  WeightStorage weights = WEIGHTS_AUTO;  // a GGUF's quantised weights: auto packs them unless --tune full
  std::string task = "sst2";
  std::string data_dir;          // empty: asset_path("data")
  // Own data (JSON Lines or CSV/TSV) through a task spec; train_file required, dev/test optional.
  std::string task_spec, train_file, dev_file, test_file;
  Objective objective = OBJECTIVE_LOSS;
  int64_t n_train = 1000, n_dev = 500, n_test = 1000;  // n_dev 0: no dev evaluation
  uint64_t data_seed = 0;        // sampling of the splits; 0: spsa.seed
  int64_t max_len = 256;         // tokens per candidate (context truncated from the left)
  int64_t batch = 16;            // examples per step
  int64_t accumulate = 1;        // minibatches per step under the same probes, losses averaged
  int64_t steps = 20000;
  int64_t eval_every = 500;      // 0: only at the end
  int64_t eval_examples = 0;     // dev examples per periodic evaluation; 0: all
  int64_t checkpoint_every = 0;  // 0: only at the end
  std::optional<DType> checkpoint_dtype;  // unset: the weights' storage dtype
  int64_t flush_every = 10;      // seed-log durability interval (steps)
  int64_t max_tokens = 8192;     // workspace tokens per forward (larger batches are chunked)
  bool fixed_batch = false;      // reuse the first minibatch every step (overfitting checks)
  ProbePasses probe_passes = PROBES_PAIR;
  // A linear weight's update applied inside the next step's first perturbed pass over it (one pass
  // over the weights per step); the same bits as off, the separate update pass.
  bool fold_update = true;
  // --graphs on: each forward pass captured as a CUDA graph and launched (cuda/cuda_graphs.cu); the same
  // bits as off. Off by default until a GPU times it. Refused on the CPU, with pipelines and under MPI.
  bool graphs = false;
  bool skip_test = false;        // no test-set evaluation at the end
  bool resume = false;
  int64_t progress_every = 0;    // plain progress line interval; 0: about 20 lines per run
  std::string out_dir;           // "": runs/TASK-METHOD (TASK: task, or the stem of task_spec)
  double mpi_timeout_s = 1800;   // MPI: seconds to wait in one exchange before ending the job
  int pipeline_stages = 1;       // MPI: ranks per pipeline; ranks / stages replicas
  int64_t micro_batches = 0;     // pipeline micro-batches in flight; 0: pipeline_stages on cuda, 1 on cpu
  // TUNE_FULL: all parameters, less the freezes. TUNE_LORA: only adapters A (r, in), B (out, r) on
  // lora_targets, y = W x + (lora_alpha / lora_r)·B A x. TUNE_PREFIX: only prefix_tokens key/value
  // rows per layer. Under lora and prefix checkpoints are PEFT adapter folders. TUNE_SCALES: below.
  Tune tune = TUNE_FULL;
  int64_t lora_r = 8;
  float lora_alpha = 16.0f;
  std::string lora_targets = "q,v";  // roles among q,k,v,o,gate,up,down (PEFT's LLaMA default)
  int64_t prefix_tokens = 5;         // MeZO's default num_prefix
  // TUNE_SCALES: only the block scales of a block-quantised GGUF kept packed (weights "packed"): one f32
  // master d per block (K-quants: per super-block), and with scales_m Q4_1/Q5_1's m and K-quants' dmin
  // too; the integer codes, the F32 norms and every unquantised tensor stay frozen. The checkpoint is
  // a GGUF of the base's types and size (checkpoint_scales.h).
  bool scales_m = false;
  SpsaOptions spsa;
};

// The options as train() uses them: lr, sparsity, data_seed, out_dir and spsa.total_steps filled in.
TrainOptions resolve_defaults(TrainOptions o);

// --tune scales' defaults, in scale space (absolute, as for any parameter; docs/results-log.md: the sweep).
constexpr float kScalesDefaultEps = 1e-5f;
constexpr float kScalesDefaultLr = 3e-6f;

// Learning rates above this warn (stderr) but are used: they usually blow the weights up.
constexpr double kLrWarnAbove = 0.1;

struct TrainResult {
  int64_t steps_done = 0;
  double first_loss = 0, last_loss = 0;
  double final_dev_acc = -1, best_dev_acc = -1, test_acc = -1;  // -1: not measured
  // generation tasks instead: exact match and token F1 of greedy generations (-1: not measured)
  double final_dev_em = -1, final_dev_f1 = -1, best_dev_f1 = -1, test_em = -1, test_f1 = -1;
  double wall_s = 0;
  // Why the final checkpoint was not written ("" if it was; else exit 3): replay or --resume rebuilds it.
  std::string checkpoint_error;
};

// Under mpirun or srun the ranks train data-parallel or as pipelines, bit-identical to one process;
// rank 0 alone writes the run folder; an error on any rank ends the job (MPI_Abort), not a throw.
TrainResult train(const TrainOptions& opts);

}  // namespace smezo
