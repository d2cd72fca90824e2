// .ci/run's own logic, on a scratch tree whose every command is a stub (tools/checks/ci_run_selftest.sh):
// however a phase fails, CI prints its closing summary line ("ci: N passed, N failed, N skipped")
// and exits 1; a failed run in a lane leaves every other phase running, a failed build that later
// phases need ends CI at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

using smezo_test::run_command;
using testing::HasSubstr;
using testing::Not;

namespace {

struct Ci {
  int rc;
  std::string out;
};

Ci ci_with_failure(const std::string& fail) {
  Ci c;
  c.rc = run_command("tools/checks/ci_run_selftest.sh '" + fail + "'", &c.out);
  return c;
}

// The output's last line.
std::string last_line(const std::string& out) {
  const size_t end = out.find_last_not_of('\n');
  const size_t start = out.rfind('\n', end);
  return out.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

}  // namespace

TEST(CiRun, EveryPhasePassingEndsWithTheSummaryAndStatusZero) {
  const Ci c = ci_with_failure("");
  EXPECT_EQ(c.rc, 0) << c.out;
  EXPECT_EQ(last_line(c.out), "ci: 22 passed, 0 failed, 0 skipped") << c.out;
  EXPECT_THAT(c.out, Not(HasSubstr("FAILED")));
  for (const char* phase : {"README command 1", "CPU build under ASan+UBSan", "fuzz targets", "fuzzing (safetensors",
                            "fuzzing (task_files", "emulated CUDA tests (schedule rev)", "GGUF export round trip",
                            "CPU suite under ASan+UBSan"})
    EXPECT_THAT(c.out, HasSubstr(std::string("ci phase: ") + phase)) << phase;
}

TEST(CiRun, AFailedRunInALaneFailsCiAfterEveryPhaseRan) {
  const Ci c = ci_with_failure("EMU_SCHED=rev");
  EXPECT_EQ(c.rc, 1) << c.out;
  EXPECT_THAT(c.out, HasSubstr("ci phase: emulated CUDA tests (schedule rev) 0 s FAILED (exit status 1)"));
  EXPECT_THAT(c.out, HasSubstr("ci: FAILED phases: emu-rev"));
  EXPECT_THAT(c.out, HasSubstr("ci phase: CPU suite under ASan+UBSan"));  // the phase after the lanes ran
  EXPECT_EQ(last_line(c.out), "ci: 19 passed, 1 failed, 0 skipped") << c.out;
}

TEST(CiRun, AFailedBuildEndsCiWithTheSummary) {
  const Ci c = ci_with_failure("BUILD=build-asan");
  EXPECT_EQ(c.rc, 1) << c.out;
  EXPECT_THAT(c.out, HasSubstr("ci: FAILED phases: CPU build under ASan+UBSan (build-asan/)"));
  EXPECT_THAT(c.out, Not(HasSubstr("ci phase: fuzz targets")));  // nothing after it ran
  EXPECT_THAT(c.out, HasSubstr("ci: emu-fwd: cannot read"));
  EXPECT_EQ(last_line(c.out), "ci: 7 passed, 0 failed, 0 skipped") << c.out;
}

TEST(CiRun, AFailedReadmeCommandFailsCiButTheOtherPhasesRun) {
  const Ci c = ci_with_failure("run 2");
  EXPECT_EQ(c.rc, 1) << c.out;
  EXPECT_THAT(c.out, HasSubstr("ci: FAILED phases: README command 2"));
  EXPECT_THAT(c.out, HasSubstr("ci phase: emulated CUDA tests (schedule rev)"));
  EXPECT_EQ(last_line(c.out), "ci: 15 passed, 1 failed, 0 skipped") << c.out;
}
