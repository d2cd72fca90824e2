// smezo bench: the kernel playground on the GPU (STYLE.md "Kernel playground"). It links the
// production ops, validates each path, then times it (events, warm-up, L2 flushed, median).
//
//   smezo bench --kernel linear [--dtype bf16|f16] [--shapes NxK[,NxK...]] [--m 16,1024,4096]
//               [--reps 20] [--warmup 3] [--quantile 0.75] [--json FILE]    (smezo help bench)
//
// Kernels: linear (cuda/linear_bench.h). Exit code 1 when a validation failed. Needs a CUDA
// build (SMEZO_WITH_CUDA) and a GPU; the CPU-only build says so.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "common/check.h"

#ifdef SMEZO_WITH_CUDA
#include "cuda/fused_linear.h"
#include "cuda/linear_bench.h"
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
  std::string kernel, dtype = "bf16", shapes, ms = "16,1024,4096", json;
  int64_t reps = 20, warmup = 3;
  double quantile = 0.75;
};

int run_bench(const BenchState& s) {
  const std::vector<std::pair<int64_t, int64_t>> shapes =
      s.shapes.empty() ? std::vector<std::pair<int64_t, int64_t>>() : parse_shapes(s.shapes);
  const std::vector<int64_t> ms = parse_list(s.ms, "m");
#ifdef SMEZO_WITH_CUDA
  LinearBenchOptions opt;
  opt.dtype = s.dtype == "bf16" ? DTYPE_BF16 : DTYPE_F16;
  if (!shapes.empty()) {
    opt.shapes.clear();
    for (const auto& s : shapes) opt.shapes.push_back({s.first, s.second});
  }
  opt.ms = ms;
  opt.reps = static_cast<int>(s.reps);
  opt.warmup = static_cast<int>(s.warmup);
  opt.mask_quantile = s.quantile;
  opt.json_path = s.json;
  opt.fused = fused_linear_bench_hook;  // v0 (cuda/fused_linear.cu): validated, then timed
  opt.fused_name = "fused-v0";
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
  CLI::App* cmd = add_command(smezo, "bench", "GPU kernel benchmark: validates, then times against cuBLAS and "
                                              "the memory floors (needs a CUDA build and a GPU)");
  cmd->add_option("--kernel", s->kernel, "the kernel to benchmark")->check(one_of({"linear"}))->required();
  cmd->add_option("--dtype", s->dtype, "weight dtype")->check(one_of({"bf16", "f16"}));
  cmd->add_option("--shapes", s->shapes, "weight shapes, out x in features, comma-separated: 11008x4096,4096x4096")
      ->type_name("NxK,...")
      ->default_str("LLaMA-7B's");
  cmd->add_option("--m", s->ms, "rows (tokens) per call, comma-separated")->type_name("M,...");
  cmd->add_option("--reps", s->reps, "timed repetitions (the median is reported)")->check(integer_in(1, 100000));
  cmd->add_option("--warmup", s->warmup, "untimed runs first")->check(integer_in(0, 100000));
  cmd->add_option("--quantile", s->quantile, "S-MeZO mask quantile of the perturbed linear")->check(number_in(0, 1));
  cmd->add_option("--json", s->json, "also write the results as JSON")->type_name("FILE")->default_str("none");
  return {cmd, [s] { return run_bench(*s); }};
}

}  // namespace smezo
