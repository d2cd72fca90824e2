// The W' block size knob (cuda/cuda_plan.h): SMEZO_CUDA_WEIGHT_BLOCK_MIB is checked (a whole number
// of MiB, 1..1024; anything else is an error naming the variable), the default stays 64 MiB, and the
// scratch plan and the memory estimate follow the process's value, so what a run plans and what
// `smezo info` estimates cannot drift apart. The bench's sweep is for CUDA only. (That the kernels
// follow it too: WeightBlockCuda.* in tests/test_excess_bench.cu.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/check.h"
#include "cuda/cuda_plan.h"
#include "test_util.h"

using namespace smezo;
using testing::HasSubstr;

namespace {

// Sets the process's block size for one test and puts the old one back.
struct BlockSize {
  int64_t saved = cuda_weight_chunk_bytes();
  explicit BlockSize(int64_t bytes) { set_cuda_weight_chunk_bytes(bytes); }
  ~BlockSize() { set_cuda_weight_chunk_bytes(saved); }
};

}  // namespace

TEST(WeightBlock, EnvironmentValuesAreChecked) {
  EXPECT_EQ(weight_block_bytes_from(nullptr), int64_t(64) << 20);
  EXPECT_EQ(weight_block_bytes_from(""), int64_t(64) << 20);
  EXPECT_EQ(weight_block_bytes_from("8"), int64_t(8) << 20);
  EXPECT_EQ(weight_block_bytes_from("1024"), int64_t(1024) << 20);
  for (const char* bad : {"0", "-8", "1025", "8x", "eight", "8.5", " "}) {
    const std::string msg = smezo_test::error_of([&] { weight_block_bytes_from(bad); });
    EXPECT_THAT(msg, HasSubstr(std::string("SMEZO_CUDA_WEIGHT_BLOCK_MIB=") + bad + ": the W' block size is a whole "
                               "number of MiB from 1 to 1024")) << bad;
    EXPECT_THAT(msg, HasSubstr("---> HINT: unset it for the default (64 MiB)"));
    EXPECT_TRUE(smezo_test::is_one_line(msg));
  }
  EXPECT_THROW_MSG(set_cuda_weight_chunk_bytes(0), "must be positive");
}

// A probe pair's W+ and W- of LLaMA-7B's gate (11008 x 4096 bf16, 8 KiB a row, 16 KiB for both) come
// in blocks of the knob's size: 4096 rows at 64 MiB, 512 at 8 MiB; the estimate's linear scratch is
// the largest block plus x, so it shrinks by the blocks' difference.
TEST(WeightBlock, ScratchPlanAndEstimateFollowTheKnob) {
  const LinearCall gate{1024, 11008, 4096, true, true, DTYPE_BF16};
  int64_t most64 = 0, most8 = 0, x_bytes = 0;
  {
    BlockSize b(int64_t(64) << 20);
    const LinearScratch s = linear_scratch_plan(gate, LINEAR_MATERIALISE_PAIR);
    EXPECT_EQ(s.block_rows, 4096);
    EXPECT_EQ(s.w_bytes, int64_t(32) << 20);
    x_bytes = s.x_bytes;
    most64 = cuda_linear_scratch_most(11008, 4096, 2048, DTYPE_BF16);
  }
  {
    BlockSize b(int64_t(8) << 20);
    const LinearScratch s = linear_scratch_plan(gate, LINEAR_MATERIALISE_PAIR);
    EXPECT_EQ(s.block_rows, 512);
    EXPECT_EQ(s.w_bytes, int64_t(4) << 20);
    EXPECT_EQ(s.x_bytes, x_bytes);
    most8 = cuda_linear_scratch_most(11008, 4096, 2048, DTYPE_BF16);
    EXPECT_EQ(most64 - most8, (int64_t(64) << 20) - (int64_t(8) << 20));
    // the plan's explicit block size still wins over the knob (a caller that names one)
    EXPECT_EQ(linear_scratch_plan(gate, LINEAR_MATERIALISE_PAIR, int64_t(64) << 20).block_rows, 4096);
  }
  EXPECT_EQ(cuda_linear_scratch_most(11008, 4096, 2048, DTYPE_BF16), most64) << "the knob put back";
}

// The CLI reads the variable once, at start: a bad value is a one-line error before any work (here
// `smezo info`, whose CUDA estimate plans the blocks), and --weight-block-mib is CUDA's only.
TEST(WeightBlock, CliRefusesABadValueAndTheCpuSweep) {
  std::string out;
  const std::string info = smezo_test::smezo_binary() + " info 2>&1";  // the bundled stories260K
  EXPECT_NE(smezo_test::run_command("SMEZO_CUDA_WEIGHT_BLOCK_MIB=0 " + info, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("smezo: error: SMEZO_CUDA_WEIGHT_BLOCK_MIB=0: the W' block size is a whole number"));
  EXPECT_EQ(smezo_test::run_command("SMEZO_CUDA_WEIGHT_BLOCK_MIB=8 " + info, &out), 0) << out;
  const std::string bench = smezo_test::smezo_binary() + " bench --shape tiny --device cpu --seq 8 --batch 1 --reps 1 "
                                                         "--warmup 0 ";
  EXPECT_NE(smezo_test::run_command(bench + "--weight-block-mib 8 2>&1", &out), 0);
  EXPECT_THAT(out, HasSubstr("--weight-block-mib and --profile-rep are for --device cuda"));
  EXPECT_NE(smezo_test::run_command(bench + "--profile-rep 2>&1", &out), 0);
  EXPECT_THAT(out, HasSubstr("--weight-block-mib and --profile-rep are for --device cuda"));
  EXPECT_NE(smezo_test::run_command(bench + "--phases forward,backward 2>&1", &out), 0);
  EXPECT_THAT(out, HasSubstr("--phases 'backward' (choose forward, mezo-step, smezo-step)"));
#ifdef SMEZO_WITH_CUDA  // checked before any GPU is looked for
  const std::string excess = smezo_test::smezo_binary() + " bench --kernel excess --weights-of tiny ";
  EXPECT_NE(smezo_test::run_command(excess + "--weight-block-mib 8,16 2>&1", &out), 0);
  EXPECT_THAT(out, HasSubstr("bench --kernel excess: one --weight-block-mib (a list is --shape's sweep)"));
  EXPECT_NE(smezo_test::run_command(excess + "--weight-block-mib 2048 2>&1", &out), 0);
  EXPECT_THAT(out, HasSubstr("bench: --weight-block-mib 2048 (1 to 1024 MiB)"));
#endif
  // --phases picks the phases: one forward line, one S-MeZO line, no MeZO
  ASSERT_EQ(smezo_test::run_command(bench + "--phases forward,smezo-step 2>/dev/null", &out), 0) << out;
  EXPECT_EQ(smezo_test::occurrences(out, "\"phase\":\"forward\""), 1u) << out;
  EXPECT_EQ(smezo_test::occurrences(out, "\"phase\":\"smezo-step\""), 1u) << out;
  EXPECT_EQ(smezo_test::occurrences(out, "\"phase\":\"mezo-step\""), 0u) << out;
}
