// Model-level benchmark (see model_bench.h).
#include "bench/model_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/profiler_region.h"
#include "bench/random_weights.h"
#include "bench/timing_backend.h"
#include "common/check.h"
#include "common/device_names.h"
#include "common/stopwatch.h"
#include "cuda/cuda_plan.h"  // the W' block size (host code; also in a build without CUDA)
#include "formats/gguf.h"  // gguf_type_name
#include "model/model.h"
#include "run/metrics_log.h"
#include "run/summary.h"
#include "setup/model_setup.h"
#include "train/option_names.h"
#include "train/spsa.h"

#ifdef SMEZO_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace smezo {

namespace {

// An NVTX range for Nsight (`make profile`); nothing otherwise.
struct PhaseRange {
  explicit PhaseRange(const char* name) {
#ifdef SMEZO_NVTX
    nvtxRangePushA(name);
#else
    (void)name;
#endif
  }
  ~PhaseRange() {
#ifdef SMEZO_NVTX
    nvtxRangePop();
#endif
  }
};

ModelConfig llama_like(int64_t dim, int64_t hidden, int64_t layers, int64_t heads, int64_t kv_heads,
                       int64_t vocab, int64_t max_seq) {
  ModelConfig c;
  c.family = "llama";
  c.dim = dim;
  c.hidden_dim = hidden;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = dim / heads;
  c.vocab_size = vocab;
  c.max_seq_len = max_seq;
  return c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Waits for the backend's queued work (a one-float download synchronises the CUDA stream).
struct Sync {
  Backend& backend;
  Tensor one;
  explicit Sync(Backend& b) : backend(b), one(b.alloc(1, 1, DTYPE_F32)) {}
  void operator()() {
    float v;
    backend.download(one, &v);
  }
};

// Mean over rows of -log softmax(logits)[target]: the step's loss (any scalar of the logits
// costs the same; this one is what a classification loss computes).
double mean_nll(const std::vector<float>& logits, int64_t row0, int64_t rows, int64_t vocab,
                const std::vector<int32_t>& targets) {
  double total = 0.0;
  for (int64_t r = 0; r < rows; r++) {
    const float* l = logits.data() + (row0 + r) * vocab;
    const float mx = *std::max_element(l, l + vocab);
    double s = 0.0;
    for (int64_t v = 0; v < vocab; v++) s += std::exp(static_cast<double>(l[v] - mx));
    total += -(static_cast<double>(l[targets[r]] - mx) - std::log(s));
  }
  return total / static_cast<double>(rows);
}

// --profile's split in the JSON line: ms per step of each part (gemm + noise + attention + rest = step).
nlohmann::json profile_json(const ProfileSplit& p) {
  return {{"step_ms", p.step_ms}, {"gemm_ms", p.gemm_ms}, {"noise_ms", p.noise_ms}, {"attention_ms", p.attention_ms},
          {"rest_ms", p.rest_ms}, {"outside_ops_ms", p.outside_ops_ms}};
}

bool has_phase(const ModelBenchOptions& o, const std::string& phase) {
  return std::find(o.phases.begin(), o.phases.end(), phase) != o.phases.end();
}

void check_options(const ModelBenchOptions& o, const ModelConfig& config) {
  SMEZO_REQUIRE(o.batch > 0 && o.reps > 0 && o.warmup >= 0 && !o.seqs.empty(),
                "bench: --batch, --reps and --seq must be positive");
  SMEZO_REQUIRE(!o.probes.empty(), "bench: no probe mode to time");
  for (int64_t t : o.seqs)
    SMEZO_REQUIRE(t >= 1 && t <= config.max_seq_len, "bench: --seq %lld: shape %s takes 1..%lld tokens",
                  (long long)t, o.shape.c_str(), (long long)config.max_seq_len);
  SMEZO_REQUIRE(!o.graphs || !o.profile, "bench: --profile times each op on its own, which a CUDA graph "
                "hides ---> HINT: pass --graphs off with --profile");
  SMEZO_REQUIRE(!o.phases.empty(), "bench: --phases names none (choose forward, mezo-step, smezo-step)");
  for (const std::string& p : o.phases)
    SMEZO_REQUIRE(p == "forward" || p == "mezo-step" || p == "smezo-step",
                  "bench: --phases '%s' (choose forward, mezo-step, smezo-step)", p.c_str());
  SMEZO_REQUIRE(o.device == DEVICE_CUDA || (o.weight_block_mib.empty() && !o.profile_rep),
                "bench: --weight-block-mib and --profile-rep are for --device cuda (the W' block and the CUDA "
                "profiler's region are the CUDA backend's)");
  for (int64_t mib : o.weight_block_mib)
    SMEZO_REQUIRE(mib >= 1 && mib <= 1024, "bench: --weight-block-mib %lld (1 to 1024 MiB)", (long long)mib);
  SMEZO_REQUIRE(o.tune == TUNE_FULL || o.tune == TUNE_SCALES || o.tune == TUNE_LORA,
                "bench: --tune %s is not benched (choose full, scales or lora)", enum_name(tune_names(), o.tune));
  SMEZO_REQUIRE(o.quant == 0 || o.tune != TUNE_FULL, "bench: --quant keeps the weights in their blocks, which "
                "full-weight MeZO does not (it updates every weight) ---> HINT: add --tune scales or --tune lora");
  SMEZO_REQUIRE(o.tune != TUNE_SCALES || o.quant != 0, "bench: --tune scales tunes the scales of GGUF blocks "
                "---> HINT: add --quant, e.g. --quant Q4_K");
  if (o.quant == 0) return;
  const int64_t block = gguf_type_traits(o.quant)->block_size;
  SMEZO_REQUIRE(config.dim % block == 0 && config.hidden_dim % block == 0, "bench: --quant %s packs %lld values a "
                "block, which do not divide shape %s's rows (%lld and %lld values) ---> HINT: a 32-value type "
                "(Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) for this shape", gguf_type_name(o.quant), (long long)block,
                o.shape.c_str(), (long long)config.dim, (long long)config.hidden_dim);
}

// Restores the process's W' block size when the sweep ends (or throws).
struct WeightBlockRestore {
  int64_t saved = cuda_weight_chunk_bytes();
  ~WeightBlockRestore() { set_cuda_weight_chunk_bytes(saved); }
};

}  // namespace

std::vector<std::string> model_bench_shape_names() {
  return {"llama-7b", "mistral-7b", "opt-13b", "llama-30b", "smollm2-135m", "tiny"};
}

ModelConfig model_bench_shape(const std::string& name) {
  if (name == "llama-7b") return llama_like(4096, 11008, 32, 32, 32, 32000, 2048);
  if (name == "llama-30b") return llama_like(6656, 17920, 60, 52, 52, 32000, 2048);
  if (name == "mistral-7b") {
    ModelConfig c = llama_like(4096, 14336, 32, 32, 8, 32000, 4096);
    c.family = "mistral";
    c.sliding_window = 4096;
    return c;
  }
  if (name == "opt-13b") {
    ModelConfig c = llama_like(5120, 20480, 40, 40, 40, 50272, 2048);
    c.family = "opt";
    c.position = POSITION_LEARNED;
    c.norm_kind = NORM_LAYER;
    c.mlp_kind = MLP_RELU;
    c.qkv_bias = c.o_bias = c.mlp_bias = true;
    c.tied_lm_head = true;
    c.learned_pos_offset = 2;
    return c;
  }
  if (name == "smollm2-135m") {
    ModelConfig c = llama_like(576, 1536, 30, 9, 3, 49152, 8192);
    c.tied_lm_head = true;
    c.rope_theta = 100000.0f;
    return c;
  }
  if (name == "tiny") return llama_like(64, 128, 2, 4, 2, 256, 512);
  std::string names;
  for (const std::string& n : model_bench_shape_names()) names += (names.empty() ? "" : ", ") + n;
  throw_error("unknown model shape '%s' (choose %s)", name.c_str(), names.c_str());
}

int run_model_bench(const ModelBenchOptions& o) {
  const ModelConfig config = model_bench_shape(o.shape);
  check_options(o, config);
  const int64_t max_t = *std::max_element(o.seqs.begin(), o.seqs.end());
  const WeightBlockRestore restore_block;
  std::vector<int64_t> blocks = o.weight_block_mib;  // in MiB; 0: the process's own
  if (blocks.empty()) blocks.push_back(0);
  const DType storage = storage_dtype(o.device, o.dtype);
  std::unique_ptr<Backend> inner = make_backend(o.device, o.linear_path, o.graphs);
  // --profile wraps the backend to time each op (CPU: exact wall time per op; see timing_backend.h)
  std::unique_ptr<TimingBackend> timed;
  if (o.profile) timed = std::make_unique<TimingBackend>(*inner, /*split_linear_noise=*/true);
  Backend& backend = timed ? static_cast<Backend&>(*timed) : *inner;
  const Stopwatch load_timer;
  // the workspace holds a probe pair's two copies of the longest batch
  Model model(random_weight_source(config, o.seed, o.shape, o.quant), backend, storage, 2 * o.batch * max_t,
              2 * o.batch);
  if (o.tune == TUNE_LORA) model.add_lora(LoraOptions{}, o.seed);  // rank 8 on q and v, as train's defaults
  if (o.tune == TUNE_SCALES) model.add_scales(/*with_m=*/false);
  const double load_s = load_timer.seconds();
  Sync sync(backend);

  std::unique_ptr<MetricsLog> json_file;  // --json: the same lines as stdout, each flushed
  if (!o.json_path.empty()) json_file = std::make_unique<MetricsLog>(o.json_path, /*append=*/false);

  uint64_t rng = o.seed;
  auto next = [&rng] { return rng = splitmix64(rng); };
  for (int64_t T : o.seqs) {
    ForwardBatch batch;
    std::vector<int32_t> targets;
    for (int64_t b = 0; b < o.batch; b++) {
      batch.seq_lens.push_back(T);
      for (int64_t i = 0; i < T; i++) batch.tokens.push_back(static_cast<int32_t>(next() % config.vocab_size));
      batch.logit_rows.push_back(b * T + T - 1);
      targets.push_back(static_cast<int32_t>(next() % config.vocab_size));
    }
    std::vector<float> logits;
    const int64_t V = config.vocab_size, B = o.batch;
    double sum_ms = 0;  // of the timed reps, for the profile
    auto report = [&](const char* phase, const char* probes, const std::vector<double>& ms) {
      nlohmann::json j;
      j["bench"] = "model";
      j["shape"] = o.shape;
      j["device"] = device_name(o.device);
      j["dtype"] = dtype_name(storage);
      j["quant"] = o.quant ? gguf_type_name(o.quant) : "none";  // the linear weights' GGUF blocks, kept packed
      j["tune"] = enum_name(tune_names(), o.tune);
      j["batch"] = B;
      j["seq"] = T;
      j["phase"] = phase;
      if (probes) j["probes"] = probes;
      j["noise"] = noise_name(o.noise);
      j["linear_path"] = linear_mode_name(o.linear_path);  // --linear-path: the perturbed linear's GPU path
      if (o.device == DEVICE_CUDA) j["weight_block_mib"] = cuda_weight_chunk_bytes() / 1048576.0;  // W' rows per block
      if (o.profile_rep) j["profiled_rep"] = o.warmup + o.reps;  // the rep inside the profiler's region
      j["fold_update"] = o.fold_update;
      j["graphs"] = o.graphs;
      j["reps"] = o.reps;
      j["ms"] = median(ms);
      j["ms_min"] = *std::min_element(ms.begin(), ms.end());
      j["tokens_per_s"] = static_cast<double>(B * T) / (median(ms) / 1e3);
      j["parameters"] = model.parameter_count();
      j["backend_allocated_MB"] = backend.bytes_allocated() / 1e6;
      j["load_s"] = load_s;
      if (timed) j["profile"] = profile_json(profile_split(timed->ms(), sum_ms, o.reps));
      summary_add_standard_fields(&j);  // peak host RSS, host name, time
      j.erase("written_at");
      std::printf("%s\n", j.dump().c_str());
      std::fflush(stdout);
      if (json_file) json_file->write(j);
    };
    auto time_reps = [&](const char* range, const std::function<void(int)>& fn) {
      std::vector<double> ms;
      for (int r = 0; r < o.warmup + o.reps; r++) {
        sync();
        if (timed && r == o.warmup) timed->reset();  // the profile sums the timed reps
        const bool profiled = o.profile_rep && r == o.warmup + o.reps - 1;
        if (profiled) profiler_region_start();
        const Stopwatch rep;
        {
          PhaseRange nvtx(range);
          fn(r);
          sync();
        }
        if (profiled) profiler_region_stop();
        const double dt = 1e3 * rep.seconds();
        if (r >= o.warmup) ms.push_back(dt);
      }
      sum_ms = 0;
      for (double m : ms) sum_ms += m;
      return ms;
    };
    if (has_phase(o, "forward")) {
      report("forward", nullptr, time_reps("forward", [&](int) { model.forward(batch, Probe{}, &logits); }));
      if (timed) timed->print_profile(o.shape + " forward T=" + std::to_string(T), sum_ms, o.reps);
    }
    for (Method method : {METHOD_MEZO, METHOD_SMEZO}) {
      const std::string phase = std::string(method_name(method)) + "-step";
      if (!has_phase(o, phase)) continue;
      SpsaOptions so;
      so.method = method;
      so.sparsity = method == METHOD_MEZO ? 0.0 : 0.75;
      so.lr = 1e-7f;  // tiny: the weights (scales, adapters) stay essentially the base ones over the reps
      so.total_steps = 1 << 30;
      so.noise = o.noise;
      SpsaOptimizer opt(model, so);  // S-MeZO thresholds: exact selection, not timed
      opt.set_fold_update(o.fold_update);  // each step folds the previous one's update, as train does
      for (int64_t block_mib : blocks) {
        if (block_mib > 0) set_cuda_weight_chunk_bytes(block_mib << 20);
        for (ProbePasses passes : o.probes) {
          const std::string mode = enum_name(probe_passes_names(), passes);
          int64_t step = 1;
          auto ms = time_reps(phase.c_str(), [&](int) {
            std::vector<double> losses;  // per half: a pair's rows [0, B) and [B, 2B)
            for (const Probe& probe : opt.probes(step, passes == PROBES_PAIR)) {
              model.forward(batch, probe, &logits);
              for (size_t h = 0; h < probe_halves(probe); h++)
                losses.push_back(mean_nll(logits, static_cast<int64_t>(h) * B, B, V, targets));
            }
            opt.finish(step++, losses);
          });
          report(phase.c_str(), mode.c_str(), ms);
          if (timed)
            timed->print_profile(o.shape + " " + phase + " (" + mode + ") T=" + std::to_string(T), sum_ms, o.reps);
          // after the profile, which sums the timed reps only; the next mode's profile is reset
          // after its warm-up. Untimed: the next optimiser's thresholds read W.
          opt.flush_updates();
        }
      }
    }
  }
  return 0;
}

}  // namespace smezo
