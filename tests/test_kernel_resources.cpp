// tools/checks/kernel_resources.py, the committed table of each CUDA kernel's registers, stack and
// spills: on a made-up ptxas log against a made-up table (more stack, a new
// kernel, a kernel gone, a register change that only notes), then --update writing a table the
// same log passes. The real kernels are checked by .ci/run (it needs nvcc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::run_command;
using smezo_test::write_file;
using testing::HasSubstr;
using testing::Not;

namespace {

// ptxas -v's lines for one kernel (mangled as nvcc does for a template in smezo's anonymous
// namespace).
std::string ptxas_kernel(const std::string& mangled, int regs, int stack, int spill) {
  return "ptxas info    : Compiling entry function '" + mangled + "' for 'sm_90a'\n"
         "ptxas info    : Function properties for " + mangled + "\n"
         "    " + std::to_string(stack) + " bytes stack frame, " + std::to_string(spill) + " bytes spill stores, " +
         std::to_string(spill) + " bytes spill loads\n"
         "ptxas info    : Used " + std::to_string(regs) + " registers, used 0 barriers\n";
}

const std::string kPair = "_ZN5smezo41_GLOBAL__N__ddabdee5_9_linear_cu_47c5ca4726perturb_weight_pair_kernelI6__halfEEvPT_S4_PKS3_llbNS_9ProbeArgsE";
const std::string kBias = "_ZN5smezo41_GLOBAL__N__ddabdee5_9_linear_cu_47c5ca4720bias_epilogue_kernelIfEEvPfPKT_llbNS_9ProbeArgsE";

}  // namespace

TEST(KernelResources, FailsOnMoreStackANewKernelAndAGoneOne) {
  const std::string dir = make_temp_dir("kernel_resources");
  write_file(dir + "/ptxas.log", "== linear.cu\n" + ptxas_kernel(kPair, 32, 96, 0) + ptxas_kernel(kBias, 21, 0, 0));
  write_file(dir + "/table.txt", "# header\n"
                                 "linear.cu\tperturb_weight_pair_kernel<__half>\t32\t0\t0\t0\n"
                                 "linear.cu\told_kernel\t10\t0\t0\t0\n");
  const std::string cmd = "python3 tools/checks/kernel_resources.py --ptxas-log " + dir + "/ptxas.log --table " + dir + "/table.txt";
  std::string out;
  EXPECT_EQ(run_command(cmd, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("linear.cu perturb_weight_pair_kernel<__half>: 96 B stack, 0/0 B spill stores/loads; "
                             "the table says 0 B, 0/0 B"));
  EXPECT_THAT(out, HasSubstr("linear.cu bias_epilogue_kernel<float>: not in the table (21 registers"));
  EXPECT_THAT(out, HasSubstr("linear.cu old_kernel: in the table but no longer built"));
  EXPECT_THAT(out, HasSubstr("2 kernels, 1 with stack or spills, 3 problem(s)"));

  // --update records the measured resources; the same log then passes, and a register change
  // alone is a note
  ASSERT_EQ(run_command(cmd + " --update", &out), 0) << out;
  EXPECT_THAT(read_file(dir + "/table.txt"), HasSubstr("linear.cu\tperturb_weight_pair_kernel<__half>\t32\t96\t0\t0\n"));
  EXPECT_EQ(run_command(cmd, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("0 problem(s)"));
  write_file(dir + "/ptxas.log", "== linear.cu\n" + ptxas_kernel(kPair, 40, 96, 0) + ptxas_kernel(kBias, 21, 0, 0));
  EXPECT_EQ(run_command(cmd, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("note: linear.cu perturb_weight_pair_kernel<__half> uses 40 registers, the table says 32"));
  // spills count as much as stack
  write_file(dir + "/ptxas.log", "== linear.cu\n" + ptxas_kernel(kPair, 32, 96, 8) + ptxas_kernel(kBias, 21, 0, 0));
  EXPECT_EQ(run_command(cmd, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("8/8 B spill stores/loads"));
}
