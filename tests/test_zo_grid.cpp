// tools/zo_grid.py, the runner of the MeZO / R-MeZO / S-MeZO comparison: its table and plots
// from a small fake set of run directories (tests/fixtures/zo_grid, hand-made numbers whose
// expected table is worked out below), and a grid interrupted at a deadline then resumed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::occurrences;
using smezo_test::read_file;
using smezo_test::run_command;
using testing::HasSubstr;

namespace {

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

// The fixture: MeZO lr 1e-6 (chosen over lr 2e-6 by seed 42's final dev 0.60 > 0.55) with
// seeds at test 0.61/0.63/0.59 -> 61.0 ± 2.0; its mean final dev 0.60 is the target, which its
// mean dev curve reaches at step 400. S-MeZO s0.8 lr 5e-6 (chosen over s0.5 by 0.66 > 0.59)
// reaches it at step 100 -> 4.0x; test 0.70/0.71/0.69 -> 70.0 ± 1.0. R-MeZO never reaches it.
// An unfinished run (a seed log, no summary) is left out.
TEST(ZoGrid, TableFromFakeRuns) {
  const std::string report = make_temp_dir("zo_grid_table");
  std::string out;
  ASSERT_EQ(run_command("python3 tools/zo_grid.py table --runs tests/fixtures/zo_grid --report " + report, &out), 0)
      << out;
  const std::string table = read_file(report + "/table.md");
  EXPECT_EQ(table, out.substr(0, table.size()));
  EXPECT_THAT(table, HasSubstr("| rte | zero-shot | – | – | 52.7 |"));
  EXPECT_THAT(table, HasSubstr("| rte | MeZO | 0, 1e-6 | 3 | 61.0 ± 2.0 | 62.0 | 400 (1.0×) | 50 | 700 |"));
  EXPECT_THAT(table, HasSubstr("| rte | R-MeZO | 0.8, 5e-6 | 1 | 54.0 ± 0.0 | 55.0 | not reached | 50 | 700 |"));
  EXPECT_THAT(table, HasSubstr("| rte | S-MeZO | 0.8, 5e-6 | 3 | 70.0 ± 1.0 | 68.0 | 100 (4.0×) | 40 | 700 |"));
  EXPECT_EQ(occurrences(table, "\n"), 6u);  // header, rule, zero-shot and three methods
  const std::string svg = read_file(report + "/dev_acc_rte.svg");
  EXPECT_EQ(occurrences(svg, "<path "), 3u);
  EXPECT_THAT(svg, HasSubstr("S-MeZO (s 0.8, lr 5e-6)"));
  EXPECT_THAT(svg, HasSubstr("zero-shot (test)"));
}

TEST(ZoGrid, TableWithoutRunsIsAnError) {
  const std::string empty = make_temp_dir("zo_grid_empty");
  std::string out;
  EXPECT_NE(run_command("python3 tools/zo_grid.py table --runs " + empty, &out), 0);
  EXPECT_THAT(out, HasSubstr("no finished runs"));
}

// A SIGTERM to the runner (Ctrl-C, the end of a device call) stops its running job once the
// first training run has logged a few steps; the next call resumes that run with --resume and
// finishes the grid: the search, the best setting's second seed, then the zero-shot evaluation.
TEST(ZoGrid, InterruptedGridResumes) {
  const std::string runs = make_temp_dir("zo_grid_runs");
  const std::string base = "python3 tools/zo_grid.py run --grid ci-tiny --smezo " + smezo_test::smezo_binary() +
                           " --runs " + runs + " --poll-s 0.05";
  const std::string first_log = runs + "/sst2/mezo-lr0.001-seed1/seed_log.txt";
  std::string out;
  // Records are lines that start with a digit; the run flushes its seed log every 2 steps.
  ASSERT_EQ(run_command("sh -c '" + base + " --jobs 1 > " + runs + "/first.log 2>&1 & pid=$!; "
                        "for i in $(seq 1200); do n=$(grep -c \"^[0-9]\" " + first_log + " 2>/dev/null); "
                        "[ \"${n:-0}\" -ge 2 ] && break; sleep 0.05; done; kill -TERM $pid; wait $pid; "
                        "echo runner exit $?'", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("runner exit 143"));
  const std::string first = read_file(runs + "/first.log");
  EXPECT_THAT(first, HasSubstr("SIGTERM: stopped sst2/mezo-lr0.001-seed1 (resumes next time)")) << first;
  ASSERT_EQ(run_command(base + " --jobs 2", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("started sst2/mezo-lr0.001-seed1 (resume)"));
  EXPECT_THAT(out, HasSubstr("grid complete"));
  for (const char* run : {"mezo-lr0.001-seed1", "mezo-lr0.001-seed2", "smezo-s0.75-lr0.001-seed1",
                          "smezo-s0.75-lr0.003-seed1"}) {
    const auto summary = nlohmann::json::parse(read_file(runs + "/sst2/" + run + "/summary.json"));
    EXPECT_EQ(summary["status"], "completed") << run;
  }
  const auto resumed = nlohmann::json::parse(read_file(runs + "/sst2/mezo-lr0.001-seed1/summary.json"));
  EXPECT_TRUE(resumed["resumed_at_step"].is_number()) << resumed.dump();
  EXPECT_TRUE(exists(runs + "/sst2/eval-zero-shot.json"));
  // Exactly one of the two S-MeZO settings got its second seed.
  EXPECT_NE(exists(runs + "/sst2/smezo-s0.75-lr0.001-seed2"), exists(runs + "/sst2/smezo-s0.75-lr0.003-seed2"));
  ASSERT_EQ(run_command("python3 tools/zo_grid.py table --runs " + runs, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("| sst2 | S-MeZO | 0.75, "));
}

// The deadline stops running jobs the same way (resumably) and says so. (A job runs about a
// second here; the runner looks every 0.05 s, so the 0.3 s deadline meets both jobs running.
// With the default 1 s poll it raced them: on an idle machine they could finish first.)
TEST(ZoGrid, DeadlineStopsRunningJobs) {
  const std::string runs = make_temp_dir("zo_grid_deadline");
  std::string out;
  ASSERT_EQ(run_command("python3 tools/zo_grid.py run --grid ci-tiny --smezo " + smezo_test::smezo_binary() +
                            " --runs " + runs + " --jobs 2 --deadline-s 0.3 --poll-s 0.05",
                        &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("deadline: stopped sst2/mezo-lr0.001-seed1 (resumes next time)"));
  EXPECT_THAT(out, HasSubstr("unfinished 4"));  // three search runs and the eval
}

// A job that fails (here every command: --smezo is `false`) is tried once per invocation, not
// restarted forever; the runner ends, counts it, and exits 1.
TEST(ZoGrid, FailingJobsAreNotRestartedForever) {
  const std::string runs = make_temp_dir("zo_grid_failing");
  std::string out;
  EXPECT_EQ(run_command("timeout 60 python3 tools/zo_grid.py run --grid ci-tiny --smezo false --runs " + runs +
                            " --jobs 2 --poll-s 0.05",
                        &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("sst2/mezo-lr0.001-seed1 exited with 1"));
  EXPECT_THAT(out, HasSubstr("started 4, failed 4, unfinished 4"));
}

// The lease-sized grid's plan: its size and the GPU minutes at a stated step time (issue #21:
// SST-2 is 15 runs of 1,500 steps; at 40 ms/step and 2x from concurrent runs, with the dev and
// test evaluations counted as steps, 8.8 minutes). The paper grid says it is for a long GPU.
TEST(ZoGrid, PlanStatesStepsAndMinutes) {
  std::string out;
  ASSERT_EQ(run_command("python3 tools/zo_grid.py plan --grid smollm2-lease --tasks sst2 --step-ms 40 --speedup 2",
                        &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("9 search runs + 6 seed runs (after the search) = 15 training runs x 1500 steps = "
                             "22500 steps"));
  EXPECT_THAT(out, HasSubstr("at 40 ms/step and 2.0x from concurrent runs (stated): 8.8 min (528 s"));
  ASSERT_EQ(run_command("python3 tools/zo_grid.py plan --grid smollm2-paper", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("long GPU only"));
  EXPECT_THAT(out, HasSubstr("= 315000 steps"));
  EXPECT_THAT(out, HasSubstr("measured on an H200"));  // no --step-ms: the planning figure, labelled
  EXPECT_NE(run_command("python3 tools/zo_grid.py plan --grid smollm2-lease --tasks cola", &out), 0);
  EXPECT_THAT(out, HasSubstr("has no task cola"));
}

// The lease grid's own commands on smoke-test settings (--tiny, what the backlog's CPU dry run
// runs): calibrate times 1 and 2 runs at once and picks a count, `run --jobs auto` uses it and
// drops the checkpoints, and the table has all three methods over two seeds and both baselines.
TEST(ZoGrid, TinyLeaseGridCalibratesRunsAndTables) {
  const std::string runs = make_temp_dir("zo_grid_tiny");
  const std::string grid = " --grid smollm2-lease --tiny --device cpu --smezo " + smezo_test::smezo_binary() +
                           " --runs " + runs;
  std::string out;
  ASSERT_EQ(run_command("python3 tools/zo_grid.py calibrate" + grid + " --jobs-list 1,2 --steps 2", &out), 0)
      << out;
  EXPECT_THAT(out, HasSubstr("| 2 | "));
  const auto cal = nlohmann::json::parse(read_file(runs + "/calibration.json"));
  EXPECT_TRUE(cal["best_jobs"] == 1 || cal["best_jobs"] == 2) << cal.dump();
  EXPECT_GT(cal["ms_per_step_alone"].get<double>(), 0.0);
  EXPECT_FALSE(exists(runs + "/calibrate/j1-0"));  // timing runs removed
  ASSERT_EQ(run_command("python3 tools/zo_grid.py run" + grid + " --jobs auto --poll-s 0.05 --drop-checkpoints",
                        &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("--jobs auto: "));
  EXPECT_THAT(out, HasSubstr("started 8, failed 0, unfinished 0 — grid complete"));
  EXPECT_TRUE(exists(runs + "/sst2/smezo-s0.75-lr1e-5-seed43/summary.json"));
  EXPECT_FALSE(exists(runs + "/sst2/smezo-s0.75-lr1e-5-seed43/checkpoint"));
  ASSERT_EQ(run_command("python3 tools/zo_grid.py table --runs " + runs, &out), 0) << out;
  for (const char* row : {"| sst2 | MeZO | 0, 1e-5 | 2 | ", "| sst2 | R-MeZO | 0.75, 1e-5 | 2 | ",
                          "| sst2 | S-MeZO | 0.75, 1e-5 | 2 | ", "| sst2 | zero-shot |", "| sst2 | icl-k2 |"})
    EXPECT_THAT(out, HasSubstr(row));
  EXPECT_TRUE(exists(runs + "/dev_acc_sst2.svg"));
}
