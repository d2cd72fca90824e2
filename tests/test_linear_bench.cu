// The linear kernel playground (bench/linear_bench.h) end to end on tiny shapes: every path
// validates (run_linear_bench returns 0: the W' path and the fused kernel, single probes and
// the probe pair) and one JSON line per shape x noise kind x M is written, with the fused and
// pair timings the crossover table is made of. One shape has an odd K and N·K not a multiple
// of 8, so the tails of the floors and of the perturb / update / fused kernels run. Skips
// without a GPU. (Emulated, the timings are host times: only that they are there is checked.)
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "../cuda/cuda_check.h"
#include "bench/linear_bench.h"
#include "common/check.h"
#include "test_util.h"

using namespace smezo;

TEST(LinearBench, TinyShapesValidateAndWriteJson) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  LinearBenchOptions opt;
  opt.dtype = DTYPE_BF16;
  opt.shapes = {{96, 80}, {33, 77}};
  opt.ms = {1, 33};
  opt.reps = 2;
  opt.warmup = 1;
  opt.flush_bytes = int64_t(8) << 20;
  opt.json_path = smezo_test::make_temp_dir("linear_bench") + "/bench.jsonl";
  ASSERT_EQ(run_linear_bench(opt), 0);

  std::istringstream lines(smezo_test::read_file(opt.json_path));
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    EXPECT_EQ(line.front(), '{');
    EXPECT_EQ(line.back(), '}');
    EXPECT_NE(line.find("\"check\":\"PASS\""), std::string::npos) << line;
    EXPECT_EQ(line.find("\"fused_ms\":null"), std::string::npos) << line;
    EXPECT_EQ(line.find("\"pair_fused_ms\":null"), std::string::npos) << line;
    EXPECT_EQ(line.find("\"pair_wprime_ms\":null"), std::string::npos) << line;
    // per shape: gaussian M = 1, 33, then rademacher M = 1, 33
    const int i = count - 1;
    EXPECT_NE(line.find(std::string("\"noise\":\"") + ((i / 2) % 2 == 0 ? "gaussian" : "rademacher") + "\""),
              std::string::npos) << line;
    EXPECT_NE(line.find(std::string("\"rows_per_probe\":") + (i % 2 == 0 ? "1," : "33,")), std::string::npos) << line;
  }
  EXPECT_EQ(count, 8);  // 2 shapes x 2 noise kinds (gaussian, rademacher) x 2 M
}

TEST(LinearBench, F16AndRejectsF32) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  LinearBenchOptions opt;
  opt.dtype = DTYPE_F16;
  opt.shapes = {{64, 48}};
  opt.ms = {5};
  opt.reps = 1;
  opt.warmup = 0;
  opt.flush_bytes = int64_t(1) << 20;
  EXPECT_EQ(run_linear_bench(opt), 0);
  opt.dtype = DTYPE_F32;
  EXPECT_THROW_MSG(run_linear_bench(opt), "bench --kernel linear: --dtype must be bf16 or f16 (got F32)");
}
