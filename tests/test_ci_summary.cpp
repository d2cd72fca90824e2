// tools/checks/ci_summary.py, the last step of .ci/run: sums the closing counts of every test run and
// fails when a run skipped other tests than tests/ci_expected_skips.txt lists for it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

using testing::HasSubstr;

namespace {

struct Summary {
  int rc;
  std::string out;
};

// A gtest-style log: closing line and skip list.
std::string gtest_log(int passed, int failed, const std::vector<std::string>& skipped) {
  std::string s = "[==========] tests ran.\n[  PASSED  ] " + std::to_string(passed) + " tests.\n";
  if (!skipped.empty()) {
    s += "[  SKIPPED ] " + std::to_string(skipped.size()) + " tests, listed below:\n";
    for (const std::string& n : skipped) s += "[  SKIPPED ] " + n + "\n";
  }
  return s + "emulated: " + std::to_string(passed) + " passed, " + std::to_string(failed) +
         " failed, " + std::to_string(skipped.size()) + " skipped\n";
}

Summary summarize(const std::string& dir, const std::string& runs) {
  Summary s;
  s.rc = smezo_test::run_command("python3 tools/checks/ci_summary.py --expected " + dir + "/expected " + runs, &s.out);
  return s;
}

}  // namespace

TEST(CiSummary, SumsRunsAndChecksTheSkippedSet) {
  const std::string dir = smezo_test::make_temp_dir("ci_summary");
  smezo_test::write_file(dir + "/expected", "# comment\nemu A.NeedsGpu\nemu B.Other  # why\n");
  smezo_test::write_file(dir + "/emu.log", gtest_log(10, 0, {"A.NeedsGpu", "B.Other"}));
  smezo_test::write_file(dir + "/det.log", "determinism  cuda/f32 PASS  x\nreplay       cuda/f32 PASS  y\n");
  Summary s = summarize(dir, "emu=" + dir + "/emu.log checks=" + dir + "/det.log");
  EXPECT_EQ(s.rc, 0) << s.out;
  EXPECT_THAT(s.out, HasSubstr("ci: emu: 10 passed, 0 failed, 2 skipped"));
  EXPECT_THAT(s.out, HasSubstr("ci: checks: 2 passed, 0 failed, 0 skipped"));
  EXPECT_THAT(s.out, testing::EndsWith("ci: 12 passed, 0 failed, 2 skipped\n"));

  // A test that starts to skip, one that stops: both named, CI fails.
  smezo_test::write_file(dir + "/emu.log", gtest_log(10, 0, {"A.NeedsGpu", "C.LostFixture"}));
  s = summarize(dir, "emu=" + dir + "/emu.log");
  EXPECT_EQ(s.rc, 1) << s.out;
  EXPECT_THAT(s.out, HasSubstr("C.LostFixture SKIPPED but is not in"));
  EXPECT_THAT(s.out, HasSubstr("B.Other is listed in"));

  // A failed test or check fails CI; a log without counts too.
  smezo_test::write_file(dir + "/emu.log", gtest_log(9, 1, {"A.NeedsGpu", "B.Other"}));
  EXPECT_EQ(summarize(dir, "emu=" + dir + "/emu.log").rc, 1);
  smezo_test::write_file(dir + "/det.log", "determinism  cuda/f32 FAIL  two runs differ\n");
  EXPECT_EQ(summarize(dir, "checks=" + dir + "/det.log").rc, 1);
  // "RUN? Suite.Test": a test that may skip or run there (the CPU's instruction sets); either
  // passes and the line says which, while the other lists still hold.
  smezo_test::write_file(dir + "/expected", "emu A.NeedsGpu\nemu? D.Avx512\n");
  smezo_test::write_file(dir + "/emu.log", gtest_log(10, 0, {"A.NeedsGpu", "D.Avx512"}));
  s = summarize(dir, "emu=" + dir + "/emu.log");
  EXPECT_EQ(s.rc, 0) << s.out;
  EXPECT_THAT(s.out, HasSubstr("ci: emu: D.Avx512 skipped (it may skip on this machine)"));
  smezo_test::write_file(dir + "/emu.log", gtest_log(10, 0, {"A.NeedsGpu"}));
  s = summarize(dir, "emu=" + dir + "/emu.log");
  EXPECT_EQ(s.rc, 0) << s.out;
  EXPECT_THAT(s.out, HasSubstr("ci: emu: D.Avx512 ran (it may skip on this machine)"));
  smezo_test::write_file(dir + "/emu.log", gtest_log(10, 0, {"D.Avx512"}));
  EXPECT_EQ(summarize(dir, "emu=" + dir + "/emu.log").rc, 1);  // A.NeedsGpu must still skip
  smezo_test::write_file(dir + "/none.log", "make: *** [test] Error 1\n");
  s = summarize(dir, "cpu=" + dir + "/none.log");
  EXPECT_EQ(s.rc, 1);
  EXPECT_THAT(s.out, HasSubstr("no closing 'N passed, N failed, N skipped' line"));
}

// The committed list names tests that exist (a renamed test must be renamed there too).
TEST(CiSummary, ExpectedSkipsNameRealTests) {
  const std::string list = smezo_test::read_file("tests/ci_expected_skips.txt");
  for (const char* name : {"cpu BackendOps.LinearProbePair", "cpu MpiTrain.BuildWithoutMpiRefusesSeveralProcesses",
                           "emu-fwd EmuSelfTest.MisalignedFloat4LoadIsReported"})
    EXPECT_THAT(list, HasSubstr(name));
  EXPECT_THAT(list, testing::Not(HasSubstr("\nemu-san ")));  // the sanitized run skips nothing
  // The sanitized CPU run is the NO_MPI=1 build: there the MPI-refusal test must run.
  EXPECT_THAT(list, HasSubstr("\ncpu-asan MpiTrain.TwoAndThreeRanksEqualOneProcessAndReplay"));
  EXPECT_THAT(list, testing::Not(HasSubstr("cpu-asan MpiTrain.BuildWithoutMpiRefusesSeveralProcesses")));
}
