// smezo bench: the kernel playground on the GPU and the model-level benchmark, both linking the
// production ops; the measuring code is in bench/.
//   --kernel linear (bench/linear_bench.h): validates each path (W' and fused; single probes and the
//     pair; gaussian and rademacher z), times it (events, warm-up, L2 flushed, median), prints the
//     fused/W' crossover table last; exit 1 on a failed validation; CUDA build and GPU only.
//   --kernel excess (bench/excess_bench.h): the step's excess over two forwards, by part: the perturb
//     pass beside a copy of equal bytes, one layer's W' blocks in four orders, bytes per second.
//   --shape NAME (bench/model_bench.h): JSON lines on stdout, any backend.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/model_bench.h"
#include "bench/random_weights.h"
#include "cli/commands.h"
#include "common/check.h"
#include "common/file_util.h"  // split_on
#include "cuda/cuda_plan.h"  // the W' block size (host code)
#include "run/summary.h"
#include "train/option_names.h"
#include "train/spsa.h"

#ifdef SMEZO_WITH_CUDA
#include "bench/excess_bench.h"
#include "bench/linear_bench.h"
#endif

namespace smezo {

namespace {

int64_t parse_positive(const std::string& text, const char* option) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  SMEZO_REQUIRE(!text.empty() && errno == 0 && end && *end == '\0' && v > 0,
                "--%s: '%s' is not a positive integer", option, text.c_str());
  return v;
}

// "4096x4096,11008x4096" -> {(4096, 4096), (11008, 4096)}: N (out features) x K (in features).
std::vector<std::pair<int64_t, int64_t>> parse_shapes(const std::string& text) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const std::string& item : split_on(text, ',')) {
    const size_t x = item.find_first_of("xX");
    SMEZO_REQUIRE(x != std::string::npos,
                  "--shapes: '%s' is not NxK (out features x in features, e.g. 11008x4096)",
                  item.c_str());
    out.emplace_back(parse_positive(item.substr(0, x), "shapes"),
                     parse_positive(item.substr(x + 1), "shapes"));
  }
  SMEZO_REQUIRE(!out.empty(), "--shapes needs at least one NxK");
  return out;
}

std::vector<int64_t> parse_list(const std::string& text, const char* option) {
  std::vector<int64_t> out;
  for (const std::string& item : split_on(text, ',')) out.push_back(parse_positive(item, option));
  SMEZO_REQUIRE(!out.empty(), "--%s needs at least one value", option);
  return out;
}

struct BenchState {
  std::string kernel, shapes, ms = "16,64,256,1024,4096", json;
  int64_t reps = 20, warmup = 3;
  double quantile = 0.75;
  // --shape
  std::string shape, seqs = "64,160,256";
  Device device = DEVICE_CPU;
  std::optional<DType> dtype;
  NoiseKind noise = NOISE_GAUSSIAN;
  LinearPathMode linear_path = LINEAR_MODE_AUTO;
  bool fold_update = true, graphs = false;
  std::vector<ProbePasses> probes = {PROBES_PAIR};  // --probes both: the two
  int64_t batch = 16;
  bool profile = false;
  bool profile_rep = false;
  std::string phases = "forward,mezo-step,smezo-step", weight_block_mib;
  uint32_t quant = 0;  // --quant: a GGUF block type; 0: unquantised weights
  Tune tune = TUNE_FULL;
  // --kernel excess
  std::string weights_of = "llama-7b", noises = "gaussian,rademacher", parts = "perturb,layer", sm_reserve = "16,32";
  int64_t flat_elements = int64_t(1) << 29, flush_mib = 256;
  bool dram_range = false;
  CLI::Option *reps_opt = nullptr, *warmup_opt = nullptr, *ms_opt = nullptr;
};

// --probes pair|separate|both: the probe passes the steps are timed with (both: pair, then separate).
void add_probes_option(CLI::App* cmd, std::vector<ProbePasses>* probes) {
  auto set = [probes](const std::string& v) {
    *probes = v == "both" ? std::vector<ProbePasses>{PROBES_PAIR, PROBES_SEPARATE}
                          : std::vector<ProbePasses>{enum_parse(probe_passes_names(), v, "probe mode")};
  };
  cmd->add_option_function<std::string>("--probes", set, "--shape: time the steps with the probe pair, two "
                                        "passes, or both")
      ->check(one_of({"pair", "separate", "both"}))
      ->default_str("pair");
}

std::vector<int64_t> block_sizes(const std::string& text) {
  return text.empty() ? std::vector<int64_t>() : parse_list(text, "weight-block-mib");
}

// --quant TYPE and --tune: the random model kept in GGUF blocks, and what its steps tune.
void add_quant_options(CLI::App* cmd, BenchState* s) {
  cmd->add_option_function<std::string>("--quant", [s](const std::string& v) { s->quant = random_packed_type(v); },
                                        "--shape: the matrices as random GGUF blocks of this type, kept packed "
                                        "(--weights packed), with --tune scales or lora")
      ->type_name("TYPE")
      ->default_str("none; " + random_packed_type_names());
  add_enum_option(cmd, "--tune", &s->tune, tune_names(), "--shape: what the steps tune: every weight, the blocks' "
                  "scales (--quant), or LoRA adapters (rank 8, q and v); prefix is not benched");
}

int run_shape_bench(const BenchState& s) {
  ModelBenchOptions o;
  o.shape = s.shape;
  o.device = s.device;
  o.dtype = s.dtype;
  o.linear_path = s.linear_path;
  o.batch = s.batch;
  o.seqs = parse_list(s.seqs, "seq");
  o.probes = s.probes;
  o.noise = s.noise;
  o.fold_update = s.fold_update;
  o.graphs = s.graphs;
  o.profile = s.profile;
  o.profile_rep = s.profile_rep;
  o.phases = split_on(s.phases, ',');
  o.weight_block_mib = block_sizes(s.weight_block_mib);
  o.json_path = s.json;
  o.quant = s.quant;
  o.tune = s.tune;
  if (s.reps_opt->count()) o.reps = static_cast<int>(s.reps);
  if (s.warmup_opt->count()) o.warmup = static_cast<int>(s.warmup);
  return run_model_bench(o);
}

#ifdef SMEZO_WITH_CUDA
// --kernel excess, once per --weight-block-mib (the layer's W' blocks follow the process's knob).
int run_excess(const BenchState& s, const std::vector<int64_t>& ms) {
  ExcessBenchOptions opt;
  opt.shape = s.weights_of;
  opt.dtype = s.dtype == DTYPE_F16 ? DTYPE_F16 : DTYPE_BF16;
  if (s.ms_opt->count()) opt.ms = ms;
  opt.noises.clear();
  for (const std::string& name : split_on(s.noises, ',')) opt.noises.push_back(noise_parse(name));
  opt.parts = split_on(s.parts, ',');
  opt.sm_reserve.clear();
  for (const std::string& r : split_on(s.sm_reserve, ',')) opt.sm_reserve.push_back(static_cast<int>(parse_positive(r, "sm-reserve")));
  opt.flat_elements = s.flat_elements;
  opt.flush_bytes = s.flush_mib << 20;
  opt.dram_range = s.dram_range;
  if (s.reps_opt->count()) opt.reps = static_cast<int>(s.reps);
  if (s.warmup_opt->count()) opt.warmup = static_cast<int>(s.warmup);
  opt.json_path = s.json;
  const std::vector<int64_t> blocks = block_sizes(s.weight_block_mib);
  SMEZO_REQUIRE(blocks.size() <= 1, "bench --kernel excess: one --weight-block-mib (a list is --shape's sweep)");
  if (!blocks.empty()) {  // this process's W' block size (it ends with the command)
    SMEZO_REQUIRE(blocks[0] <= 1024, "bench: --weight-block-mib %lld (1 to 1024 MiB)", (long long)blocks[0]);
    set_cuda_weight_chunk_bytes(blocks[0] << 20);
  }
  return run_excess_bench(opt);
}
#endif

int run_bench(const BenchState& s) {
  SMEZO_REQUIRE(s.kernel.empty() != s.shape.empty(), "bench: name either --kernel (a GPU kernel) or --shape "
                "(a random-weight model), not %s", s.kernel.empty() ? "neither" : "both");
  if (!s.json.empty()) run_prepare_output_file(s.json, "--json");
  if (!s.shape.empty()) return run_shape_bench(s);
  SMEZO_REQUIRE(s.dtype.value_or(DTYPE_BF16) != DTYPE_F32, "bench --kernel linear: --dtype f32 (the kernel benchmark "
                "takes bf16 or f16)");
  const std::vector<std::pair<int64_t, int64_t>> shapes =
      s.shapes.empty() ? std::vector<std::pair<int64_t, int64_t>>() : parse_shapes(s.shapes);
  const std::vector<int64_t> ms = parse_list(s.ms, "m");
#ifdef SMEZO_WITH_CUDA
  if (s.kernel == "excess") return run_excess(s, ms);
  LinearBenchOptions opt;
  opt.dtype = s.dtype.value_or(DTYPE_BF16);
  if (!shapes.empty()) {
    opt.shapes.clear();
    for (const auto& s : shapes) opt.shapes.push_back({s.first, s.second});
  }
  opt.ms = ms;
  opt.reps = static_cast<int>(s.reps);
  opt.warmup = static_cast<int>(s.warmup);
  opt.mask_quantile = s.quantile;
  opt.json_path = s.json;
  return run_linear_bench(opt);
#else
  (void)shapes;
  (void)ms;
  throw_error("smezo bench needs a CUDA build and a GPU (this smezo was built without nvcc) ---> HINT: "
              "rebuild with nvcc on the PATH (make; see README) and run on a GPU");
#endif
}

}  // namespace

Command register_bench(CLI::App& smezo) {
  auto s = std::make_shared<BenchState>();
  CLI::App* cmd = add_command(smezo, "bench", "benchmarks: a GPU kernel against cuBLAS and the memory floors "
                                              "(--kernel), or forward and training steps of a random-weight "
                                              "model (--shape)");
  CLI::Option* kernel = cmd->add_option("--kernel", s->kernel, "the kernel to benchmark (needs a CUDA build and a "
                                                                "GPU); --kernel or --shape is required")
                            ->check(one_of({"linear", "excess"}));
  CLI::Option* shape = cmd->add_option("--shape", s->shape, "a random-weight model built in memory: forward, MeZO "
                                                            "and S-MeZO step times as JSON lines")
                           ->check(one_of(model_bench_shape_names()))
                           ->default_str("none; --kernel or --shape is required")
                           ->excludes(kernel);
  cmd->parse_complete_callback([kernel, shape] {
    if (kernel->count() == 0 && shape->count() == 0) throw CLI::RequiredError("--kernel or --shape");
  });
  add_optional_enum_option(cmd, "--dtype", &s->dtype, dtype_option_names(), "weight dtype (--kernel: bf16 or f16)")
      ->default_str("--kernel: bf16; --shape: the device's default");
  add_enum_option(cmd, "--device", &s->device, device_names(), "--shape: the backend");
  cmd->add_option("--batch", s->batch, "--shape: sequences per probe")->check(integer_at_least(1));
  cmd->add_option("--seq", s->seqs, "--shape: tokens per sequence, comma-separated")->type_name("T,...");
  add_probes_option(cmd, &s->probes);
  add_linear_path_option(cmd, &s->linear_path)->description(
      "--shape: how a perturbed linear runs on the GPU (wprime: W' to scratch + cuBLAS; fused: "
      "cuda/fused_linear.cu; auto: wprime until a measured crossover table says fused is faster; the CPU "
      "refuses fused). --kernel linear times both paths whatever this says");
  add_enum_option(cmd, "--noise", &s->noise, noise_names(), "--shape: the steps' z");
  cmd->add_option_function<std::string>("--fold-update", [s](const std::string& v) { s->fold_update = v == "on"; },
                                        "--shape: the steps fold each linear weight's update into the next step's "
                                        "W' pass (as smezo train does), or update in a pass of their own")
      ->check(one_of({"on", "off"}))
      ->default_str("on");
  add_graphs_option(cmd, &s->graphs)->description("--shape: passes as CUDA graphs, as train --graphs on (not with --profile)");
  cmd->add_flag("--profile", s->profile, "--shape: each phase's step split into GEMM, noise, attention and rest, "
                                         "then time per op kind, means of the timed reps (stderr; the split also "
                                         "as \"profile\" in the JSON line)");
  cmd->add_option("--shapes", s->shapes, "weight shapes, out x in features, comma-separated: 11008x4096,4096x4096")
      ->type_name("NxK,...")
      ->default_str("LLaMA-7B's");
  s->ms_opt = cmd->add_option("--m", s->ms, "--kernel: rows (tokens) per probe, comma-separated (a pair's call has "
                                            "twice as many)")
                  ->type_name("M,...")
                  ->default_str("linear: 16,64,256,1024,4096; excess: 1024,4096");
  add_quant_options(cmd, s.get());
  cmd->add_option("--phases", s->phases, "--shape: the phases to run, comma-separated")->type_name("PHASE,...");
  cmd->add_flag("--profile-rep", s->profile_rep, "--shape, cuda: the last timed rep of each phase inside "
                                                 "cudaProfilerStart/Stop (ncu --profile-from-start off; nsys "
                                                 "--capture-range=cudaProfilerApi)");
  cmd->add_option("--weight-block-mib", s->weight_block_mib, "cuda: the W' row block's size in MiB; --shape: the "
                                                             "steps once per size, comma-separated; --kernel excess: "
                                                             "one size")
      ->type_name("MIB,...")
      ->default_str("SMEZO_CUDA_WEIGHT_BLOCK_MIB, else 64");
  cmd->add_option("--weights-of", s->weights_of, "--kernel excess: the model shape whose linear weights are timed")
      ->check(one_of(model_bench_shape_names()));
  cmd->add_option("--noises", s->noises, "--kernel excess: the kinds of z, comma-separated")->type_name("KIND,...");
  cmd->add_option("--parts", s->parts, "--kernel excess: perturb (the W' pass beside a copy), layer (one layer's "
                                       "blocks: serial, two streams, SM target, the product)")
      ->type_name("PART,...");
  cmd->add_option("--sm-reserve", s->sm_reserve, "--kernel excess: SMs the GEMM leaves to the perturb "
                                                 "(cublasSetSmCountTarget), comma-separated")
      ->type_name("N,...");
  cmd->add_option("--flat-elements", s->flat_elements, "--kernel excess: the flat perturb tensor's elements at most")
      ->check(integer_at_least(8));
  cmd->add_option("--flush-mib", s->flush_mib, "--kernel excess: the buffer written before each timed rep to flush the "
                                               "L2 (MiB; more than the GPU's L2)")
      ->check(integer_in(1, 4096));
  cmd->add_flag("--dram-range", s->dram_range, "--kernel excess: one serial layer pass per M and one copy inside "
                                               "cudaProfilerStart/Stop (ncu --replay-mode app-range)");
  s->reps_opt = cmd->add_option("--reps", s->reps, "timed repetitions (the median is reported)")
                    ->check(integer_in(1, 100000))
                    ->default_str("20; --shape: 5; --kernel excess: 10");
  s->warmup_opt = cmd->add_option("--warmup", s->warmup, "untimed runs first")
                      ->check(integer_in(0, 100000))
                      ->default_str("3; --shape: 1");
  cmd->add_option("--quantile", s->quantile, "S-MeZO mask quantile of the perturbed linear")->check(number_in(0, 1));
  cmd->add_option("--json", s->json, "also write the results as JSON")->type_name("FILE")->default_str("none");
  return {cmd, [s] { return run_bench(*s); }};
}

}  // namespace smezo
