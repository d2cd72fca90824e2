// Data-parallel training over MPI: `mpirun -np 2` and `-np 3` runs of stories260K
// equal the one-process run bit for bit (seed log, metrics, accuracies, final weights); the
// seed log of a 3-rank run replays on one process; a killed multi-rank run resumes with another
// rank count; a rank that hangs or exits early ends the job with a message naming it, never a
// hang; ranks started with different options refuse to train. Without mpirun these skip, and a
// build without MPI refuses to run as one of several processes.
//
// mpirun runs inside the test container: as root (allowed by OMPI_ALLOW_RUN_AS_ROOT*), shared
// memory only (no network, no ssh), ranks free to share cores (--oversubscribe, no binding),
// one OpenMP thread per rank so 3 ranks on 2 cores do not fight.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

#include "dist/world.h"
#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::read_json;
using smezo_test::run_command;
using testing::HasSubstr;

namespace {

const std::string kSmezo = smezo_test::smezo_binary();
// 5 examples per step: 3 + 2 on two ranks, 2 + 2 + 1 on three (uneven shards on purpose).
const std::string kRun = " train --task sst2 --batch 5 --max-len 40 --lr 2e-3 --steps 4 --eval-every 2 "
                         "--dev-examples 7 --test-examples 5 --flush-every 2 --checkpoint-every 2 --progress-every 1";

bool have_mpirun() { return std::system("command -v mpirun > /dev/null 2>&1") == 0; }

// mpirun with N ranks, set up for a container; `timeout` so a broken test cannot hang CI.
std::string mpirun(int ranks, int limit_s = 240) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader "
         "OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 "
         "OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_plm_rsh_agent=false OMP_NUM_THREADS=1 "
         "timeout " + std::to_string(limit_s) + " mpirun --oversubscribe -np " + std::to_string(ranks) + " ";
}

#ifdef SMEZO_MPI
#define SKIP_WITHOUT_MPIRUN()                                                                           \
  do {                                                                                                  \
    if (!have_mpirun()) GTEST_SKIP() << "mpirun not found: apt-get install openmpi-bin (tools/deps.sh)"; \
  } while (0)
#else
#define SKIP_WITHOUT_MPIRUN() GTEST_SKIP() << "this smezo was built without MPI (make info shows ✗ MPI)"
#endif

// Everything a run leaves that must not depend on the number of ranks.
void expect_same_run(const std::string& a, const std::string& b) {
  EXPECT_EQ(read_file(a + "/seed_log.txt"), read_file(b + "/seed_log.txt"));
  EXPECT_EQ(read_file(a + "/metrics.jsonl"), read_file(b + "/metrics.jsonl"));
  EXPECT_EQ(read_file(a + "/checkpoint/model.safetensors"), read_file(b + "/checkpoint/model.safetensors"));
  const nlohmann::json sa = read_json(a + "/summary.json"), sb = read_json(b + "/summary.json");
  for (const char* key : {"first_loss", "final_loss", "final_dev_acc", "best_dev_acc", "test_acc", "hyperparameters"})
    EXPECT_EQ(sa[key], sb[key]) << key;
}

}  // namespace

TEST(MpiShard, ContiguousBalancedAndComplete) {
  for (int size = 1; size <= 5; size++) {
    for (int64_t n = 0; n <= 13; n++) {
      int64_t next = 0;
      for (int r = 0; r < size; r++) {
        const smezo::Shard s = smezo::shard_of(n, r, size);
        EXPECT_EQ(s.begin, next) << n << " " << r << "/" << size;
        EXPECT_TRUE(s.size() == n / size || s.size() == n / size + 1);
        EXPECT_EQ(s.size() > n / size, r < n % size);
        next = s.end;
      }
      EXPECT_EQ(next, n);
    }
  }
}

TEST(MpiTrain, TwoAndThreeRanksEqualOneProcessAndReplay) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = make_temp_dir("mpi_equal");
  std::string out;
  ASSERT_EQ(run_command(kSmezo + kRun + " --out " + dir + "/one", &out), 0) << out;
  ASSERT_EQ(run_command(mpirun(2) + kSmezo + kRun + " --out " + dir + "/two", &out), 0) << out;
  EXPECT_THAT(out, testing::Not(HasSubstr("rank 1"))) << "only rank 0 speaks: " << out;
  ASSERT_EQ(run_command(mpirun(3) + kSmezo + kRun + " --out " + dir + "/three", &out), 0) << out;
  // and with the probes in two passes (both probes' scores still in one exchange)
  ASSERT_EQ(run_command(mpirun(2) + kSmezo + kRun + " --probes separate --out " + dir + "/separate", &out), 0) << out;
  // one progress line per step, from rank 0 alone
  size_t lines = 0;
  for (size_t at = out.find("step 1/4"); at != std::string::npos; at = out.find("step 1/4", at + 1)) lines++;
  EXPECT_EQ(lines, 1u) << out;
  expect_same_run(dir + "/one", dir + "/two");
  expect_same_run(dir + "/one", dir + "/three");
  expect_same_run(dir + "/one", dir + "/separate");
  EXPECT_EQ(read_json(dir + "/two/summary.json")["probes"], "pair");
  EXPECT_EQ(read_json(dir + "/separate/summary.json")["probes"], "separate");
  EXPECT_EQ(read_json(dir + "/three/summary.json")["ranks"], 3);
  EXPECT_EQ(read_json(dir + "/one/summary.json")["ranks"], 1);
  // the files of the run folder are rank 0's alone: the same set as one process writes
  std::string ls1, ls3;
  run_command("cd " + dir + "/one && ls -A . checkpoint", &ls1);
  run_command("cd " + dir + "/three && ls -A . checkpoint", &ls3);
  EXPECT_THAT(ls1, HasSubstr("seed_log.txt"));
  EXPECT_EQ(ls1, ls3);

  // the 3-rank seed log replays on one process to the 3-rank run's weights
  const std::string log = read_file(dir + "/three/seed_log.txt");
  const size_t header = log.find("\n# {");
  ASSERT_NE(header, std::string::npos) << log;
  const std::string base =
      nlohmann::json::parse(log.substr(header + 3, log.find('\n', header + 1) - header - 3))["model"];
  ASSERT_EQ(run_command(kSmezo + " replay " + base + " " + dir + "/three/seed_log.txt --out " + dir + "/replayed", &out),
            0)
      << out;
  EXPECT_EQ(read_file(dir + "/replayed/model.safetensors"), read_file(dir + "/three/checkpoint/model.safetensors"));
}

// A rank that stops answering: the others give up after --mpi-timeout, rank 0 says which rank,
// records it in summary.json, and the whole job ends; --resume on another rank count then
// finishes the run exactly as one uninterrupted process does.
TEST(MpiTrain, HungRankIsNamedAndTheRunResumes) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = make_temp_dir("mpi_hang");
  std::string out;
  const auto t0 = std::chrono::steady_clock::now();
  // exchange 1 checks the options, steps 1 and 2 use 2 and 3 (both probes' scores in one), the
  // dev evaluation after step 2 is 4: exchange 5 is step 3's
  const int rc = run_command("SMEZO_DIST_FAULT=hang:1:5 " + mpirun(3, 120) + kSmezo + kRun + " --mpi-timeout 5 --out " +
                                 dir + "/run",
                             &out);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(rc, 124) << "the job hung until the test's own timeout: " << out;
  EXPECT_LT(took, 90.0) << out;
  EXPECT_THAT(out, HasSubstr("smezo: error: rank 0 of 3: no answer from rank 1 within 5 s in the exchange of the "
                             "probes' scores (exchange 5)"));
  EXPECT_THAT(read_json(dir + "/run/summary.json")["status"].get<std::string>(), HasSubstr("no answer from rank 1"));

  ASSERT_EQ(run_command(mpirun(2) + kSmezo + kRun + " --resume --out " + dir + "/run", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("resuming"));
  ASSERT_EQ(run_command(kSmezo + kRun + " --out " + dir + "/one", &out), 0) << out;
  EXPECT_EQ(read_file(dir + "/one/seed_log.txt"), read_file(dir + "/run/seed_log.txt"));
  EXPECT_EQ(read_file(dir + "/one/checkpoint/model.safetensors"), read_file(dir + "/run/checkpoint/model.safetensors"));
}

// A rank that exits in the middle of the run: the job ends at once (not after the timeout),
// non-zero, and the output names the rank.
TEST(MpiTrain, RankThatExitsEarlyEndsTheJob) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = make_temp_dir("mpi_exit");
  std::string out;
  const auto t0 = std::chrono::steady_clock::now();
  const int rc =
      run_command("SMEZO_DIST_FAULT=exit:2:5 " + mpirun(3, 120) + kSmezo + kRun + " --mpi-timeout 100 --out " + dir, &out);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(rc, 124) << "the job hung until the test's own timeout: " << out;
  EXPECT_LT(took, 60.0) << out;
  EXPECT_THAT(out, HasSubstr("rank 2 of 3: SMEZO_DIST_FAULT: exiting at exchange 5"));
  // named by mpirun ("Process name: [[jobid,1],2]" in Open MPI 4, "[prterun-host-pid@1,2]" in
  // 5, "process rank 2") or by a rank's timeout
  EXPECT_THAT(out, testing::ContainsRegex(
                       "\\[\\[[0-9]+,[0-9]+\\],2\\]|@[0-9]+,2\\]|process rank 2|no answer from rank 2"));
}

// Ranks must run the same thing: different options are refused, naming the rank.
TEST(MpiTrain, RanksWithDifferentOptionsRefuse) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = make_temp_dir("mpi_mpmd");
  std::string out;
  const std::string a = kSmezo + kRun + " --seed 1 --out " + dir + "/run", b = kSmezo + kRun + " --seed 2 --out " + dir + "/run";
  EXPECT_NE(run_command(mpirun(1) + a + " : -np 1 " + b, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("smezo: error: rank 0 of 2: rank 1 has other run options (model, data, method) than rank 0"));
  EXPECT_NE(run_command("test -e " + dir + "/run", &out), 0) << "refused before writing anything";
}

// Slurm's srun without an MPI plugin starts processes that MPI sees as alone: refused.
TEST(MpiTrain, LauncherAndMpiDisagreeOnTheRankCount) {
#ifndef SMEZO_MPI
  GTEST_SKIP() << "this smezo was built without MPI";
#endif
  std::string out;
  EXPECT_EQ(run_command("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SLURM_STEP_NUM_TASKS=2 timeout 60 " +
                            kSmezo + kRun + " --out " + make_temp_dir("mpi_srun"),
                        &out),
            1);
  EXPECT_THAT(out, HasSubstr("smezo: error: SLURM_STEP_NUM_TASKS says this job has 2 processes, but MPI sees 1"));
}

// A build without MPI refuses to be one of several processes instead of training alone.
TEST(MpiTrain, BuildWithoutMpiRefusesSeveralProcesses) {
#ifdef SMEZO_MPI
  GTEST_SKIP() << "this smezo was built with MPI (the one-process refusal is built with NO_MPI=1)";
#else
  std::string out;
  EXPECT_EQ(run_command("OMPI_COMM_WORLD_SIZE=2 " + kSmezo + kRun + " --out " + make_temp_dir("nompi"), &out), 1);
  EXPECT_THAT(out, HasSubstr("smezo: error: this smezo was built without MPI, but it was started as one of 2 processes "
                             "(OMPI_COMM_WORLD_SIZE=2)"));
  if (have_mpirun()) {  // and the same under a real mpirun
    EXPECT_NE(run_command(mpirun(2) + kSmezo + kRun + " --out " + make_temp_dir("nompi_mpirun"), &out), 0);
    EXPECT_THAT(out, HasSubstr("smezo: error: this smezo was built without MPI"));
  }
#endif
}

// ---- pipeline parallel (--pipeline-stages K): stories260K has 5 layers, so 2 stages hold 3 + 2
// layers, 4 stages 2 + 1 + 1 + 1; its head is tied, so the first and the last stage both hold
// the token embedding and must keep it identical.

// 2 and 4 stages (probe pairs in 1 and 3 micro-batches), and 2 stages × 2 data-parallel
// replicas (separate probes, 2 micro-batches each), equal one process bit for bit: seed
// log, metrics, dev/test accuracies, and the one model.safetensors rank 0 assembles from the
// stages (the evaluations and the checkpoint of step 2 run mid-training).
TEST(MpiPipeline, TwoAndFourStagesAndReplicasEqualOneProcess) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = make_temp_dir("mpi_pipeline");
  std::string out;
  ASSERT_EQ(run_command(kSmezo + kRun + " --out " + dir + "/one", &out), 0) << out;
  ASSERT_EQ(run_command(mpirun(2) + kSmezo + kRun + " --pipeline-stages 2 --out " + dir + "/s2", &out), 0) << out;
  EXPECT_THAT(out, testing::Not(HasSubstr("rank 1"))) << "only rank 0 speaks: " << out;
  ASSERT_EQ(run_command(mpirun(4) + kSmezo + kRun + " --pipeline-stages 4 --micro-batches 3 --out " + dir + "/s4", &out), 0)
      << out;
  // the probes as separate micro-batches (+ then -), 2 per probe in flight
  ASSERT_EQ(run_command(mpirun(4) + kSmezo + kRun + " --pipeline-stages 2 --probes separate --micro-batches 2 --out " +
                            dir + "/s2r2",
                        &out),
            0)
      << out;
  for (const char* run : {"/s2", "/s4", "/s2r2"}) {
    SCOPED_TRACE(run);
    expect_same_run(dir + "/one", dir + run);
    EXPECT_EQ(read_json(dir + run + "/summary.json")["parameters"], read_json(dir + "/one/summary.json")["parameters"]);
    EXPECT_EQ(read_json(dir + run + "/summary.json")["parameters_in_tuned_tensors"],
              read_json(dir + "/one/summary.json")["parameters_in_tuned_tensors"]);
  }
  const nlohmann::json s4 = read_json(dir + "/s4/summary.json");
  EXPECT_EQ(s4["pipeline_stages"], 4);
  EXPECT_EQ(s4["micro_batches"], 3);
  EXPECT_EQ(s4["probes"], "pair");
  EXPECT_EQ(read_json(dir + "/s2r2/summary.json")["probes"], "separate");
  EXPECT_EQ(read_json(dir + "/s2/summary.json")["micro_batches"], 1) << "the cpu default";
  EXPECT_EQ(s4["ranks"], 4);
  // rank 0, the first of 4 stages, holds a fraction of the model
  EXPECT_LT(s4["peak_backend_memory_MB"].get<double>(),
            read_json(dir + "/one/summary.json")["peak_backend_memory_MB"].get<double>());
}

// S-MeZO (per-tensor thresholds held by the stages, merged into the seed log header) with the
// gold-token loss (COPA) over 3 stages.
TEST(MpiPipeline, SparseMezoGoldTokenLossThreeStages) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = make_temp_dir("mpi_pipeline_smezo");
  const std::string run = " train --task copa --method smezo --sparsity 0.6 --batch 6 --max-len 48 --lr 2e-3 --steps 3 "
                          "--eval-every 2 --dev-examples 7 --test-examples 5 --progress-every 1";
  std::string out;
  ASSERT_EQ(run_command(kSmezo + run + " --out " + dir + "/one", &out), 0) << out;
  ASSERT_EQ(run_command(mpirun(3) + kSmezo + run + " --pipeline-stages 3 --out " + dir + "/s3", &out), 0) << out;
  expect_same_run(dir + "/one", dir + "/s3");
  EXPECT_THAT(read_file(dir + "/s3/seed_log.txt"), HasSubstr("model.layers.4.mlp.down_proj.weight"));
}

// A stage that stops answering: its neighbour names it within --mpi-timeout, the job ends, and
// --resume (here on one process) finishes the run exactly as an uninterrupted one.
TEST(MpiPipeline, HungStageIsNamedAndTheRunResumes) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = make_temp_dir("mpi_pipeline_hang");
  std::string out;
  const auto t0 = std::chrono::steady_clock::now();
  // exchange 1 checks the options, 2 merges the thresholds, 3 and 4 are the scores of steps 1
  // and 2: rank 1 (the last stage) hangs before step 2's
  const int rc = run_command("SMEZO_DIST_FAULT=hang:1:4 " + mpirun(2, 120) + kSmezo + kRun +
                                 " --pipeline-stages 2 --mpi-timeout 5 --out " + dir + "/run",
                             &out);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(rc, 124) << "the job hung until the test's own timeout: " << out;
  EXPECT_LT(took, 90.0) << out;
  EXPECT_THAT(out, HasSubstr("smezo: error: rank 0 of 2: no answer from rank 1 within 5 s"));
  ASSERT_EQ(run_command(kSmezo + kRun + " --resume --out " + dir + "/run", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("resuming"));
  ASSERT_EQ(run_command(kSmezo + kRun + " --out " + dir + "/one", &out), 0) << out;
  EXPECT_EQ(read_file(dir + "/one/seed_log.txt"), read_file(dir + "/run/seed_log.txt"));
  EXPECT_EQ(read_file(dir + "/one/checkpoint/model.safetensors"), read_file(dir + "/run/checkpoint/model.safetensors"));
}

// Layouts that cannot work are refused in one line, before anything is written.
TEST(MpiPipeline, ImpossibleLayoutsAreRefused) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = make_temp_dir("mpi_pipeline_refuse");
  std::string out;
  EXPECT_EQ(run_command(kSmezo + kRun + " --pipeline-stages 2 --out " + dir + "/a", &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("--pipeline-stages 2 splits the model over 2 MPI ranks, but this is one process"));
  EXPECT_NE(run_command(mpirun(3) + kSmezo + kRun + " --pipeline-stages 2 --out " + dir + "/b", &out), 0);
  EXPECT_THAT(out, HasSubstr("--pipeline-stages 2 needs a multiple of 2 ranks, this job has 3"));
  EXPECT_NE(run_command(mpirun(6) + kSmezo + kRun + " --pipeline-stages 6 --out " + dir + "/c", &out), 0);
  EXPECT_THAT(out, HasSubstr("6 pipeline stages for a model of 5 layers"));
  EXPECT_NE(run_command("test -e " + dir + "/b -o -e " + dir + "/c", &out), 0) << "nothing written";
}

// A checkpoint rank 0 cannot write (here: `checkpoint` is a file in the run folder) is a
// warning, as on one process: rank 0 tells the waiting stages to stop, training goes on, the
// seed log is the one-process run's, and the job exits with 3 (no final checkpoint).
TEST(MpiPipeline, FailedCheckpointIsAWarningAndTheStagesGoOn) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = make_temp_dir("mpi_pipeline_ckpt");
  std::string out;
  ASSERT_EQ(run_command(kSmezo + kRun + " --out " + dir + "/one", &out), 0) << out;
  ASSERT_EQ(run_command("mkdir -p " + dir + "/run", &out), 0);
  smezo_test::write_file(dir + "/run/checkpoint", "not a folder");
  const int rc = run_command(mpirun(2) + kSmezo + kRun + " --pipeline-stages 2 --mpi-timeout 20 --out " + dir + "/run",
                             &out);
  EXPECT_EQ(rc, 3) << out;
  EXPECT_THAT(out, HasSubstr("warning: the checkpoint of step 2 was not written: refusing to replace"));
  EXPECT_THAT(out, testing::Not(HasSubstr("no answer from rank"))) << out;
  EXPECT_EQ(read_file(dir + "/one/seed_log.txt"), read_file(dir + "/run/seed_log.txt"));
}

// A finished pipeline run whose final checkpoint is gone: --resume rebuilds it from the seed log,
// every stage replaying its layers and rank 0 assembling them: the one-process checkpoint.
TEST(MpiPipeline, FinishedRunRebuildsItsMissingCheckpoint) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = make_temp_dir("mpi_pipeline_rebuild");
  std::string out;
  ASSERT_EQ(run_command(kSmezo + kRun + " --out " + dir + "/one", &out), 0) << out;
  const std::string run = mpirun(2) + kSmezo + kRun + " --pipeline-stages 2 --mpi-timeout 30 --out " + dir + "/run";
  ASSERT_EQ(run_command(run, &out), 0) << out;
  ASSERT_EQ(run_command("rm -r " + dir + "/run/checkpoint", &out), 0);
  ASSERT_EQ(run_command(run + " --resume", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("its final checkpoint is missing: rebuilding it from the seed log"));
  EXPECT_EQ(read_file(dir + "/one/checkpoint/model.safetensors"), read_file(dir + "/run/checkpoint/model.safetensors"));
  ASSERT_EQ(run_command(run + " --resume", &out), 0) << out;  // and now there is nothing to do
  EXPECT_THAT(out, HasSubstr("run already finished at step 4"));
}

// --objective accuracy: every rank measures the whole minibatch (no exchange), so two ranks
// give one process's run bit for bit; a pipeline refuses the objective in one line.
TEST(MpiTrain, AccuracyObjectiveTwoRanksEqualOneProcess) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = make_temp_dir("mpi_accuracy");
  const std::string run = kSmezo + kRun + " --objective accuracy --eps 3e-2";
  std::string out;
  ASSERT_EQ(run_command(run + " --out " + dir + "/one", &out), 0) << out;
  ASSERT_EQ(run_command(mpirun(2) + run + " --out " + dir + "/two", &out), 0) << out;
  expect_same_run(dir + "/one", dir + "/two");
  EXPECT_NE(run_command(mpirun(2) + run + " --pipeline-stages 2 --out " + dir + "/pipe", &out), 0);
  EXPECT_THAT(out, HasSubstr("--pipeline-stages 2 does not run --objective accuracy yet"));
}

// --tune prefix over data-parallel ranks: every rank builds the same prefix from the run seed,
// so two ranks leave one process's seed log, metrics and adapter; a pipeline, whose stages hold
// parts of the layers, is refused by name.
TEST(MpiTrain, PrefixTuningTwoRanksEqualOneProcess) {
  SKIP_WITHOUT_MPIRUN();
  const std::string dir = make_temp_dir("mpi_prefix");
  const std::string run = kSmezo + kRun + " --tune prefix --prefix-tokens 3";
  std::string out;
  ASSERT_EQ(run_command(run + " --out " + dir + "/one", &out), 0) << out;
  ASSERT_EQ(run_command(mpirun(2) + run + " --out " + dir + "/two", &out), 0) << out;
  EXPECT_EQ(read_file(dir + "/one/seed_log.txt"), read_file(dir + "/two/seed_log.txt"));
  EXPECT_EQ(read_file(dir + "/one/metrics.jsonl"), read_file(dir + "/two/metrics.jsonl"));
  EXPECT_EQ(read_file(dir + "/one/checkpoint/adapter_model.safetensors"),
            read_file(dir + "/two/checkpoint/adapter_model.safetensors"));
  EXPECT_NE(run_command(mpirun(2) + run + " --pipeline-stages 2 --out " + dir + "/pipe", &out), 0);
  EXPECT_THAT(out, HasSubstr("--tune prefix runs on a whole model, not on pipeline stage"));
}
