// smezo bench: the kernel playground on the GPU and the model-level benchmark, both linking the
// production ops; the measuring code is in bench/.
//   --kernel linear (bench/linear_bench.h): validates each path (W' and fused; single probes and the
//     pair; gaussian and rademacher z), times it (events, warm-up, L2 flushed, median), prints the
//     fused/W' crossover table last; exit 1 on a failed validation; CUDA build and GPU only.
//   --shape NAME (bench/model_bench.h): JSON lines on stdout, any backend.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench/model_bench.h"
#include "cli/commands.h"
#include "common/check.h"
#include "run/summary.h"
#include "train/spsa.h"

#ifdef SMEZO_WITH_CUDA
#include "bench/linear_bench.h"
#endif

namespace smezo {

namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

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
  for (const std::string& item : split_commas(text)) {
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
  for (const std::string& item : split_commas(text)) out.push_back(parse_positive(item, option));
  SMEZO_REQUIRE(!out.empty(), "--%s needs at least one value", option);
  return out;
}

struct BenchState {
  std::string kernel, dtype, shapes, ms = "16,64,256,1024,4096", json;
  int64_t reps = 20, warmup = 3;
  double quantile = 0.75;
  // --shape
  std::string shape, device = "cpu", seqs = "64,160,256", probes = "pair", noise = "gaussian";
  std::string linear_path = "auto";
  int64_t batch = 16;
  bool profile = false;
  CLI::Option *reps_opt = nullptr, *warmup_opt = nullptr;
};

int run_shape_bench(const BenchState& s) {
  ModelBenchOptions o;
  o.shape = s.shape;
  o.device = s.device;
  o.dtype = s.dtype;
  o.linear_path = s.linear_path;
  o.batch = s.batch;
  o.seqs = parse_list(s.seqs, "seq");
  o.probes = s.probes;
  o.noise = noise_parse(s.noise);
  o.profile = s.profile;
  o.json_path = s.json;
  if (s.reps_opt->count()) o.reps = static_cast<int>(s.reps);
  if (s.warmup_opt->count()) o.warmup = static_cast<int>(s.warmup);
  return run_model_bench(o);
}

int run_bench(const BenchState& s) {
  SMEZO_REQUIRE(s.kernel.empty() != s.shape.empty(), "bench: name either --kernel (a GPU kernel) or --shape "
                "(a random-weight model), not %s", s.kernel.empty() ? "neither" : "both");
  if (!s.json.empty()) run_prepare_output_file(s.json, "--json");
  if (!s.shape.empty()) return run_shape_bench(s);
  SMEZO_REQUIRE(s.dtype.empty() || s.dtype == "bf16" || s.dtype == "f16",
                "bench --kernel linear: --dtype %s (the kernel benchmark takes bf16 or f16)", s.dtype.c_str());
  const std::vector<std::pair<int64_t, int64_t>> shapes =
      s.shapes.empty() ? std::vector<std::pair<int64_t, int64_t>>() : parse_shapes(s.shapes);
  const std::vector<int64_t> ms = parse_list(s.ms, "m");
#ifdef SMEZO_WITH_CUDA
  LinearBenchOptions opt;
  opt.dtype = s.dtype == "f16" ? DTYPE_F16 : DTYPE_BF16;
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
                            ->check(one_of({"linear"}));
  CLI::Option* shape = cmd->add_option("--shape", s->shape, "a random-weight model built in memory: forward, MeZO "
                                                            "and S-MeZO step times as JSON lines")
                           ->check(one_of(model_bench_shape_names()))
                           ->default_str("none; --kernel or --shape is required")
                           ->excludes(kernel);
  cmd->parse_complete_callback([kernel, shape] {
    if (kernel->count() == 0 && shape->count() == 0) throw CLI::RequiredError("--kernel or --shape");
  });
  cmd->add_option("--dtype", s->dtype, "weight dtype (--kernel: bf16 or f16)")
      ->check(one_of({"f32", "bf16", "f16"}))
      ->default_str("--kernel: bf16; --shape: the device's default");
  cmd->add_option("--device", s->device, "--shape: the backend")->check(one_of({"cpu", "cuda"}));
  cmd->add_option("--batch", s->batch, "--shape: sequences per probe")->check(integer_at_least(1));
  cmd->add_option("--seq", s->seqs, "--shape: tokens per sequence, comma-separated")->type_name("T,...");
  cmd->add_option("--probes", s->probes, "--shape: time the steps with the probe pair, two passes, or both")
      ->check(one_of({"pair", "separate", "both"}));
  add_linear_path_option(cmd, &s->linear_path)->description(
      "--shape: how a perturbed linear runs on the GPU (wprime: W' to scratch + cuBLAS; fused: "
      "cuda/fused_linear.cu; auto: wprime until a measured crossover table says fused is faster; the CPU "
      "refuses fused). --kernel linear times both paths whatever this says");
  cmd->add_option("--noise", s->noise, "--shape: the steps' z")->check(one_of({"gaussian", "gaussian-v1", "rademacher", "sign"}));
  cmd->add_flag("--profile", s->profile, "--shape: each phase's step split into GEMM, noise, attention and rest, "
                                         "then time per op kind, means of the timed reps (stderr; the split also "
                                         "as \"profile\" in the JSON line)");
  cmd->add_option("--shapes", s->shapes, "weight shapes, out x in features, comma-separated: 11008x4096,4096x4096")
      ->type_name("NxK,...")
      ->default_str("LLaMA-7B's");
  cmd->add_option("--m", s->ms, "--kernel: rows (tokens) per probe, comma-separated (a pair's call has twice as many)")
      ->type_name("M,...");
  s->reps_opt = cmd->add_option("--reps", s->reps, "timed repetitions (the median is reported)")
                    ->check(integer_in(1, 100000))
                    ->default_str("20; --shape: 5");
  s->warmup_opt = cmd->add_option("--warmup", s->warmup, "untimed runs first")
                      ->check(integer_in(0, 100000))
                      ->default_str("3; --shape: 1");
  cmd->add_option("--quantile", s->quantile, "S-MeZO mask quantile of the perturbed linear")->check(number_in(0, 1));
  cmd->add_option("--json", s->json, "also write the results as JSON")->type_name("FILE")->default_str("none");
  return {cmd, [s] { return run_bench(*s); }};
}

}  // namespace smezo
