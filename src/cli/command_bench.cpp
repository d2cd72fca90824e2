// smezo bench: the kernel playground on the GPU (STYLE.md "Kernel playground"). It links the
// production ops, validates each path, then times it (events, warm-up, L2 flushed, median).
//
//   smezo bench --kernel linear [--dtype bf16|f16] [--shapes NxK[,NxK...]] [--m 16,1024,4096]
//               [--reps 20] [--warmup 3] [--quantile 0.75] [--json FILE]
//
// Kernels: linear (cuda/linear_bench.h). Exit code 1 when a validation failed. Needs a CUDA
// build (SMEZO_WITH_CUDA) and a GPU; the CPU-only build says so.
#include "cli/commands.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/args.h"
#include "common/check.h"

#ifdef SMEZO_WITH_CUDA
#include "cuda/fused_linear.h"
#include "cuda/linear_bench.h"
#endif

namespace smezo {

namespace {

constexpr const char* kBenchUsage =
    "usage: smezo bench --kernel linear [--dtype bf16|f16] [--shapes NxK[,NxK...]] "
    "[--m 16,1024,4096] [--reps 20] [--warmup 3] [--quantile 0.75] [--json FILE]";

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
                "--%s: '%s' is not a positive integer\n%s", option, text.c_str(), kBenchUsage);
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

}  // namespace

int command_bench(int argc, char** argv) {
  Args args(argc, argv, 2);
  const std::string kernel = args.str("kernel", "");
  const std::string dtype = args.str("dtype", "bf16");
  const std::string shapes_arg = args.str("shapes", "");
  const std::string ms_arg = args.str("m", "16,1024,4096");
  const int64_t reps = args.integer("reps", 20);
  const int64_t warmup = args.integer("warmup", 3);
  const double quantile = args.number("quantile", 0.75);
  const std::string json = args.str("json", "");
  args.require_all_used();
  SMEZO_REQUIRE(args.positional().empty(), "smezo bench: unexpected argument '%s'\n%s",
                args.positional().empty() ? "" : args.positional()[0].c_str(), kBenchUsage);
  SMEZO_REQUIRE(kernel == "linear", "smezo bench: %s --kernel%s%s (available: linear)\n%s",
                kernel.empty() ? "missing" : "unknown", kernel.empty() ? "" : " ",
                kernel.c_str(), kBenchUsage);
  SMEZO_REQUIRE(dtype == "bf16" || dtype == "f16",
                "smezo bench: --dtype must be bf16 or f16 (got '%s')", dtype.c_str());
  const std::vector<std::pair<int64_t, int64_t>> shapes =
      shapes_arg.empty() ? std::vector<std::pair<int64_t, int64_t>>() : parse_shapes(shapes_arg);
  const std::vector<int64_t> ms = parse_list(ms_arg, "m");
  SMEZO_REQUIRE(reps >= 1 && reps <= 100000, "--reps must be in [1, 100000] (got %lld)",
                (long long)reps);
  SMEZO_REQUIRE(warmup >= 0 && warmup <= 100000, "--warmup must be in [0, 100000] (got %lld)",
                (long long)warmup);
  SMEZO_REQUIRE(quantile >= 0.0 && quantile <= 1.0, "--quantile must be in [0, 1] (got %g)",
                quantile);

#ifdef SMEZO_WITH_CUDA
  LinearBenchOptions opt;
  opt.dtype = dtype == "bf16" ? DTYPE_BF16 : DTYPE_F16;
  if (!shapes.empty()) {
    opt.shapes.clear();
    for (const auto& s : shapes) opt.shapes.push_back({s.first, s.second});
  }
  opt.ms = ms;
  opt.reps = static_cast<int>(reps);
  opt.warmup = static_cast<int>(warmup);
  opt.mask_quantile = quantile;
  opt.json_path = json;
  opt.fused = fused_linear_bench_hook;  // v0 (cuda/fused_linear.cu): validated, then timed
  opt.fused_name = "fused-v0";
  return run_linear_bench(opt);
#else
  throw_error("smezo bench needs a CUDA build and a GPU (this smezo was built without nvcc)"
              "\n---> HINT: rebuild with nvcc on the PATH (make; see README) and run on a GPU");
#endif
}

}  // namespace smezo
