// Training end to end on the real stories260K and real task data: the loss falls on a fixed
// batch, replay rebuilds the trained weights bit for bit, a run killed with SIGKILL and
// resumed equals an uninterrupted one bit for bit, and bad input gives one-line errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "setup/model_setup.h"
#include "common/check.h"
#include "common/assets.h"
#include "run/metrics_log.h"
#include "run/seed_log.h"
#include "tasks/task_data.h"
#include "tasks/task_encode.h"
#include "model_fixture.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/objective.h"
#include "train/spsa.h"

using namespace smezo;
using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::run_command;

namespace {

const std::string kSmezo = smezo_test::smezo_binary();
// A small, fast run: 2 examples per step, short candidates, no evaluation (add --task, --lr).
const std::string kSmallRun =
    " train --batch 2 --max-len 40 --eval-every 0 --dev-examples 8 --skip-test --progress-every 1000"
    " --flush-every 5";
const std::string kSst2 = " --task sst2 --lr 2e-3";

}  // namespace

TEST(Train, FixedBatchLossFallsOnStories260K) {
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 1024, 256);
  TaskSplits splits = load_task("sst2", 1, 16, 0, 0);
  std::vector<EncodedExample> enc;
  for (int i = 0; i < 3; i++) enc.push_back(encode_example(*lm.tokenizer, splits.train[i], 48));
  std::vector<const EncodedExample*> batch;
  for (const auto& e : enc) batch.push_back(&e);
  SpsaOptions o;
  o.method = METHOD_SMEZO;
  o.sparsity = 0.75;
  o.lr = 3e-3f;
  o.total_steps = 150;
  SpsaOptimizer opt(*lm.model, o);
  const double before = batch_loss(*lm.model, batch, {Probe{}}, true)[0];
  for (int s = 1; s <= 150; s++)
    opt.finish(s, batch_loss(*lm.model, batch, opt.probes(s, false), true));
  const double after = batch_loss(*lm.model, batch, {Probe{}}, true)[0];
  EXPECT_LT(after, 0.8 * before) << before << " -> " << after;
}

TEST(Train, ReplayRebuildsTrainedWeightsBitForBit) {
  std::string dir = make_temp_dir("replay"), out;
  ASSERT_EQ(run_command(kSmezo + kSmallRun + kSst2 + " --steps 25 --out " + dir + "/run", &out), 0) << out;
  ASSERT_EQ(run_command(kSmezo + " replay " + default_model_path() + " " + dir + "/run/seed_log.txt --out " + dir +
                            "/replayed", &out), 0) << out;
  EXPECT_THAT(out, testing::HasSubstr("replayed 25 steps"));
  const std::string trained = read_file(dir + "/run/checkpoint/model.safetensors");
  EXPECT_EQ(trained, read_file(dir + "/replayed/model.safetensors"));
  // and the weights did move: an empty log replays to the base weights, which differ
  smezo_test::write_file(dir + "/empty_log.txt", read_file(dir + "/run/seed_log.txt").substr(
                                                     0, read_file(dir + "/run/seed_log.txt").find("\n1 ") + 1));
  ASSERT_EQ(run_command(kSmezo + " replay " + default_model_path() + " " + dir + "/empty_log.txt --out " + dir +
                            "/base", &out), 0) << out;
  EXPECT_THAT(out, testing::HasSubstr("replayed 0 steps"));
  EXPECT_NE(trained, read_file(dir + "/base/model.safetensors"));
  // a seed log from another base model is refused
  std::string bad = dir + "/run/seed_log.txt";
  ASSERT_NE(run_command(kSmezo + " replay " + dir + "/run/checkpoint " + bad + " --out " + dir + "/x", &out), 0);
  EXPECT_THAT(out, testing::HasSubstr("not the base model"));
}

TEST(Train, ResumeAfterSigkillEqualsUninterruptedRun) {
  std::string dir = make_temp_dir("resume"), out;
  const std::string run = kSmezo + kSmallRun + " --task sst2 --steps 60 --checkpoint-every 20";
  ASSERT_EQ(run_command(run + " --lr 2e-3 --out " + dir + "/straight", &out), 0) << out;
  // start the same run, kill it hard once its seed log holds some flushed steps
  const int64_t logged = smezo_test::run_and_kill_after_logged_steps(run + " --lr 2e-3 --out " + dir + "/killed",
                                                                     dir + "/killed/seed_log.txt", 23);
  ASSERT_NE(logged, -1) << "the run finished before it could be killed";
  ASSERT_GE(logged, 23);
  ASSERT_LT(logged, 60);
  ASSERT_EQ(run_command(run + " --lr 2e-3 --out " + dir + "/killed --resume", &out), 0) << out;
  EXPECT_THAT(out, testing::HasSubstr("resuming"));
  EXPECT_EQ(read_file(dir + "/straight/checkpoint/model.safetensors"),
            read_file(dir + "/killed/checkpoint/model.safetensors"));
  SeedLog a = seed_log_read(dir + "/straight/seed_log.txt"), b = seed_log_read(dir + "/killed/seed_log.txt");
  ASSERT_EQ(a.records.size(), 60u);
  ASSERT_EQ(b.records.size(), 60u);
  for (size_t i = 0; i < 60; i++) EXPECT_EQ(seed_log_format_record(a.records[i]), seed_log_format_record(b.records[i]));
  // every step appears once in the metrics of the resumed run
  int64_t step_lines = 0;
  for (const auto& rec : metrics_log_read(dir + "/killed/metrics.jsonl")) step_lines += rec.contains("loss");
  EXPECT_EQ(step_lines, 60);
  // resuming with different options is refused
  ASSERT_NE(run_command(run + " --lr 1e-3 --out " + dir + "/killed --resume", &out), 0);
  EXPECT_THAT(out, testing::ContainsRegex("differs from the run in 1 option: lr = 0\\.002[0-9]* in the run, "
                                          "0\\.001[0-9]* here ---> HINT: resume with the options of the"));
  // so is another dev size: on small tasks it changes the training pool
  const std::string other_dev = kSmezo + " train --batch 2 --max-len 40 --eval-every 0 --dev-examples 9 --skip-test"
                                " --progress-every 1000 --flush-every 5 --task sst2 --steps 60 --checkpoint-every 20";
  ASSERT_NE(run_command(other_dev + " --lr 2e-3 --out " + dir + "/killed --resume", &out), 0);
  EXPECT_THAT(out, testing::HasSubstr("n_dev"));
}

TEST(Train, NonFiniteLossStopsAndSaysWhere) {
  std::string dir = make_temp_dir("nan"), out;
  int rc = run_command(kSmezo + kSmallRun + " --task sst2 --steps 20 --lr 3e38 --out " + dir + "/run", &out);
  EXPECT_NE(rc, 0);
  EXPECT_THAT(out, testing::ContainsRegex("smezo: error: the loss became (NaN|infinite) at step [0-9]+"));
  const std::string summary = read_file(dir + "/run/summary.json");
  EXPECT_THAT(summary, testing::HasSubstr("\"status\": \"stopped: the loss became"));
  EXPECT_THAT(summary, testing::Not(testing::HasSubstr("HINT")));  // the hint is for the terminal
  EXPECT_THAT(out, testing::HasSubstr("---> HINT: lower the learning rate or eps"));
  // the seed log holds exactly the steps before the failing one
  SeedLog log = seed_log_read(dir + "/run/seed_log.txt");
  EXPECT_GE(log.records.size(), 1u);
  EXPECT_THAT(out, testing::HasSubstr("at step " + std::to_string(log.records.size() + 1)));
}

TEST(Train, CheckpointRefusesNonFiniteWeights) {
  std::string dir = make_temp_dir("ckpt");
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 1, 1);
  save_hf_checkpoint(*lm.model, dir + "/ckpt", lm.tokenizer_path);
  const std::string good = read_file(dir + "/ckpt/model.safetensors");
  lm.model->params()[3]->w.f32()[5] = INFINITY;
  EXPECT_THAT([&] { save_hf_checkpoint(*lm.model, dir + "/ckpt", lm.tokenizer_path); },
              testing::ThrowsMessage<Error>(testing::HasSubstr("model.layers.0.self_attn.k_proj.weight holds a non-finite")));
  EXPECT_EQ(read_file(dir + "/ckpt/model.safetensors"), good);  // the previous one is kept
}

// The exported checkpoint is a Hugging Face LLaMA (rotate-half RoPE): loading it back gives
// the same logits as the llama2.c original, up to fp32 summation order.
TEST(Train, ExportedCheckpointReloadsWithSameLogits) {
  std::string dir = make_temp_dir("export");
  LoadedModel a = open_model_paths(default_model_path(), "", DEVICE_CPU, 64, 64);
  save_hf_checkpoint(*a.model, dir + "/hf", a.tokenizer_path);
  LoadedModel b = open_model_paths(dir + "/hf", "", DEVICE_CPU, 64, 64);
  EXPECT_EQ(b.model->config().rope_style, ROPE_ROTATE_HALF);
  const std::vector<int32_t> tokens = a.tokenizer->encode("Once upon a time there was a cat", true);
  const std::vector<float> la = smezo_test::logits_of(*a.model, tokens);
  const std::vector<float> lb = smezo_test::logits_of(*b.model, tokens);
  ASSERT_EQ(la.size(), lb.size());
  for (size_t i = 0; i < la.size(); i++) ASSERT_NEAR(la[i], lb[i], 1e-4f * (1 + std::fabs(la[i]))) << i;
}

TEST(Train, BadInputIsAOneLineError) {
  std::string dir = make_temp_dir("badtrain");
  smezo_test::write_file(dir + "/empty.txt", "");
  std::system(("mkdir -p " + dir + "/data/glue/SST-2").c_str());
  smezo_test::write_file(dir + "/data/glue/SST-2/train.tsv", "sentence\tlabel\ngood movie\t1\nno label here\n");
  smezo_test::write_file(dir + "/data/glue/SST-2/dev.tsv", "sentence\tlabel\nfine\t1\n");
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"--task winogrande", "winogrande"},
      {"--task sst2 --method adam", "--method: 'adam' is not one of mezo, smezo, rmezo"},
      {"--task sst2 --sparsity 1", "--sparsity: must be in [0, 1), got 1"},
      {"--task sst2 --sparsity -0.5", "--sparsity: must be in [0, 1), got -0.5"},
      {"--task sst2 --eps 0", "--eps: must be >= 1.17549e-38, got 0"},
      {"--task sst2 --eps -1", "--eps: must be >= 1.17549e-38, got -1"},
      {"--task sst2 --method mezo --sparsity 0.5", "--sparsity 0.5: mezo tunes every entry (a sparsity applies to smezo"},
      {"--task sst2 --data " + dir + "/data", "SST-2/train.tsv:3: "},
  };
  for (const Case& c : cases) {
    std::string out;
    int rc = run_command(kSmezo + kSmallRun + " --steps 2 --out " + dir + "/run " + c.args, &out);
    EXPECT_NE(rc, 0) << c.args;
    EXPECT_THAT(out, testing::HasSubstr(c.expect)) << c.args;
    EXPECT_TRUE(smezo_test::is_one_line_output(out)) << c.args;
  }
}

TEST(Eval, ZeroShotAndInContextRun) {
  std::string out;
  ASSERT_EQ(run_command(kSmezo + " eval --task copa --mode zero-shot --test-examples 20 --max-len 64", &out), 0) << out;
  EXPECT_THAT(out, testing::ContainsRegex("copa test \\(20 examples, zero-shot\\): accuracy 0\\.[0-9]{4}"));
  ASSERT_EQ(run_command(kSmezo + " eval --task sst2 --mode icl --shots 2 --test-examples 20 --max-len 128", &out), 0) << out;
  EXPECT_THAT(out, testing::ContainsRegex("sst2 test \\(20 examples, icl, k=2\\): accuracy"));
  EXPECT_NE(run_command(kSmezo + " eval --task sst2 --mode icl --shots 0", &out), 0);
  EXPECT_THAT(out, testing::HasSubstr("--shots"));
}

// The public embedding API: plain options in, results out, no CLI involved.
TEST(Train, PublicApiRunsATinyJob) {
  std::string dir = make_temp_dir("api");
  smezo::TrainOptions o;
  o.model_path = default_model_path();
  o.task = "rte";
  o.n_train = 8;
  o.n_dev = 4;
  o.n_test = 4;
  o.max_len = 48;
  o.batch = 2;
  o.steps = 3;
  o.eval_every = 0;
  o.out_dir = dir + "/run";
  o.spsa.method = smezo::METHOD_RMEZO;
  o.spsa.sparsity = 0.5;
  o.spsa.lr = 1e-3f;
  smezo::TrainResult r = smezo::train(o);
  EXPECT_EQ(r.steps_done, 3);
  // 4 dev and 4 test examples: each accuracy is a count of 4, and summary.json records the same
  const nlohmann::json s = nlohmann::json::parse(read_file(o.out_dir + "/summary.json"));
  for (const auto& [acc, key] : {std::pair<double, const char*>{r.final_dev_acc, "final_dev_acc"},
                                 {r.test_acc, "test_acc"}}) {
    EXPECT_TRUE(acc >= 0.0 && acc <= 1.0) << key << " " << acc;
    EXPECT_EQ(acc * 4, std::round(acc * 4)) << key << " " << acc;
    ASSERT_TRUE(s[key].is_number()) << key << " " << s.dump();
    EXPECT_EQ(s[key].get<double>(), acc) << key;
  }
  EXPECT_EQ(seed_log_read(o.out_dir + "/seed_log.txt").records.size(), 3u);
  EXPECT_EQ(s["linear_path"], "cpu");  // the path the run took, not --linear-path's "auto" (run_path.h)
}

// The public API's linear_path reaches the backend: the CPU refuses fused (it has one path)
// before anything is trained.
TEST(Train, LinearPathFusedIsRefusedOnTheCpu) {
  smezo::TrainOptions o;
  o.model_path = default_model_path();
  o.task = "rte";
  o.n_train = 8;
  o.n_dev = 4;
  o.n_test = 4;
  o.steps = 1;
  o.out_dir = make_temp_dir("api_fused") + "/run";
  o.linear_path = LINEAR_MODE_FUSED;
  EXPECT_THROW_MSG(smezo::train(o), "--linear-path fused: the CPU backend has one linear path");
}
