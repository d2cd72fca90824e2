// tools/claim/zo_grid.py, the runner of the MeZO / R-MeZO / S-MeZO comparison: its table and plots
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
  ASSERT_EQ(run_command("python3 tools/claim/zo_grid.py table --runs tests/fixtures/zo_grid --report " + report, &out), 0)
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
  EXPECT_NE(run_command("python3 tools/claim/zo_grid.py table --runs " + empty, &out), 0);
  EXPECT_THAT(out, HasSubstr("no finished runs"));
}

// A SIGTERM to the runner (Ctrl-C, the end of a device call) stops its running job once the
// first training run has logged a few steps; the next call resumes that run with --resume and
// finishes the grid: the search, the best setting's second seed, then the zero-shot evaluation.
TEST(ZoGrid, InterruptedGridResumes) {
  const std::string runs = make_temp_dir("zo_grid_runs");
  const std::string base = "python3 tools/claim/zo_grid.py run --grid ci-tiny --smezo " + smezo_test::smezo_binary() +
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
  ASSERT_EQ(run_command("python3 tools/claim/zo_grid.py table --runs " + runs, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("| sst2 | S-MeZO | 0.75, "));
}

// The deadline stops running jobs the same way (resumably) and says so. (A job runs about a
// second here; the runner looks every 0.05 s, so the 0.3 s deadline meets both jobs running.
// With the default 1 s poll it raced them: on an idle machine they could finish first.)
TEST(ZoGrid, DeadlineStopsRunningJobs) {
  const std::string runs = make_temp_dir("zo_grid_deadline");
  std::string out;
  ASSERT_EQ(run_command("python3 tools/claim/zo_grid.py run --grid ci-tiny --smezo " + smezo_test::smezo_binary() +
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
  EXPECT_EQ(run_command("timeout 60 python3 tools/claim/zo_grid.py run --grid ci-tiny --smezo false --runs " + runs +
                            " --jobs 2 --poll-s 0.05",
                        &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("sst2/mezo-lr0.001-seed1 exited with 1"));
  EXPECT_THAT(out, HasSubstr("started 4, failed 4, unfinished 4"));
}

// The lease-sized grid's plan: its size and the GPU minutes at a stated step time (the
// lease-sized SST-2 grid is 15 runs of 1,500 steps; at 40 ms/step and 2x from concurrent runs, with the dev and
// test evaluations counted as steps, 8.8 minutes). The paper grid says it is for a long GPU.
TEST(ZoGrid, PlanStatesStepsAndMinutes) {
  std::string out;
  ASSERT_EQ(run_command("python3 tools/claim/zo_grid.py plan --grid smollm2-lease --tasks sst2 --step-ms 40 --speedup 2",
                        &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("9 search runs + 6 seed runs (after the search) = 15 training runs x 1500 steps = "
                             "22500 steps"));
  EXPECT_THAT(out, HasSubstr("at 40 ms/step and 2.0x from concurrent runs (stated): 8.8 min (528 s"));
  ASSERT_EQ(run_command("python3 tools/claim/zo_grid.py plan --grid smollm2-paper", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("long GPU only"));
  EXPECT_THAT(out, HasSubstr("= 315000 steps"));
  EXPECT_THAT(out, HasSubstr("measured on an H200"));  // no --step-ms: the planning figure, labelled
  EXPECT_NE(run_command("python3 tools/claim/zo_grid.py plan --grid smollm2-lease --tasks cola", &out), 0);
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
  ASSERT_EQ(run_command("python3 tools/claim/zo_grid.py calibrate" + grid + " --jobs-list 1,2 --steps 2", &out), 0)
      << out;
  EXPECT_THAT(out, HasSubstr("| 2 | "));
  const auto cal = nlohmann::json::parse(read_file(runs + "/calibration.json"));
  EXPECT_TRUE(cal["best_jobs"] == 1 || cal["best_jobs"] == 2) << cal.dump();
  EXPECT_GT(cal["ms_per_step_alone"].get<double>(), 0.0);
  EXPECT_FALSE(exists(runs + "/calibrate/j1-0"));  // timing runs removed
  ASSERT_EQ(run_command("python3 tools/claim/zo_grid.py run" + grid + " --jobs auto --poll-s 0.05 --drop-checkpoints",
                        &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("--jobs auto: "));
  EXPECT_THAT(out, HasSubstr("started 8, failed 0, unfinished 0 — grid complete"));
  EXPECT_TRUE(exists(runs + "/sst2/smezo-s0.75-lr1e-5-seed43/summary.json"));
  EXPECT_FALSE(exists(runs + "/sst2/smezo-s0.75-lr1e-5-seed43/checkpoint"));
  ASSERT_EQ(run_command("python3 tools/claim/zo_grid.py table --runs " + runs, &out), 0) << out;
  for (const char* row : {"| sst2 | MeZO | 0, 1e-5 | 2 | ", "| sst2 | R-MeZO | 0.75, 1e-5 | 2 | ",
                          "| sst2 | S-MeZO | 0.75, 1e-5 | 2 | ", "| sst2 | zero-shot |", "| sst2 | icl-k2 |"})
    EXPECT_THAT(out, HasSubstr(row));
  EXPECT_TRUE(exists(runs + "/dev_acc_sst2.svg"));
}

// --- the claim grid (smollm2-claim) and its report: tools/claim/zo_claim.py, tools/claim/zo_stats.py

// Student t quantiles, which Python's standard library lacks: the closed-form CDF for integer df
// inverted by bisection, against the published table (two-sided 95% and 90%).
TEST(ZoGrid, StudentTQuantilesMatchTheTables) {
  std::string out;
  ASSERT_EQ(run_command("python3 -c \"import sys; sys.path.insert(0, 'tools/claim'); import zo_stats as z; "
                        "print(' '.join('%.4f' % z.t_quantile(p, df) for p, df in ((0.975, 1), (0.975, 2), (0.975, 4), "
                        "(0.975, 9), (0.975, 30), (0.95, 1), (0.95, 5), (0.05, 3))))\"",
                        &out), 0) << out;
  EXPECT_EQ(out, "12.7062 4.3027 2.7764 2.2622 2.0423 6.3138 2.0150 -2.3534\n");
}

// The fixture tests/fixtures/zo_claim (hand-made numbers): on SST-2 S-MeZO's test accuracy
// beats MeZO's by +4, +3, +5 points at seeds 42-44 (mean 4.0, sd 1.0, t_{0.975,2} = 4.303:
// [+1.5, +6.5]): holds; on RTE by -5, -6, -7: does not hold; on BoolQ +1, +1, -2 (interval
// [-4.3, +4.3]) is undecided, and S-MeZO's best there, the corner of its one extension, still
// sits on two edges. Each best setting elsewhere lies inside its range.
TEST(ZoGrid, ClaimReportPairsSeedsAndDecides) {
  const std::string report = make_temp_dir("zo_claim_report");
  std::string out;
  ASSERT_EQ(run_command("python3 tools/claim/zo_grid.py table --runs tests/fixtures/zo_claim --report " + report, &out), 0)
      << out;
  const std::string claim = read_file(report + "/claim.md");
  EXPECT_THAT(out, HasSubstr(claim));
  EXPECT_THAT(claim, HasSubstr("- boolq: S-MeZO beats MeZO: undecided at this budget\n"
                               "- rte: S-MeZO beats MeZO: does not hold\n- sst2: S-MeZO beats MeZO: holds\n"));
  EXPECT_THAT(claim, HasSubstr("Paired S-MeZO − MeZO test accuracy, seeds 42, 43, 44: +4.0, +3.0, +5.0 points; "
                               "mean +4.0, sd 1.0, 95% t interval [+1.5, +6.5] (t = 4.303, df 2)."));
  EXPECT_THAT(claim, HasSubstr("95% t interval [-8.5, -3.5]"));
  EXPECT_THAT(claim, HasSubstr("95% t interval [-4.3, +4.3]"));
  EXPECT_THAT(claim, HasSubstr("**S-MeZO beats MeZO on sst2: holds** (the 95% interval lies above 0)."));
  EXPECT_THAT(claim, HasSubstr("| S-MeZO | 0.95, 0.0004 | 3 | 62.0 ± 1.0 | 71.0 | not reached | 50 | ON AN EDGE "
                               "(sparsity largest, lr largest), after extending once |"));
  EXPECT_THAT(claim, HasSubstr("| S-MeZO | 0.75, 0.0001 | 3 | 81.0 ± 1.0 | 76.0 | 500 | 40 | – |"));
  EXPECT_THAT(claim, HasSubstr("MeZO's final dev accuracy (74.0 %) at step 500; MeZO's at step 1000 (2.0× faster)"));
  EXPECT_THAT(claim, HasSubstr("Baselines (test accuracy %): icl-k16 78.4, zero-shot 51.6."));
  EXPECT_EQ(occurrences(claim, "ON AN EDGE"), 1u);
  const std::string svg = read_file(report + "/dev_acc_sst2.svg");
  EXPECT_EQ(occurrences(svg, "<polygon "), 2u);  // each method's min-max band over its 3 seeds
}

// The verdict's edge rule: an interval above 0 with MeZO's best on an edge, or below 0 with
// S-MeZO's, is undecided (a better setting could lie beyond the edge).
TEST(ZoGrid, ClaimVerdictNeedsTheLosersOptimum) {
  std::string out;
  ASSERT_EQ(run_command("python3 -c \"import sys; sys.path.insert(0, 'tools/claim'); import zo_claim as c; "
                        "up = {'low': 0.01, 'high': 0.05}; down = {'low': -0.05, 'high': -0.01}; "
                        "e = [('lr', 'high')]; "
                        "print([c.verdict(up, [], e)[0], c.verdict(up, e, [])[0], c.verdict(down, e, [])[0], "
                        "c.verdict(down, [], e)[0], c.verdict(None, [], [])[0]]); "
                        "print(c.extension_settings((0.9, 2e-4), {'sparsity': [0.5, 0.75, 0.9], 'lr': [3e-5, 2e-4]})); "
                        "print(c.extension_settings((0.5, 3e-5), {'sparsity': [0.5, 0.9], 'lr': [3e-5, 2e-4]})); "
                        "print(c.extension_settings((0.0, 2e-5), {'sparsity': [0.0], 'lr': [1e-5, 2e-5, 3e-5]}))\"",
                        &out), 0) << out;
  EXPECT_EQ(out,
            "['holds', 'undecided at this budget', 'does not hold', 'undecided at this budget', "
            "'undecided at this budget']\n"
            "([('sparsity', 'high'), ('lr', 'high')], [(0.9, 0.0004), (0.95, 0.0002), (0.95, 0.0004)])\n"
            "([('sparsity', 'low'), ('lr', 'low')], [(0.5, 1.5e-05), (0.25, 3e-05), (0.25, 1.5e-05)])\n"
            "([], [])\n");
}

// The runner's claim machinery on the CPU (grid ci-claim, stories260K): S-MeZO's best of two
// learning rates is on an edge, so the runner warns, records it and runs one more lr before
// the second seed; claim.md then says whether the best still sits on an edge.
TEST(ZoGrid, ClaimGridExtendsAnEdgeOnce) {
  const std::string runs = make_temp_dir("zo_claim_runs");
  std::string out;
  ASSERT_EQ(run_command("python3 tools/claim/zo_grid.py run --grid ci-claim --smezo " + smezo_test::smezo_binary() +
                            " --runs " + runs + " --jobs 2 --poll-s 0.05",
                        &out), 0) << out;
  EXPECT_EQ(occurrences(out, "WARNING: sst2 smezo: the best setting after the search"), 1u) << out;
  EXPECT_THAT(out, HasSubstr("grid complete"));
  const auto ext = nlohmann::json::parse(read_file(runs + "/sst2/extension-smezo.json"));
  const std::string added = ext["added"].get<std::string>();
  EXPECT_TRUE(added == "sst2/smezo-s0.75-lr0.0005-seed1" || added == "sst2/smezo-s0.75-lr0.006-seed1") << added;
  EXPECT_TRUE(exists(runs + "/" + added + "/summary.json"));
  ASSERT_EQ(run_command("python3 tools/claim/zo_grid.py table --runs " + runs, &out), 0) << out;
  EXPECT_THAT(read_file(runs + "/claim.md"), HasSubstr("Extended once: S-MeZO's best setting after the search"));
  EXPECT_THAT(out, testing::ContainsRegex("S-MeZO beats MeZO on sst2: (holds|does not hold|undecided at this budget)"));
}

// Seeds 45 and 46 (here the ci-claim grid's seed 3) join MeZO and S-MeZO only where the paired
// interval over the first seeds holds 0, and only once both methods' first seeds have finished:
// made-up summaries, the runner's job list read directly.
TEST(ZoGrid, ExtraSeedsOnlyWhereTheIntervalHoldsZero) {
  const std::string dir = make_temp_dir("zo_claim_extra");
  smezo_test::write_file(dir + "/check.py",
      "import json, os, sys\n"
      "sys.path.insert(0, 'tools/claim')\n"
      "import zo_grid\n"
      "def run(root, name, test, dev=0.5):\n"
      "    os.makedirs(os.path.join(root, 'sst2', name))\n"
      "    json.dump({'status': 'completed', 'final_dev_acc': dev, 'test_acc': test},\n"
      "              open(os.path.join(root, 'sst2', name, 'summary.json'), 'w'))\n"
      "grid = zo_grid.GRIDS['ci-claim']\n"
      "for case, tests in (('holds0', ((0.5, 0.6), (0.7, 0.6))), ('clear', ((0.7, 0.5), (0.8, 0.6))),\n"
      "                    ('waiting', ((0.5, 0.6), None))):\n"
      "    root = os.path.join(sys.argv[1], case)\n"
      "    run(root, 'mezo-lr0.001-seed1', 0.5)\n"
      "    run(root, 'smezo-s0.75-lr0.001-seed1', 0.6, dev=0.9)\n"
      "    run(root, 'smezo-s0.75-lr0.003-seed1', 0.5, dev=0.8)\n"
      "    run(root, 'smezo-s0.75-lr0.0005-seed1', 0.5, dev=0.7)\n"
      "    for seed, pair in ((1, tests[0]), (2, tests[1])):\n"
      "        if pair is None:\n"
      "            continue\n"
      "        for name, t in (('smezo-s0.75-lr0.001-seed%d' % seed, pair[0]), ('mezo-lr0.001-seed%d' % seed, pair[1])):\n"
      "            if not os.path.exists(os.path.join(root, 'sst2', name)):\n"
      "                run(root, name, t)\n"
      "            else:\n"
      "                json.dump({'status': 'completed', 'final_dev_acc': 0.9 if 'smezo' in name else 0.5, 'test_acc': t},\n"
      "                          open(os.path.join(root, 'sst2', name, 'summary.json'), 'w'))\n"
      "    names = [j[0] for k, j in zo_grid.all_jobs(grid, root) if k == 'train' and j[0].endswith('seed3')]\n"
      "    print(case, names)\n");
  std::string out;
  ASSERT_EQ(run_command("python3 " + dir + "/check.py " + dir, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("holds0 ['sst2/smezo-s0.75-lr0.001-seed3', 'sst2/mezo-lr0.001-seed3']"));
  EXPECT_THAT(out, HasSubstr("clear []"));
  EXPECT_THAT(out, HasSubstr("waiting []"));
}

// The claim grid's plan: its size, what the extensions and extra seeds may add, and the GPU
// minutes at the 2026-11-27 H200 calibration (52.5 ms/step alone, 4.66x with 8 at once).
TEST(ZoGrid, PlanStatesTheClaimGridsMinutes) {
  std::string out;
  ASSERT_EQ(run_command("python3 tools/claim/zo_grid.py plan --grid smollm2-claim", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("81 search runs + 18 seed runs (after the search) = 99 training runs x 3000 steps = "
                             "297000 steps"));
  EXPECT_THAT(out, HasSubstr("at most 21 edge-extension runs"));
  EXPECT_THAT(out, HasSubstr("12 extra-seed runs (seeds 45, 46 of MeZO and S-MeZO"));
  EXPECT_THAT(out, HasSubstr("at 52.5 ms/step and 4.7x from concurrent runs (measured on an H200, 2026-11-27"));
  EXPECT_THAT(out, HasSubstr(": 64.0 min (3838 s"));
  EXPECT_THAT(out, HasSubstr("with every extension and extra seed: at most 85.3 min"));
}

// The peer check: at every dev evaluation both have, our mean inside the peer's seed range and
// the peer's inside ours (tests/fixtures/zo_peer: MeZO agrees everywhere; S-MeZO's peer mean is
// 71.0 at step 500, outside our 74.5..74.5, and ours outside its 70.0..72.0).
TEST(ZoGrid, CompareWithThePeerListsWhereTheDistributionsDiffer) {
  const std::string dir = make_temp_dir("zo_peer_compare");
  std::string out;
  EXPECT_EQ(run_command("python3 tools/claim/zo_grid.py compare --runs tests/fixtures/zo_claim --peer tests/fixtures/zo_peer "
                        "--task sst2 --report " + dir + "/compare.md",
                        &out), 1) << out;
  EXPECT_EQ(read_file(dir + "/compare.md"), out);
  EXPECT_THAT(out, HasSubstr("| 500 | 66.0 | 66.0..66.0 | 66.0 | 65.0..67.0 | yes | yes |"));
  EXPECT_THAT(out, HasSubstr("| 500 | 74.5 | 74.5..74.5 | 71.0 | 70.0..72.0 | NO | NO |"));
  EXPECT_THAT(out, HasSubstr("Outside: step 500: our mean 74.5 outside the peer's 70.0..72.0; step 500: the peer's "
                             "mean 71.0 outside our 74.5..74.5"));
  EXPECT_THAT(out, HasSubstr("2 step(s) outside the other's range"));
}
