// The op benchmark (bench/op_bench.h) runs every case of the op case lists (bench/op_cases.h,
// the lists tests/test_backend_ops.cu checks, through the same harness) on each backend: one
// line per case, each a time. Its correctness is the conformance test's; this keeps the lists
// and the benchmark in step.
#include <gtest/gtest.h>

#include <cstdio>
#include <iterator>  // std::size
#include <string>

#include "bench/op_bench.h"
#include "bench/op_cases.h"
#include "cpu/cpu_backend.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#endif

using namespace smezo;

namespace {

// Every case of the lists once: the rope cases run in both styles, swiglu's out of place and in
// place, each relu/add shape times relu and add, the update and abs_quantile cases run in each
// storage dtype (the update in each noise kind too).
int64_t expected_lines() {
  return static_cast<int64_t>(embedding_cases().size() + position_embedding_cases().size() + norm_cases().size() +
                              2 * rope_cases().size() + 2 * swiglu_cases().size() + 2 * relu_add_cases().size() +
                              gather_rows_cases().size() + copy_rows_cases().size() + linear_cases().size() +
                              3 * std::size(kNoiseKinds) * update_cases().size() + 3 * abs_quantile_cases().size() +
                              attention_cases().size());
}

// Runs the benchmark once per case on be; checks the count and that every case line ends in " ms".
void expect_every_case_timed(Backend& be) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  OpBenchOptions o;
  o.reps = 1;
  o.warmup = 0;
  o.out = f;
  EXPECT_EQ(run_op_bench(be, o), expected_lines());
  std::rewind(f);
  char line[512];
  int64_t lines = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    const std::string s(line);
    if (lines++ == 0) {
      EXPECT_NE(s.find("op bench: every case of bench/op_cases.h on " + std::string(be.name())), std::string::npos) << s;
      continue;
    }
    EXPECT_GE(s.size(), 4u);
    EXPECT_EQ(s.substr(s.size() - 4), " ms\n") << s;
  }
  std::fclose(f);
  EXPECT_EQ(lines, expected_lines() + 1);
}

}  // namespace

TEST(OpBench, EveryCaseOnCpu) {
  CpuBackend cpu;
  expect_every_case_timed(cpu);
}

TEST(OpBench, EveryCaseOnCuda) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CudaBackend gpu;
  expect_every_case_timed(gpu);
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}
