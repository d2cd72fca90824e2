// Versioned replay (noise spec v2): seed logs written before noise kinds existed replay and
// resume with the spec-v1 noise (gaussian-v1), bit for bit, against fixtures made by the code
// of that time (tests/fixtures/noise_v1, see its README); new runs record their noise kind and
// the spec version and replay with it; unknown kinds and newer spec versions are refused with
// one clear line. End to end through the public API (smezo::train) and `smezo replay`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "setup/model_setup.h"
#include "common/check.h"
#include "run/seed_log.h"
#include "smezo/train.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/spsa.h"

using namespace smezo;
using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::run_command;
using smezo_test::write_file;

namespace {

const std::string kFixtures = "tests/fixtures/noise_v1";

nlohmann::json expected() { return nlohmann::json::parse(read_file(kFixtures + "/expected.json")); }

std::string sha256_of_file(const std::string& path) {
  std::string out;
  EXPECT_EQ(run_command("sha256sum '" + path + "'", &out), 0) << out;
  return out.substr(0, 64);
}

// SHA-256 of the raw f32 bytes of every parameter, in name order, of a model loaded from a
// Hugging Face directory (expected.json's weights_f32_sha256: independent of the checkpoint
// file's layout; a llama2.c model in memory holds q/k rows in another order, so in-process
// weights go through save_hf_checkpoint first).
std::string weights_sha256(Model& model, const std::string& tmp_dir) {
  std::vector<Param*> ps = model.params();
  std::sort(ps.begin(), ps.end(), [](const Param* a, const Param* b) { return a->info.name < b->info.name; });
  std::string bytes;
  for (const Param* p : ps) {
    std::vector<float> host(p->w.numel());
    model.backend().download(p->w, host.data());
    bytes.append(reinterpret_cast<const char*>(host.data()), host.size() * sizeof(float));
  }
  write_file(tmp_dir + "/weights.bin", bytes);
  return sha256_of_file(tmp_dir + "/weights.bin");
}

std::string checkpoint_digest(const std::string& dir, const std::string& tmp_dir) {
  LoadedModel lm = open_model_paths(dir, "", DEVICE_CPU, 1, 1);
  return weights_sha256(*lm.model, tmp_dir);
}

// Replays `log_path` onto the base stories260K in process, with the logged noise unless
// `force` names another; returns the weights' digest.
std::string replay_digest(const std::string& log_path, const std::string& tmp_dir,
                          NoiseKind force = NOISE_AUTO) {
  const SeedLog log = seed_log_read(log_path);
  SpsaOptions opts = spsa_options_from_json(log.header["spsa"], log_path);
  if (force != NOISE_AUTO) opts.noise = force;
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 1, 1);
  SpsaOptimizer opt(*lm.model, opts);
  if (force == NOISE_AUTO) opt.check_matches(log.header["spsa"], log_path);
  for (const SeedRecord& r : log.records) opt.apply_update(r.seed, r.g, r.lr);
  save_hf_checkpoint(*lm.model, tmp_dir + "/replayed_in_process", lm.tokenizer_path);
  return checkpoint_digest(tmp_dir + "/replayed_in_process", tmp_dir);
}

// The options of the fixture's smezo run (its README), for the public API.
TrainOptions fixture_run(const std::string& out_dir) {
  TrainOptions o;
  o.model_path = default_model_path();
  o.task = "sst2";
  o.n_dev = 8;
  o.max_len = 40;
  o.batch = 2;
  o.steps = 12;
  o.eval_every = 0;
  o.skip_test = true;
  o.flush_every = 5;
  o.progress_every = 1000;
  o.spsa.lr = 2e-3f;
  o.out_dir = out_dir;
  return o;
}

// The first `keep` lines after the header of a seed log (a run killed after step `keep`).
std::string truncated_log(const std::string& path, int keep) {
  const std::string text = read_file(path);
  size_t pos = text.find("\n# {");
  pos = text.find('\n', pos + 1) + 1;  // end of the header line
  for (int i = 0; i < keep; ++i) pos = text.find('\n', pos) + 1;
  return text.substr(0, pos);
}

}  // namespace

TEST(NoiseReplay, SeedLogsFromBeforeNoiseKindsReplayBitForBit) {
  const nlohmann::json want = expected();
  for (const std::string run : {"smezo", "rmezo"}) {
    const std::string dir = make_temp_dir("noise_v1_" + run), log = kFixtures + "/" + run + "/seed_log.txt";
    const SeedLog parsed = seed_log_read(log);
    ASSERT_FALSE(parsed.header["spsa"].contains("noise")) << "the fixture must predate noise kinds";
    ASSERT_EQ((int64_t)parsed.records.size(), want[run]["steps"].get<int64_t>());
    EXPECT_EQ(spsa_options_from_json(parsed.header["spsa"], log).noise, NOISE_GAUSSIAN_V1);
    // in process, through the optimiser: the raw weights
    EXPECT_EQ(replay_digest(log, dir), want[run]["weights_f32_sha256"].get<std::string>()) << run;
    // the same log under the new default noise gives other weights: the check can fail
    EXPECT_NE(replay_digest(log, dir, NOISE_GAUSSIAN), want[run]["weights_f32_sha256"].get<std::string>());
    // and `smezo replay`: the checkpoint file, byte for byte
    std::string out;
    ASSERT_EQ(run_command(smezo_test::smezo_binary() + " replay " + default_model_path() + " " + log + " --out " +
                              dir + "/replayed", &out), 0) << out;
    EXPECT_EQ(sha256_of_file(dir + "/replayed/model.safetensors"),
              want[run]["model_safetensors_sha256"].get<std::string>())
        << run << ": if weights_f32_sha256 matched, only the safetensors writer changed";
  }
}

// A run killed at step 8 before noise kinds existed, resumed now without naming a noise:
// it continues with gaussian-v1 (its own), keeps its header, and its log replays to the
// resumed run's checkpoint. Naming another noise is refused.
TEST(NoiseReplay, OldRunResumesWithItsOwnNoise) {
  const std::string dir = make_temp_dir("noise_v1_resume"), run = dir + "/run";
  const std::string fixture = kFixtures + "/smezo/seed_log.txt";
  ASSERT_EQ(run_command("mkdir -p " + run, nullptr), 0);
  write_file(run + "/seed_log.txt", truncated_log(fixture, 8));
  TrainOptions o = fixture_run(run);
  o.resume = true;
  o.spsa.noise = NOISE_GAUSSIAN;
  EXPECT_THAT(smezo_test::error_of([&] { train(o); }),
              testing::HasSubstr("the run used noise gaussian-v1, this command asks for gaussian"));
  o.spsa.noise = NOISE_AUTO;
  TrainResult r = train(o);
  EXPECT_EQ(r.steps_done, 12);
  const SeedLog resumed = seed_log_read(run + "/seed_log.txt"), original = seed_log_read(fixture);
  ASSERT_EQ(resumed.records.size(), 12u);
  EXPECT_EQ(resumed.header, original.header) << "the header of the run is kept as it was";
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(resumed.records[i].seed, original.records[i].seed) << "step " << i + 1;
    // Steps 9-12 were recomputed: the same weights and noise give the same projected gradient
    // up to the forward pass's rounding (the CPU GEMM may sum in another order than the code
    // that wrote the fixture). Another noise would give an unrelated g (|g| ~ 1..16 here).
    EXPECT_NEAR(resumed.records[i].g, original.records[i].g, 1e-3 + 1e-3 * std::fabs(original.records[i].g))
        << "step " << i + 1;
  }
  EXPECT_EQ(replay_digest(run + "/seed_log.txt", dir), checkpoint_digest(run + "/checkpoint", dir));
}

// New runs through the public API: the header names the kind and the spec version, and replay
// rebuilds the checkpoint with that kind (rademacher, sign and the default gaussian).
TEST(NoiseReplay, NewRunsRecordTheirNoiseAndReplayWithIt) {
  for (NoiseKind kind : {NOISE_RADEMACHER, NOISE_SIGN, NOISE_AUTO}) {
    const std::string dir = make_temp_dir("noise_new");
    TrainOptions o = fixture_run(dir + "/run");
    o.steps = 3;
    o.n_train = 16;
    o.spsa.method = METHOD_RMEZO;
    o.spsa.sparsity = 0.5;
    o.spsa.noise = kind;
    train(o);
    const SeedLog log = seed_log_read(o.out_dir + "/seed_log.txt");
    const NoiseKind used = kind == NOISE_AUTO ? NOISE_GAUSSIAN : kind;
    EXPECT_EQ(log.header["spsa"]["noise"], noise_name(used));
    EXPECT_EQ(log.header["spsa"]["noise_spec"], noise_spec_version_of(used));
    const std::string trained = checkpoint_digest(o.out_dir + "/checkpoint", dir);
    EXPECT_EQ(replay_digest(o.out_dir + "/seed_log.txt", dir), trained);
    EXPECT_NE(replay_digest(o.out_dir + "/seed_log.txt", dir, NOISE_GAUSSIAN_V1), trained);
  }
}

TEST(NoiseReplay, UnknownNoiseOrNewerSpecIsRefused) {
  const std::string dir = make_temp_dir("noise_refused");
  const std::string text = read_file(kFixtures + "/smezo/seed_log.txt");
  struct Case {
    std::string insert, expect;
  } cases[] = {
      {R"("noise":"cauchy","noise_spec":2,)", "the run used noise 'cauchy', which this smezo does not know"},
      {R"("noise":"gaussian","noise_spec":99,)", "the run used noise spec version 99, this smezo implements"},
  };
  int k = 0;
  for (const Case& c : cases) {
    std::string t = text;
    const size_t at = t.find("\"spsa\":{") + 8;
    t.insert(at, c.insert);
    const std::string log = dir + "/log" + std::to_string(k++) + ".txt";
    write_file(log, t);
    std::string out;
    EXPECT_NE(run_command(smezo_test::smezo_binary() + " replay " + default_model_path() + " " + log +
                              " --out " + dir + "/x", &out), 0);
    EXPECT_THAT(out, testing::HasSubstr(c.expect));
    EXPECT_THAT(out, testing::HasSubstr(log));
    EXPECT_TRUE(smezo_test::is_one_line_output(out));
    // and resuming such a run
    const std::string run = dir + "/run" + std::to_string(k);
    ASSERT_EQ(run_command("mkdir -p " + run, nullptr), 0);
    write_file(run + "/seed_log.txt", t);
    TrainOptions o = fixture_run(run);
    o.resume = true;
    EXPECT_THAT(smezo_test::error_of([&] { train(o); }), testing::HasSubstr(c.expect));
  }
}

// The command line: `smezo train --noise KIND` records the kind and the spec version that added it
// (seed log and summary.json), `smezo replay` rebuilds its checkpoint bit for bit, and a killed run
// resumed WITHOUT --noise continues with KIND and ends bit for bit where the uninterrupted run did;
// --resume naming another noise is refused.
namespace {

void expect_cli_trains_resumes_and_replays(const std::string& kind, int spec_version) {
  const std::string dir = make_temp_dir("noise_cli_" + kind);
  const std::string common = smezo_test::smezo_binary() + " train --task sst2 --method smezo --sparsity 0.5 "
                             "--steps 6 --batch 2 --max-len 40 --train-examples 16 --dev-examples 0 --skip-test "
                             "--lr 2e-3 --flush-every 1 --progress-every 1000";
  std::string out;
  ASSERT_EQ(run_command(common + " --noise " + kind + " --out " + dir + "/full", &out), 0) << out;
  const nlohmann::json header = seed_log_read(dir + "/full/seed_log.txt").header;
  EXPECT_EQ(header["spsa"]["noise"], kind);
  EXPECT_EQ(header["spsa"]["noise_spec"], spec_version);
  const nlohmann::json summary = nlohmann::json::parse(read_file(dir + "/full/summary.json"));
  EXPECT_EQ(summary["noise"], kind);
  const std::string trained = checkpoint_digest(dir + "/full/checkpoint", dir);
  ASSERT_EQ(run_command(smezo_test::smezo_binary() + " replay " + default_model_path() + " " + dir +
                            "/full/seed_log.txt --out " + dir + "/replayed", &out), 0) << out;
  EXPECT_EQ(checkpoint_digest(dir + "/replayed", dir), trained);
  // the same command with the default noise trains other weights: the digests can differ
  ASSERT_EQ(run_command(common + " --out " + dir + "/gaussian", &out), 0) << out;
  EXPECT_NE(checkpoint_digest(dir + "/gaussian/checkpoint", dir), trained);
  // killed after step 3: resume without --noise
  ASSERT_EQ(run_command("mkdir -p " + dir + "/killed", nullptr), 0);
  write_file(dir + "/killed/seed_log.txt", truncated_log(dir + "/full/seed_log.txt", 3));
  EXPECT_NE(run_command(common + " --resume --noise gaussian --out " + dir + "/killed", &out), 0);
  EXPECT_THAT(out, testing::HasSubstr("the run used noise " + kind + ", this command asks for gaussian"));
  ASSERT_EQ(run_command(common + " --resume --out " + dir + "/killed", &out), 0) << out;
  EXPECT_EQ(checkpoint_digest(dir + "/killed/checkpoint", dir), trained);
}

}  // namespace

TEST(NoiseReplay, CliRademacherTrainsResumesAndReplaysBitForBit) {
  expect_cli_trains_resumes_and_replays("rademacher", 2);
}

// The sign kind (spec v3): its log records noise_spec 3, which a spec-v2 smezo refuses
// (spsa_logged_noise's rule, tests/test_spsa.cpp), and this one replays and resumes.
TEST(NoiseReplay, CliSignTrainsResumesAndReplaysBitForBit) { expect_cli_trains_resumes_and_replays("sign", 3); }
