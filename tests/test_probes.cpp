// Several probes per step (--probes-per-step q), FZOO (--method fzoo) and gradient accumulation
// (--accumulate K): the q-probe update against the sum of per-probe updates computed here from
// the noise spec, FZOO's step against its formula, the v2 seed-log records, and end to end on
// stories260K: q = 1 writes the v1 log, q = 3 with K = 2 and FZOO replay and resume bit for bit.
// The *Cuda* cases run the same on the CUDA backend (a GPU, or the emulated one: make emu).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "common/check.h"
#include "common/file_util.h"
#include "common/noise_spec.h"
#include "run/metrics_log.h"
#include "run/seed_log.h"
#include "setup/model_setup.h"
#include "test_util.h"
#include "train/spsa.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"
#endif

using namespace smezo;
using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::run_command;
using testing::HasSubstr;

namespace {

std::vector<std::vector<float>> weights_of(Model& m) {
  std::vector<std::vector<float>> out;
  for (const Param* p : m.params()) {
    out.emplace_back(p->w.numel());
    m.backend().download(p->w, out.back().data());
  }
  return out;
}

// Fresh random losses around 2 (never equal, never zero); the seed is printed.
std::vector<double> random_losses(size_t n, uint64_t* seed_out) {
  const uint64_t seed = std::random_device{}();
  *seed_out = seed;
  std::printf("probes: random losses from seed %llu\n", (unsigned long long)seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(1.5, 2.5);
  std::vector<double> l(n);
  for (double& x : l) x = u(rng);
  return l;
}

// The q-probe SPSA update on `device`, checked against the per-probe updates applied in order
// (W <- W - lr·(g_i/q)·z_i, weight decay with the first), z from the noise spec.
void expect_q_probe_update(Device device) {
  LoadedModel lm = open_model_paths(default_model_path(), "", device, 1, 1, DTYPE_F32);
  SpsaOptions o;
  o.method = METHOD_MEZO;
  o.sparsity = 0.0;
  o.probes = 3;
  o.eps = 1e-3f;
  o.lr = 2e-3f;
  o.weight_decay = 0.25f;
  o.seed = 77;
  SpsaOptimizer opt(*lm.model, o);
  const auto before = weights_of(*lm.model);
  uint64_t loss_seed = 0;
  const std::vector<double> losses = random_losses(6, &loss_seed);
  const std::vector<Probe> seen = opt.probes(5, true);
  const SpsaStep s = opt.finish(5, losses);
  // the probes: one pair per probe, probe 0 with the step seed, the others their own seeds
  ASSERT_EQ(seen.size(), 3u);
  ASSERT_EQ(s.probes.size(), 3u);
  EXPECT_EQ(s.probes[0].seed, opt.step_seed(5));
  for (int i = 0; i < 3; i++) {
    EXPECT_TRUE(seen[i].pair);
    EXPECT_EQ(seen[i].scale, o.eps);
    EXPECT_EQ(seen[i].seed, opt.probe_seed(5, i));
    EXPECT_EQ(s.probes[i].seed, seen[i].seed);
    for (int j = 0; j < i; j++) EXPECT_NE(seen[i].seed, seen[j].seed);
    const float g = static_cast<float>((losses[2 * i] - losses[2 * i + 1]) / (2.0 * 1e-3f));
    EXPECT_EQ(s.probes[i].g, g) << "probe " << i << " (losses from seed " << loss_seed << ")";
  }
  EXPECT_EQ(s.lr, o.lr);
  EXPECT_DOUBLE_EQ(s.loss, (losses[0] + losses[1] + losses[2] + losses[3] + losses[4] + losses[5]) / 6);
  const auto after = weights_of(*lm.model);
  int64_t moved = 0;
  for (size_t t = 0; t < before.size(); t++) {
    const Param& p = *lm.model->params()[t];
    const bool decayed = p.info.role != ROLE_NORM && !p.info.is_bias;
    for (int64_t e = 0; e < p.w.numel(); e++) {
      float w = before[t][e];
      for (int i = 0; i < 3; i++) {
        const float z = noise_z(p.info.noise, s.probes[i].seed, p.info.tensor_id, e);
        const float w0 = w;
        w = fp_fma(-(*o.lr * s.probes[i].g / 3.0f), z, w);
        if (i == 0 && decayed) w = fp_fma(-(*o.lr * o.weight_decay), w0, w);
      }
      ASSERT_EQ(after[t][e], w) << device_name(device) << " " << p.info.name << "[" << e << "] (losses from seed " << loss_seed
                                << ")";
      moved += after[t][e] != before[t][e];
    }
  }
  EXPECT_GT(moved, 1000);
  // the record holds every probe, and replaying it onto the base weights gives the same weights
  const SeedRecord r = s.record();
  ASSERT_EQ(r.more_probes.size(), 2u);
  LoadedModel again = open_model_paths(default_model_path(), "", device, 1, 1, DTYPE_F32);
  SpsaOptimizer replay(*again.model, o);
  replay.apply_record(r, "test");
  EXPECT_EQ(weights_of(*again.model), after);
}

// FZOO's step on `device` against its formula: u_i Rademacher, g_i = (l_i - l_0)/eps,
// sigma = sample std of l_1..l_N, W <- W - (lr/sigma)·(1/N)·Σ g_i·u_i.
void expect_fzoo_step(Device device) {
  LoadedModel lm = open_model_paths(default_model_path(), "", device, 1, 1, DTYPE_F32);
  SpsaOptions o;
  o.method = METHOD_FZOO;
  o.sparsity = 0.0;
  o.probes = 4;
  o.eps = 1e-3f;
  o.lr = 1e-4f;
  SpsaOptimizer opt(*lm.model, o);
  for (const Param* p : lm.model->params()) ASSERT_EQ(p->info.noise, NOISE_RADEMACHER);
  const auto before = weights_of(*lm.model);
  uint64_t loss_seed = 0;
  const std::vector<double> l = random_losses(5, &loss_seed);
  const std::vector<Probe> seen = opt.probes(3, true);
  const SpsaStep s = opt.finish(3, l);
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[0].scale, 0.0f);  // l_0 at W itself
  for (int i = 1; i <= 4; i++) {
    EXPECT_FALSE(seen[i].pair);  // one-sided, even when pairs are allowed
    EXPECT_EQ(seen[i].scale, o.eps);
    EXPECT_EQ(seen[i].seed, opt.probe_seed(3, i - 1));
  }
  // sigma by hand
  const double mean = (l[1] + l[2] + l[3] + l[4]) / 4;
  double var = 0;
  for (int i = 1; i <= 4; i++) var += (l[i] - mean) * (l[i] - mean);
  const double sigma = std::sqrt(var / 3);
  EXPECT_NEAR(s.sigma, sigma, 1e-12 * sigma);
  EXPECT_EQ(s.loss, l[0]);
  EXPECT_FLOAT_EQ(s.lr, static_cast<float>(*o.lr / sigma));
  const auto after = weights_of(*lm.model);
  double max_rel = 0;
  for (size_t t = 0; t < before.size(); t++) {
    const Param& p = *lm.model->params()[t];
    for (int64_t e = 0; e < p.w.numel(); e++) {
      double step = 0, size = 0;  // in double: the formula, not the float code path
      for (int i = 1; i <= 4; i++) {
        const double u = noise_z(NOISE_RADEMACHER, seen[i].seed, p.info.tensor_id, e);
        ASSERT_TRUE(u == 1.0 || u == -1.0);
        step += (l[i] - l[0]) / 1e-3f * u;
        size += std::fabs((l[i] - l[0]) / 1e-3f);
      }
      const double expected = before[t][e] - *o.lr / sigma / 4 * step;
      const double delta = std::fabs(expected - before[t][e]);
      // tolerance: the float update rounds w once per probe (4 ulps of w, 8 allowed) and its
      // factors lr/sigma, g_i/N and their product are floats (~4 float epsilons of each term)
      const double tol = 8 * std::ldexp(1.0, std::ilogb(std::fabs(before[t][e])) - 23) +
                         1e-6 * *o.lr / sigma / 4 * size + 1e-30;
      ASSERT_NEAR(after[t][e], expected, tol) << device_name(device) << " " << p.info.name << "[" << e << "] (losses from seed "
                                              << loss_seed << ")";
      if (delta > 0) max_rel = std::max(max_rel, std::fabs(after[t][e] - expected) / delta);
    }
  }
  std::printf("fzoo %s: max relative error of the step %.3g\n", device_name(device), max_rel);
  // every perturbed loss equal: no spread, no step
  const auto kept = weights_of(*lm.model);
  std::vector<double> out(opt.probes(4, false).size(), 3.0);
  out[0] = 2.0;
  const SpsaStep flat = opt.finish(4, out);
  EXPECT_EQ(flat.sigma, 0.0);
  EXPECT_EQ(flat.lr, 0.0f);
  EXPECT_EQ(weights_of(*lm.model), kept);
}

const std::string kSmezo = smezo_test::smezo_binary();
const std::string kQ3 = " --lr 2e-3 --method mezo --probes-per-step 3";
const std::string kRun =
    " train --task sst2 --batch 2 --max-len 32 --eval-every 0 --dev-examples 4 --skip-test"
    " --progress-every 1000 --train-examples 64";

// A run, killed once its seed log holds `kill_after` flushed steps and resumed, ends with the
// weights and seed log of the uninterrupted run; replay rebuilds the same weights.
void expect_replay_and_resume(const std::string& opts, int steps, int kill_after) {
  const std::string dir = make_temp_dir("probes"), run = kSmezo + kRun + opts + " --steps " + std::to_string(steps);
  std::string out;
  ASSERT_EQ(run_command(run + " --flush-every 1 --out " + dir + "/straight", &out), 0) << out;
  const std::string weights = read_file(dir + "/straight/checkpoint/model.safetensors");
  ASSERT_EQ(run_command(kSmezo + " replay " + default_model_path() + " " + dir + "/straight/seed_log.txt --out " +
                            dir + "/replayed", &out), 0) << out;
  EXPECT_EQ(read_file(dir + "/replayed/model.safetensors"), weights) << opts;
  const int64_t logged = smezo_test::run_and_kill_after_logged_steps(run + " --flush-every 1 --out " + dir + "/killed",
                                                                     dir + "/killed/seed_log.txt", kill_after);
  ASSERT_NE(logged, -1) << "the run finished before it could be killed";
  ASSERT_GE(logged, kill_after);
  ASSERT_LT(logged, steps);
  ASSERT_EQ(run_command(run + " --flush-every 1 --out " + dir + "/killed --resume", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("resuming"));
  EXPECT_EQ(read_file(dir + "/killed/checkpoint/model.safetensors"), weights) << opts;
  EXPECT_EQ(read_file(dir + "/killed/seed_log.txt"), read_file(dir + "/straight/seed_log.txt")) << opts;
  int64_t step_lines = 0;
  for (const auto& rec : metrics_log_read(dir + "/killed/metrics.jsonl")) step_lines += rec.contains("loss");
  EXPECT_EQ(step_lines, steps);
}

}  // namespace

TEST(Probes, QProbeUpdateIsTheSumOfPerProbeUpdates) { expect_q_probe_update(DEVICE_CPU); }

TEST(Probes, FzooStepFollowsItsFormula) { expect_fzoo_step(DEVICE_CPU); }

TEST(Probes, QProbeAndFzooOnCuda) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  expect_q_probe_update(DEVICE_CUDA);
  expect_fzoo_step(DEVICE_CUDA);
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

TEST(Probes, OneProbeIsTheOneProbeStepBitForBit) {
  // q = 1 through the list of probes: the same probes, g and update as the single-probe call
  LoadedModel a = open_model_paths(default_model_path(), "", DEVICE_CPU, 1, 1);
  LoadedModel b = open_model_paths(default_model_path(), "", DEVICE_CPU, 1, 1);
  SpsaOptions o;
  o.lr = 1e-3f;
  o.weight_decay = 0.1f;
  SpsaOptimizer oa(*a.model, o), ob(*b.model, o);
  EXPECT_EQ(oa.probe_seed(9, 0), oa.step_seed(9));
  ASSERT_EQ(oa.probes(9, true).size(), 1u);
  const SpsaStep s = oa.finish(9, {1.75, 1.5});
  EXPECT_EQ(s.probes.size(), 1u);
  EXPECT_TRUE(s.record().more_probes.empty());
  EXPECT_EQ(seed_log_format_record(s.record()), seed_log_format_record(SeedRecord{9, s.seed, s.g, s.lr}));
  EXPECT_EQ(s.loss, 0.5 * (1.75 + 1.5));
  ob.apply_update(oa.step_seed(9), static_cast<float>((1.75 - 1.5) / (2.0 * o.eps)), *o.lr);
  EXPECT_EQ(weights_of(*a.model), weights_of(*b.model));
}

TEST(Probes, SeedLogV2RecordsRoundTrip) {
  SeedRecord r{12, 18446744073709551615ull, -0.0f, 1e-3f, {{7, 1.5f}, {0, -2.25f}}};
  const std::string line = seed_log_format_record(r);
  EXPECT_EQ(line, "12 18446744073709551615 80000000 3a83126f 7 3fc00000 0 c0100000\n");
  SeedRecord back;
  ASSERT_TRUE(seed_log_parse_record(line.substr(0, line.size() - 1), &back, 2));
  EXPECT_EQ(seed_log_format_record(back), line);
  ASSERT_EQ(seed_record_probes(back).size(), 3u);
  EXPECT_EQ(seed_record_probes(back)[2].seed, 0u);
  // v1 takes exactly four fields; v2 only whole (seed, g) pairs
  EXPECT_FALSE(seed_log_parse_record(line.substr(0, line.size() - 1), &back, 1));
  EXPECT_FALSE(seed_log_parse_record("12 3 3f800000 3a83126f 7", &back, 2));
  EXPECT_FALSE(seed_log_parse_record("12 3 3f800000 3a83126f 7 3f80000", &back, 2));
  EXPECT_FALSE(seed_log_parse_record("12 3 3f800000 3a83126f  7 3f800000", &back, 2));
  EXPECT_FALSE(seed_log_parse_record("12 3 3f800000 3a83126f 7 3f800000 ", &back, 2));
  ASSERT_TRUE(seed_log_parse_record("12 3 3f800000 3a83126f", &back, 2));
  EXPECT_TRUE(back.more_probes.empty());
  // files: a v1 writer refuses several probes; a v2 log reads back and appends as v2
  const std::string dir = make_temp_dir("seedlogv2");
  SeedLogWriter v1 = SeedLogWriter::create(dir + "/v1.txt", {{"run", 1}}, 0);
  EXPECT_THAT([&] { v1.append(r); }, testing::ThrowsMessage<Error>(HasSubstr(
                                         "step 12 has 3 probes, which a version 1 log cannot hold")));
  {
    SeedLogWriter w = SeedLogWriter::create(dir + "/v2.txt", {{"run", 2}}, 0, 2);
    w.append(r);
    r.step = 13;
    w.append(r);
    w.append(SeedRecord{14, 5, 1.0f, 1e-3f});
  }
  EXPECT_EQ(read_file(dir + "/v2.txt").substr(0, 20), "# smezo seed log v2\n");
  SeedLog log = seed_log_read(dir + "/v2.txt");
  EXPECT_EQ(log.version, 2);
  ASSERT_EQ(log.records.size(), 3u);
  EXPECT_EQ(log.records[1].more_probes.size(), 2u);
  EXPECT_EQ(log.records[1].more_probes[1].g, -2.25f);
  SeedLogWriter again = SeedLogWriter::open_append(dir + "/v2.txt", 0);
  EXPECT_EQ(again.version(), 2);
  r.step = 15;
  again.append(r);
  again.close();
  EXPECT_EQ(seed_log_read(dir + "/v2.txt").records.back().more_probes.size(), 2u);
  // a v1 file with a v2 record is malformed, naming the line
  smezo_test::write_file(dir + "/bad.txt", "# smezo seed log v1\n# {}\n1 2 3f800000 3a83126f 7 3f800000\n");
  EXPECT_THAT([&] { seed_log_read(dir + "/bad.txt"); },
              testing::ThrowsMessage<Error>(HasSubstr("bad.txt line 3 is malformed")));
}

TEST(Probes, BadOptionsAreOneLineErrors) {
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 1, 1);
  auto error_of = [&](SpsaOptions o) {
    try {
      SpsaOptimizer opt(*lm.model, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  SpsaOptions o;
  o.probes = 0;
  EXPECT_THAT(error_of(o), HasSubstr("--probes-per-step must be an integer in [1, 1024], got 0"));
  o = SpsaOptions();
  o.method = METHOD_FZOO;
  o.sparsity = 0;
  o.probes = 1;
  EXPECT_THAT(error_of(o), HasSubstr("--probes-per-step 1: fzoo divides its step by the spread of its probe losses, so it needs 2 or more"));
  o.probes = 4;
  o.sparsity = 0.5;
  EXPECT_THAT(error_of(o), HasSubstr("fzoo tunes every entry"));
  o.sparsity = 0;
  o.noise = NOISE_GAUSSIAN;
  EXPECT_THAT(error_of(o), HasSubstr("fzoo's probes are Rademacher"));
  o.noise = NOISE_SIGN;  // ±1 as well, 128 per Philox call
  EXPECT_EQ(error_of(o), "no error");
  o.noise = NOISE_AUTO;
  o.weight_decay = 0.1f;
  EXPECT_THAT(error_of(o), HasSubstr("--weight-decay 0.1: fzoo scales its step by the spread of the losses; weight decay is not defined"));
  EXPECT_EQ(method_parse("fzoo"), METHOD_FZOO);
  EXPECT_STREQ(method_name(METHOD_FZOO), "fzoo");
  // the command line: each a one-line error, nothing trained
  const std::string dir = make_temp_dir("probes_bad");
  std::string out;
  EXPECT_NE(run_command(kSmezo + kRun + " --steps 2 --accumulate 0 --out " + dir + "/a", &out), 0);
  EXPECT_THAT(out, HasSubstr("--accumulate"));
  EXPECT_NE(run_command(kSmezo + kRun + " --steps 2 --probes-per-step 0 --out " + dir + "/b", &out), 0);
  EXPECT_THAT(out, HasSubstr("--probes-per-step"));
  EXPECT_NE(run_command(kSmezo + kRun + " --steps 2 --method fzoo --out " + dir + "/c", &out), 0);
  EXPECT_THAT(out, HasSubstr("--probes-per-step 1: fzoo divides its step by the spread of its probe losses"));
  EXPECT_FALSE(path_exists(dir + "/c/seed_log.txt"));
}

// The default run writes the one-probe log of before: v1, four fields a record, no new keys.
TEST(Probes, OneProbeRunsWriteTheV1Log) {
  const std::string dir = make_temp_dir("probes_v1");
  std::string out;
  ASSERT_EQ(run_command(kSmezo + kRun + " --steps 3 --probes-per-step 1 --accumulate 1 --out " + dir + "/r", &out), 0)
      << out;
  const SeedLog log = seed_log_read(dir + "/r/seed_log.txt");
  EXPECT_EQ(log.version, 1);
  EXPECT_FALSE(log.header["spsa"].contains("probes"));
  EXPECT_FALSE(log.header.contains("accumulate"));
  for (const SeedRecord& r : log.records) EXPECT_TRUE(r.more_probes.empty());
}

TEST(Probes, ThreeProbesTwoMinibatchesReplayAndResumeBitForBit) {
  expect_replay_and_resume(kQ3 + " --accumulate 2", 24, 6);
  // the log is v2 with three probes a step, and the run records q and K
  const std::string dir = make_temp_dir("probes_q3");
  std::string out;
  ASSERT_EQ(run_command(kSmezo + kRun + " --lr 2e-3 --method mezo --probes-per-step 3 --accumulate 2 --steps 2 --out " +
                            dir + "/r", &out), 0) << out;
  const SeedLog log = seed_log_read(dir + "/r/seed_log.txt");
  EXPECT_EQ(log.version, 2);
  EXPECT_EQ(log.header["spsa"]["probes"], 3);
  EXPECT_EQ(log.header["accumulate"], 2);
  ASSERT_EQ(log.records.size(), 2u);
  EXPECT_EQ(log.records[1].more_probes.size(), 2u);
  // resuming with another q or K is refused, naming it
  ASSERT_NE(run_command(kSmezo + kRun + " --lr 2e-3 --method mezo --probes-per-step 2 --accumulate 2 --steps 2 --out " +
                            dir + "/r --resume", &out), 0);
  EXPECT_THAT(out, HasSubstr("probes per step = 3 in the run, 2 here"));
  ASSERT_NE(run_command(kSmezo + kRun + " --lr 2e-3 --method mezo --probes-per-step 3 --accumulate 1 --steps 2 --out " +
                            dir + "/r --resume", &out), 0);
  EXPECT_THAT(out, HasSubstr("accumulate = 2 in the run, 1 here"));
}

TEST(Probes, FzooReplaysAndResumesBitForBit) {
  expect_replay_and_resume(" --method fzoo --probes-per-step 3 --lr 1e-4", 24, 6);
}

// The same on the CUDA backend (fp32): a run with q = 3 and K = 2 replays and resumes bit for bit.
TEST(Probes, ThreeProbesTwoMinibatchesOnCudaReplayAndResume) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  expect_replay_and_resume(" --device cuda --dtype f32" + kQ3 + " --accumulate 2", 12, 4);
  expect_replay_and_resume(" --device cuda --dtype f32 --method fzoo --probes-per-step 3 --lr 1e-4", 12, 4);
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// Under mpirun the list of probes and the K minibatches go through the ranks' exchanges as one
// process evaluates them: 2 and 3 data-parallel ranks (uneven shards of the batch of 4) and a
// 2-stage pipeline write the seed log, metrics and weights of one process, byte for byte.
TEST(Probes, MpiRanksAndPipelineEqualOneProcess) {
#ifdef SMEZO_MPI
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun not found: skipped";
  auto mpirun = [](int ranks) {
    return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader "
           "OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 "
           "OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_plm_rsh_agent=false OMP_NUM_THREADS=1 "
           "timeout 240 mpirun --oversubscribe -np " + std::to_string(ranks) + " ";
  };
  const std::string dir = make_temp_dir("probes_mpi");
  std::string out;
  int n = 0;
  const std::string fzoo = " --method fzoo --probes-per-step 3 --lr 1e-4";
  for (const std::string& opts : {kQ3 + " --accumulate 2", fzoo}) {
    std::string batch4 = kRun;
    batch4.replace(batch4.find("--batch 2"), 9, "--batch 4");
    const std::string run = kSmezo + batch4 + " --steps 4" + opts, base = dir + "/" + std::to_string(n++);
    ASSERT_EQ(run_command(run + " --out " + base + "-one", &out), 0) << out;
    for (const std::string how : {"2", "3", "pipeline"}) {
      const std::string launch =
          how == "pipeline" ? mpirun(2) + run + " --pipeline-stages 2" : mpirun(std::stoi(how)) + run;
      ASSERT_EQ(run_command(launch + " --out " + base + "-" + how, &out), 0) << opts << " " << how << "\n" << out;
      for (const char* file : {"/seed_log.txt", "/metrics.jsonl", "/checkpoint/model.safetensors"})
        EXPECT_EQ(read_file(base + "-" + how + file), read_file(base + "-one" + file)) << opts << " " << how << file;
    }
  }
#else
  GTEST_SKIP() << "this smezo was built without MPI: skipped";
#endif
}

// Accumulation averages the step's K minibatches, minibatch k of step t being minibatch
// (t-1)·K + k + 1 of the run's sequence. With eps 1e-30 no weight moves under a probe (every
// w + 1e-30·z rounds back to w) and lr 0 keeps W, so every loss is the plain minibatch loss:
// a K-minibatch run's loss at step t is, bit for bit, the mean of the one-minibatch run's losses
// at steps (t-1)·K + 1 .. t·K, summed in order.
TEST(Probes, AccumulateAveragesTheStepsMinibatches) {
  const std::string dir = make_temp_dir("probes_acc"), run = kSmezo + kRun + " --method mezo --lr 0 --eps 1e-30";
  std::string out;
  ASSERT_EQ(run_command(run + " --steps 6 --out " + dir + "/k1", &out), 0) << out;
  auto losses = [](const std::string& metrics) {
    std::vector<double> l;
    for (const auto& rec : metrics_log_read(metrics))
      if (rec.contains("loss")) l.push_back(rec["loss"].get<double>());
    return l;
  };
  const std::vector<double> one = losses(dir + "/k1/metrics.jsonl");
  ASSERT_EQ(one.size(), 6u);
  for (int k : {2, 3}) {
    const std::string kdir = dir + "/k" + std::to_string(k);
    ASSERT_EQ(run_command(run + " --steps " + std::to_string(6 / k) + " --accumulate " + std::to_string(k) +
                              " --out " + kdir, &out), 0) << out;
    const std::vector<double> acc = losses(kdir + "/metrics.jsonl");
    ASSERT_EQ(acc.size(), static_cast<size_t>(6 / k));
    for (int t = 0; t < 6 / k; t++) {
      double sum = 0;
      for (int j = 0; j < k; j++) sum += one[t * k + j];
      EXPECT_EQ(acc[t], sum / k) << "K = " << k << ", step " << t + 1;
      EXPECT_NE(acc[t], one[t]) << "K = " << k << ", step " << t + 1 << ": not a mean of other minibatches";
    }
  }
}

// A logged step must have the run's probe count and probe seeds before it is applied.
TEST(Probes, ReplayRefusesARecordOfAnotherRun) {
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 1, 1);
  SpsaOptions o;
  o.probes = 3;
  SpsaOptimizer opt(*lm.model, o);
  const auto before = weights_of(*lm.model);
  SeedRecord r{4, opt.probe_seed(4, 0), 0.5f, 1e-3f, {{opt.probe_seed(4, 1), 0.25f}}};
  EXPECT_THAT([&] { opt.apply_record(r, "run/seed_log.txt"); },
              testing::ThrowsMessage<Error>(
                  HasSubstr("run/seed_log.txt: step 4 logs 2 probes, the run takes 3 per step")));
  r.more_probes.push_back({opt.probe_seed(5, 2), 0.25f});
  EXPECT_THAT([&] { opt.apply_record(r, "run/seed_log.txt"); },
              testing::ThrowsMessage<Error>(HasSubstr("run/seed_log.txt: step 4 has seed " +
                                                      std::to_string(opt.probe_seed(5, 2)) + ", expected " +
                                                      std::to_string(opt.probe_seed(4, 2)))));
  EXPECT_EQ(weights_of(*lm.model), before);
  r.more_probes.back().seed = opt.probe_seed(4, 2);
  opt.apply_record(r, "run/seed_log.txt");
  EXPECT_NE(weights_of(*lm.model), before);
}
