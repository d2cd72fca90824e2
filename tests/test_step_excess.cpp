// The machinery of the GPU call that explains the step's excess (issue 41; backlog job 4.excess):
// the kernel classes cover every production kernel and name a stranger instead of dropping it; the
// readers of nsys's and ncu's CSV give the same classes from recorded samples
// (tests/fixtures/gpu_profile); the table's step and forward rows add up to the measured times on a
// synthetic call folder; and, on (emulated) CUDA, tools/gpu/step_excess.py runs its parts with a
// stand-in ncu that runs the profiled command and prints a recorded CSV.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "test_util.h"

#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"
#endif

using smezo_test::read_file;
using smezo_test::run_command;
using testing::HasSubstr;
using testing::Not;

namespace {

const std::string kFixtures = "tests/fixtures/gpu_profile/";

// The number at the start of the markdown cell `col` (1 = the first after the label) of the row whose
// label is `label`; NAN when there is none.
double cell(const std::string& table, const std::string& label, int col) {
  std::istringstream lines(table);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("| " + label + " |", 0) != 0) continue;
    size_t at = 0;
    for (int k = 0; k <= col; ++k) at = line.find('|', at) + 1;
    try {
      return std::stod(line.substr(at));
    } catch (...) {
      return NAN;
    }
  }
  return NAN;
}

}  // namespace

TEST(StepExcess, KernelClassesCoverOurKernelsAndNameStrangers) {
  std::string out;
  EXPECT_EQ(run_command("python3 tools/gpu/kernel_classes.py --check-kernels cuda/kernel_resources.txt", &out), 0)
      << out;
  // a kernel no pattern knows fails the check, by name, with the hint
  const std::string dir = smezo_test::make_temp_dir("kernel_classes");
  smezo_test::write_file(dir + "/res.txt", "# file kernel registers\nlinear.cu\tperturb_weight_kernel<float>\t48\n"
                                           "linear.cu\tfold_pass_kernel<__nv_bfloat16>\t40\n");
  EXPECT_EQ(run_command("python3 tools/gpu/kernel_classes.py --check-kernels " + dir + "/res.txt", &out), 1);
  EXPECT_THAT(out, HasSubstr("fold_pass_kernel<__nv_bfloat16> (linear.cu): unclassified ---> HINT: add a pattern"));
  EXPECT_THAT(out, Not(HasSubstr("perturb_weight_kernel")));
}

// The recorded nsys trace (one SmolLM2 layer of a probe-pair step, then two updates) and ncu's
// per-kernel CSV (microseconds, with ==PROF== lines around it): per class the launches and time;
// the CUB kernel our code never launches is reported as unclassified; with the step's time the rows
// add up to it.
TEST(StepExcess, ProfilerExportsGiveTheClassTable) {
  std::string out;
  ASSERT_EQ(run_command("python3 tools/gpu/kernel_classes.py --nsys-trace " + kFixtures +
                            "nsys_cuda_gpu_trace.csv --step-ms 0.5",
                        &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("| perturb | 5 | 0.025 |"));
  EXPECT_THAT(out, HasSubstr("| GEMM | 6 | 0.058 |"));  // five nvjet GEMMs and the split-K reduction
  EXPECT_THAT(out, HasSubstr("| update | 2 | 0.012 |"));
  EXPECT_THAT(out, HasSubstr("| memcpy/memset | 4 | 0.012 |"));
  EXPECT_THAT(out, HasSubstr("| unclassified | 1 | 0.002 |"));
  EXPECT_THAT(out, HasSubstr("unclassified: void cub::CUB_300001_SM_900::DeviceRadixSortOnesweepKernel<"));
  EXPECT_NEAR(cell(out, "gaps (step - kernels)", 2), 0.5 - 0.209952, 1e-3);
  EXPECT_THAT(out, HasSubstr("| = step | 32 | 0.500 | 100.0% |"));
  ASSERT_EQ(run_command("python3 tools/gpu/kernel_classes.py --nsys-kern-sum " + kFixtures + "nsys_cuda_gpu_kern_sum.csv",
                        &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("| perturb | 151 | 0.749 |"));  // launches = the instances column
  EXPECT_THAT(out, HasSubstr("| = kernels | 697 | 7.455 | 100.0% |"));
  ASSERT_EQ(run_command("python3 tools/gpu/kernel_classes.py --ncu " + kFixtures + "ncu_kernels.csv", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("| perturb | 2 | 0.057 |"));  // 28.35 + 28.29 us
  EXPECT_THAT(out, HasSubstr("| = kernels | 7 | 0.333 | 100.0% |"));
  // the app-range export: two ranges, bytes and time with their thousands separators and units row
  ASSERT_EQ(run_command("python3 -c \"import sys; sys.path.insert(0, 'tools/gpu'); import kernel_classes as k; "
                        "print([r['metrics'] for r in k.read_ncu(open('" + kFixtures + "ncu_dram_ranges.csv').read())])\"",
                        &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("'dram__bytes_read.sum': 1093414912.0, 'dram__bytes_write.sum': 744489984.0, "
                             "'gpu__time_duration.sum': 512704.0}"));
  EXPECT_THAT(out, HasSubstr("'dram__bytes_write.sum': 2147483648.0"));
}

// The table of a (synthetic) call folder: every group of class rows adds up to its measured row, the
// excess is step - 2 x forward, the sweep, layer, perturb/copy, DRAM and fused rows are there with
// the model's predictions beside them; a failed part, a FAIL and an unclassified kernel are named.
TEST(StepExcess, TableRowsAddUpToTheMeasuredTimes) {
  std::string t;
  ASSERT_EQ(run_command("python3 tools/gpu/excess_table.py " + kFixtures + "excess_call", &t), 0) << t;
  for (int col : {1, 2}) {
    double sum = 0;
    for (const char* cls : {"perturb", "update", "attention", "GEMM", "conversion", "norms/elementwise",
                            "memcpy/memset", "unclassified", "gaps"}) {
      const double v = cell(t, std::string("step: ") + cls, col);
      if (!std::isnan(v)) sum += v;
    }
    EXPECT_NEAR(sum, cell(t, "step (measured)", col), 0.011) << "column " << col << "\n" << t;
  }
  double fwd = 0;
  for (const char* cls : {"attention", "GEMM", "conversion", "norms/elementwise", "memcpy/memset", "gaps"})
    fwd += cell(t, std::string("forward: ") + cls, 1);
  EXPECT_NEAR(fwd, cell(t, "forward (measured)", 1), 0.011);
  EXPECT_NEAR(cell(t, "excess (step − 2 × forward)", 1), 100.0 - 2 * 30.0, 1e-9);
  EXPECT_NEAR(cell(t, "step, W′ block 8 MiB", 1), 104.5, 1e-9);
  EXPECT_NEAR(cell(t, "layer, two-streams-sm116 (10 blocks of 64 MiB)", 2), 2.55, 1e-9);
  EXPECT_NEAR(cell(t, "perturb/copy time, gaussian", 1), 0.60 / 0.375, 0.006);
  // the regions in order: the copy (3.2e9 bytes modelled), a layer at M = 1,024 (2.0e9), at 4,096 (4.0e9)
  EXPECT_NEAR(cell(t, "DRAM bytes of a copy (ncu; calibration)", 1), 1.0, 1e-9);
  EXPECT_NEAR(cell(t, "DRAM bytes of a serial layer (ncu)", 1), 2.1 / 2.0, 0.006);
  EXPECT_NEAR(cell(t, "DRAM bytes of a serial layer (ncu)", 2), 5.0 / 4.0, 0.006);
  EXPECT_NEAR(cell(t, "fused / W′ pair, 32000×4096, gaussian", 2), 9.5, 1e-9);
  EXPECT_THAT(t, HasSubstr("| step: perturb | 12.50 (12%) | 13.00 (5%) | 10–13 ms"));
  EXPECT_THAT(t, HasSubstr("3.150 FAIL"));
  EXPECT_THAT(t, HasSubstr("- unclassified kernel in smezo-step llama-7b T=256: void cub::DeviceRadixSortOnesweepKernel"));
  EXPECT_THAT(t, HasSubstr("- part dram: failed (exit status 1; dram.log)"));
  EXPECT_THAT(t, Not(HasSubstr("- part breakdown")));  // "done (ncu)" is done
}

// The driver on (emulated) CUDA at tiny settings, with a stand-in for ncu on the PATH that runs the
// command it profiles and prints the recorded CSV (kernels, or DRAM ranges for app-range): the
// breakdown reads it per phase, the DRAM part per region, and the table has both. No nsys is tried.
TEST(StepExcess, DriverWithAStandInNcuCuda) {
#ifdef SMEZO_WITH_CUDA
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const std::string dir = smezo_test::make_temp_dir("step_excess");
  std::string out;
  ASSERT_EQ(run_command("mkdir " + dir + "/bin", &out), 0) << out;
  smezo_test::write_file(dir + "/bin/ncu",
                         "#!/bin/bash\n"
                         "# a stand-in for ncu: runs the profiled command, then prints a recorded CSV\n"
                         "metrics=; args=(\"$@\"); i=0\n"
                         "while [ $i -lt ${#args[@]} ]; do\n"
                         "  case \"${args[$i]}\" in\n"
                         "    --metrics) metrics=${args[$((i+1))]}; i=$((i+2)) ;;\n"
                         "    --csv) i=$((i+1)) ;;\n"
                         "    --*) i=$((i+2)) ;;\n"
                         "    *) break ;;\n"
                         "  esac\n"
                         "done\n"
                         "\"${args[@]:$i}\" > /dev/null || exit $?\n"
                         "case \"$metrics\" in *dram*) cat " + kFixtures + "ncu_dram_ranges.csv ;; *) cat " +
                             kFixtures + "ncu_kernels.csv ;; esac\n");
  ASSERT_EQ(run_command("chmod +x " + dir + "/bin/ncu", &out), 0);
  const int rc = run_command("PATH=" + dir + "/bin:$PATH python3 tools/gpu/step_excess.py --tiny --profilers ncu "
                             "--parts timings,breakdown,dram --out " + dir + "/call --smezo " +
                                 smezo_test::smezo_binary() + " 2>&1",
                             &out);
  ASSERT_EQ(rc, 0) << out;
  const nlohmann::json b = smezo_test::read_json(dir + "/call/breakdown/breakdown.json");
  EXPECT_EQ(b["profiler"], "ncu");
  for (const char* key : {"tiny_8_forward", "tiny_8_smezo-step", "tiny_16_forward", "tiny_16_smezo-step"})
    EXPECT_NEAR(b["runs"][key]["classes"]["perturb"].get<double>(), 0.05664, 1e-9) << key;  // the recorded CSV
  const nlohmann::json d = smezo_test::read_json(dir + "/call/dram.json");
  EXPECT_EQ(d["results"].size(), 2u);
  const std::string t = read_file(dir + "/call/excess.md");
  EXPECT_THAT(t, HasSubstr("| step (measured) |"));
  EXPECT_THAT(t, HasSubstr("| step: perturb |"));
  EXPECT_THAT(t, HasSubstr("| step, W′ block 1 MiB |"));
  EXPECT_THAT(t, HasSubstr("| DRAM bytes of a copy (ncu; calibration) |"));
  EXPECT_THAT(t, HasSubstr("--tiny: a DRY RUN on tiny settings"));
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}
