// Model-level benchmark (`smezo bench --shape NAME`): a random-weight model of a
// named architecture built in memory (no files; weights generated tensor by tensor as they
// load), then per sequence length T, on `batch` random sequences of T tokens:
//   forward      Model::forward, unperturbed, one logit row per sequence (the last)
//   mezo-step    one SPSA step of MeZO: both probes (a probe pair, or two passes with
//                --probes separate) and the update
//   smezo-step   the same for S-MeZO at sparsity 0.75 (thresholds fixed before timing)
// What the steps tune (issue 43's GGUF modes): every weight (tune full), or over a base kept in random
// GGUF blocks of `quant` (--weights packed, random_weights.h) the blocks' f32 master scales (tune scales)
// or rank-8 LoRA adapters on q and v (tune lora, also over an unquantised base).
// Timing: `warmup` untimed runs, then `reps` timed ones, the median reported; the backend is
// synchronised before and after each (a one-float download, which waits for the device's
// stream), so a time is the wall clock of the whole phase, host launches included.
// Output: one JSON object per (T, phase) on stdout (JSON lines), with ms (median, min),
// tokens/s (batch*T per forward, per probe for a step), the backend's allocated bytes and,
// on CUDA, the device memory in use at the end. --profile adds, per phase, the split of a
// step into GEMM, noise, attention and rest (bench/timing_backend.h's ProfileSplit: on stderr
// as ms and shares, and as the JSON line's "profile" object), then the time per op kind, all
// means over the timed reps; on the CPU exact wall time per op (the CUDA breakdown comes from
// Nsight: NVTX ranges name each phase when built with `make profile`). For a CUDA profiler,
// profile_rep brackets the last timed rep of each phase with cudaProfilerStart/Stop
// (bench/profiler_region.h), so `ncu --profile-from-start off` or nsys's cudaProfilerApi capture
// range see exactly one forward or one step. phases picks which phases run; weight_block_mib runs
// the steps once per W' block size (cuda_plan.h's knob, the JSON line's "weight_block_mib").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "smezo/model_config.h"
#include "smezo/noise.h"
#include "smezo/train.h"  // ProbePasses, Tune

namespace smezo {

// The named shapes: llama-7b, mistral-7b, opt-13b, llama-30b, smollm2-135m, tiny. Throws
// smezo::Error naming the choices for another name.
ModelConfig model_bench_shape(const std::string& name);
std::vector<std::string> model_bench_shape_names();

struct ModelBenchOptions {
  std::string shape = "tiny";
  Device device = DEVICE_CPU;
  std::optional<DType> dtype;              // unset: the device's default
  LinearPathMode linear_path = LINEAR_MODE_AUTO;  // --linear-path (make_backend)
  int64_t batch = 16;                      // sequences per probe
  std::vector<int64_t> seqs = {64, 160, 256};
  int reps = 5;
  int warmup = 1;
  std::vector<ProbePasses> probes = {PROBES_PAIR};  // the steps timed each way listed (--probes both: two)
  NoiseKind noise = NOISE_GAUSSIAN;
  bool fold_update = true;                 // --fold-update: the steps fold the linear weights' updates
  bool graphs = false;                     // --graphs on: each forward pass as a CUDA graph (make_backend)
  bool profile = false;
  bool profile_rep = false;                // CUDA: the last timed rep of each phase inside a profiler region
  std::vector<std::string> phases = {"forward", "mezo-step", "smezo-step"};
  std::vector<int64_t> weight_block_mib;   // CUDA: the steps at each W' block size; {}: the process's
  uint32_t quant = 0;                      // a GGUF block type (GGUF_TYPE_Q4_K, ...) kept packed; 0: none
  Tune tune = TUNE_FULL;                   // full, scales (needs quant) or lora
  uint64_t seed = 1234;
  std::string json_path;                   // also write the JSON lines here; "" = stdout only
};

// Runs the benchmark, printing JSON lines to stdout (and to json_path); returns 0.
int run_model_bench(const ModelBenchOptions& options);

}  // namespace smezo
