// The trainer on generation tasks and on metric objectives, on the real
// stories260K: a generation task built here by hand (short story prompts, a one-word answer)
// trains on its completion's token cross-entropy and reports exact match and F1 of greedy
// generations (equal to generation_eval.h run on the written checkpoint); --objective
// accuracy (SST-2) and f1 (the generation task) log the loss beside the metric and replay bit
// for bit; the objective is part of the run's identity; combinations that make no sense are
// one-line errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "common/check.h"
#include "common/file_util.h"
#include "run/metrics_log.h"
#include "run/seed_log.h"
#include "setup/model_setup.h"
#include "tasks/task_encode.h"
#include "test_util.h"
#include "train/generation_eval.h"
#include "train/metric_objective.h"
#include "train/objective.h"
#include "train/trainer.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"
#endif

using namespace smezo;
using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::read_json;
using smezo_test::run_command;
using testing::HasSubstr;

namespace {

const std::string kSmezo = smezo_test::smezo_binary();

TaskExample story(const std::string& prompt, const std::string& answer) {
  TaskExample x;
  x.contexts = {prompt};
  x.options = {" " + answer + "."};
  x.references = {answer, answer + "!"};
  return x;
}

// A generation task in the form the data-file reader produces: one candidate per example.
TaskSplits story_task(int64_t max_new_tokens = 6) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"Once upon a time there was a little girl named", "Lily"}, {"The dog ran to the", "park"},
      {"Tom liked to eat a big red", "apple"},                    {"The sun was hot, so they went to the", "beach"},
      {"Mom gave Ben a warm cup of", "milk"},                     {"The bird sang in the tall", "tree"},
      {"Sue found a shiny", "ball"},                               {"The cat was sleeping on the", "bed"},
      {"They played with a toy", "car"},                           {"At night, the sky was full of", "stars"},
      {"Max put on his warm", "hat"},                              {"The little fish swam in the", "sea"},
      {"Anna drew a picture of a", "house"},                       {"The boy kicked the", "ball"},
      {"Grandma baked a yummy", "cake"},                           {"The frog jumped into the", "pond"}};
  TaskSplits s;
  s.name = "stories-gen";
  s.generation = true;
  s.train_as_classification = false;
  s.max_new_tokens = max_new_tokens;
  s.stop = {"\n", "."};
  for (size_t i = 0; i < rows.size(); i++) {
    const TaskExample x = story(rows[i].first, rows[i].second);
    (i < 10 ? s.train : i < 13 ? s.dev : s.test).push_back(x);
  }
  return s;
}

TrainOptions small_run(const std::string& out_dir) {
  TrainOptions o;
  o.model_path = default_model_path();
  o.task = "stories-gen";
  o.max_len = 40;
  o.batch = 4;
  o.steps = 6;
  o.eval_every = 3;
  o.flush_every = 2;
  o.progress_every = 1000;
  o.spsa.lr = 2e-3f;
  o.spsa.eps = 3e-2f;
  o.out_dir = out_dir;
  return o;
}

// The task with every training example's references replaced by the base model's own greedy
// text (F1 1 at the null probe), so that perturbed generations move the F1 and g is not 0.
TaskSplits answerable(TaskSplits s, const TrainOptions& o) {
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 4096, 512);
  std::vector<EncodedExample> enc;
  for (const TaskExample& x : s.train) enc.push_back(encode_example(*lm.tokenizer, x, o.max_len));
  std::vector<const EncodedExample*> xs;
  for (const EncodedExample& e : enc) xs.push_back(&e);
  const auto texts = greedy_generations(*lm.model, *lm.tokenizer, xs, {Probe{}}, {s.max_new_tokens, s.stop});
  for (size_t i = 0; i < s.train.size(); i++) s.train[i].references = {texts[0][i]};
  return s;
}

std::vector<nlohmann::json> lines_with(const std::string& metrics_path, const char* key) {
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& rec : metrics_log_read(metrics_path))
    if (rec.contains(key)) out.push_back(rec);
  return out;
}

}  // namespace

// The generation task trains on the gold completion's tokens: step 1's two losses are
// gold_token_loss under that step's probe pair (a classification loss over one candidate
// would be 0), and the dev/test scores are EM and F1 of greedy generations, as
// evaluate_generation gives them on the written checkpoint.
TEST(GenerationTrain, CompletionLossAndEmF1Summary) {
  const std::string dir = make_temp_dir("gen_train");
  const TaskSplits splits = story_task();
  TrainOptions o = small_run(dir + "/run");
  o.fixed_batch = true;
  o.batch = static_cast<int64_t>(splits.train.size());  // every training example, in some order
  const TrainResult r = train_on_splits(o, splits);

  LoadedModel base = open_model_paths(default_model_path(), "", DEVICE_CPU, 4096, 512);
  std::vector<EncodedExample> enc;
  for (const TaskExample& x : splits.train) enc.push_back(encode_example(*base.tokenizer, x, o.max_len));
  std::vector<const EncodedExample*> batch;
  for (const EncodedExample& e : enc) batch.push_back(&e);
  SpsaOptions so = o.spsa;
  so.total_steps = o.steps;
  SpsaOptimizer opt(*base.model, so);
  const std::vector<double> expected = batch_loss(*base.model, batch, opt.step_probes(opt.step_seed(1), true), false);
  const nlohmann::json first = lines_with(dir + "/run/metrics.jsonl", "loss").at(0);
  EXPECT_GT(expected[0], 0.5);
  EXPECT_NEAR(first["loss_plus"].get<double>(), expected[0], 1e-12 * expected[0]);  // sum order differs
  EXPECT_NEAR(first["loss_minus"].get<double>(), expected[1], 1e-12 * expected[1]);

  const nlohmann::json summary = read_json(dir + "/run/summary.json");
  EXPECT_TRUE(summary["final_dev_acc"].is_null());
  EXPECT_EQ(summary["objective"], "loss");
  LoadedModel trained = open_model_paths(dir + "/run/checkpoint", "", DEVICE_CPU, 4096, 512);
  auto measured = [&](const std::vector<TaskExample>& xs) {
    std::vector<EncodedExample> e;
    for (const TaskExample& x : xs) e.push_back(encode_example(*trained.tokenizer, x, o.max_len));
    return evaluate_generation(*trained.model, *trained.tokenizer, e, xs, {splits.max_new_tokens, splits.stop}, 2);
  };
  const GenerationScore dev = measured(splits.dev), test = measured(splits.test);
  EXPECT_EQ(summary["final_dev_em"].get<double>(), dev.exact_match);
  EXPECT_EQ(summary["final_dev_f1"].get<double>(), dev.f1);
  EXPECT_EQ(summary["test_em"].get<double>(), test.exact_match);
  EXPECT_EQ(summary["test_f1"].get<double>(), test.f1);
  EXPECT_EQ(r.final_dev_f1, dev.f1);
  EXPECT_EQ(r.test_em, test.exact_match);
  const std::vector<nlohmann::json> evals = lines_with(dir + "/run/metrics.jsonl", "dev_f1");
  ASSERT_EQ(evals.size(), 2u);  // step 3 and the end
  EXPECT_EQ(evals[0]["step"], 3);
  EXPECT_TRUE(evals[0].contains("dev_em"));
  EXPECT_EQ(summary["best_dev_f1"].get<double>(), std::max(evals[0]["dev_f1"].get<double>(), dev.f1));
  EXPECT_THAT(read_file(dir + "/run/plot.svg"), HasSubstr("dev F1"));  // the plot names what it shows
}

// --objective f1: SPSA on 1 - the minibatch's mean F1; the loss is logged beside it, and
// the run replays (smezo replay) and repeats bit for bit.
TEST(GenerationTrain, F1ObjectiveLogsBothAndReplays) {
  const std::string dir = make_temp_dir("gen_f1");
  TrainOptions o = small_run(dir + "/run");
  o.objective = OBJECTIVE_F1;
  o.steps = 4;
  o.eval_every = 0;
  o.skip_test = true;
  o.spsa.eps = 0.1f;
  const TaskSplits splits = answerable(story_task(4), o);
  train_on_splits(o, splits);
  int moved = 0;
  for (const SeedRecord& r : seed_log_read(dir + "/run/seed_log.txt").records) moved += r.g != 0.0f;
  EXPECT_GT(moved, 0) << "the F1 never differed between the probes: the run did not train";
  for (const nlohmann::json& rec : lines_with(dir + "/run/metrics.jsonl", "loss")) {
    EXPECT_EQ(rec["objective"], "f1");
    for (const char* k : {"objective_plus", "objective_minus", "loss_plus", "loss_minus"}) ASSERT_TRUE(rec[k].is_number());
    EXPECT_GE(rec["objective_plus"].get<double>(), 0.0);
    EXPECT_LE(rec["objective_plus"].get<double>(), 1.0);
    EXPECT_GT(rec["loss_plus"].get<double>(), 0.5);  // the completion's cross-entropy, not the metric
  }
  EXPECT_EQ(seed_log_read(dir + "/run/seed_log.txt").header["objective"], "f1");
  std::string out;
  ASSERT_EQ(run_command(kSmezo + " replay " + default_model_path() + " " + dir + "/run/seed_log.txt --out " + dir +
                            "/replayed", &out), 0) << out;
  EXPECT_EQ(read_file(dir + "/run/checkpoint/model.safetensors"), read_file(dir + "/replayed/model.safetensors"));
  o.out_dir = dir + "/again";
  train_on_splits(o, splits);
  EXPECT_EQ(read_file(dir + "/run/seed_log.txt"), read_file(dir + "/again/seed_log.txt"));
}

// A generation run with the f1 objective and dev evaluations, cut after step 3 (its seed log
// truncated, the later files gone) and resumed, ends as the straight run does: the same
// weights, and each dev evaluation logged once.
TEST(GenerationTrain, F1RunResumesToTheStraightRun) {
  const std::string dir = make_temp_dir("gen_resume");
  const TaskSplits splits = story_task(3);
  TrainOptions o = small_run(dir + "/straight");
  o.objective = OBJECTIVE_F1;
  o.eval_every = 2;
  o.skip_test = true;
  train_on_splits(o, splits);
  const std::string log = read_file(dir + "/straight/seed_log.txt");
  size_t cut = log.find("\n4 ");
  ASSERT_NE(cut, std::string::npos);
  ASSERT_EQ(run_command("mkdir -p " + dir + "/cut", nullptr), 0);
  smezo_test::write_file(dir + "/cut/seed_log.txt", log.substr(0, cut + 1));
  smezo_test::write_file(dir + "/cut/metrics.jsonl", read_file(dir + "/straight/metrics.jsonl"));
  o.out_dir = dir + "/cut";
  o.resume = true;
  const TrainResult r = train_on_splits(o, splits);
  EXPECT_EQ(read_file(dir + "/straight/checkpoint/model.safetensors"), read_file(dir + "/cut/checkpoint/model.safetensors"));
  EXPECT_EQ(read_file(dir + "/straight/seed_log.txt"), read_file(dir + "/cut/seed_log.txt"));
  std::vector<int64_t> eval_steps;
  for (const nlohmann::json& rec : lines_with(dir + "/cut/metrics.jsonl", "dev_f1")) eval_steps.push_back(rec["step"]);
  EXPECT_EQ(eval_steps, (std::vector<int64_t>{2, 4, 6}));
  const nlohmann::json straight = read_json(dir + "/straight/summary.json"), resumed = read_json(dir + "/cut/summary.json");
  EXPECT_EQ(straight["final_dev_f1"], resumed["final_dev_f1"]);
  EXPECT_EQ(straight["best_dev_f1"], resumed["best_dev_f1"]);
  EXPECT_EQ(r.best_dev_f1, resumed["best_dev_f1"].get<double>());
}

// The accuracy objective's values are 1 - the accuracy that objective.h measures, under the
// null probe and under each half of a pair; the loss beside it is the classification loss.
TEST(MetricObjective, AccuracyIsOneMinusCandidateAccuracy) {
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 4096, 512);
  const TaskSplits sst2 = load_task("sst2", smezo_test::mixed_seed(1) & 0xffffffffu, 24, 0, 0);
  std::vector<EncodedExample> enc;
  for (const TaskExample& x : sst2.train) enc.push_back(encode_example(*lm.tokenizer, x, 48));
  std::vector<const EncodedExample*> batch;
  for (const EncodedExample& e : enc) batch.push_back(&e);
  const Probe pair{3e-2f, smezo_test::mixed_seed(2), true};
  const ProbeMeasures m = measure_metric_objective(*lm.model, *lm.tokenizer, OBJECTIVE_ACCURACY, {&batch, {}, true},
                                                   {Probe{}, pair}, {});
  ASSERT_EQ(m.objective.size(), 3u);
  const Probe singles[3] = {Probe{}, half_probe(pair, +1), half_probe(pair, -1)};
  for (int h = 0; h < 3; h++) {
    const ExampleScores scores = score_examples(*lm.model, batch, {singles[h]}, false)[0];
    int64_t correct = 0;  // the best mean log-prob, written out here
    for (size_t e = 0; e < batch.size(); e++) {
      const double a = scores[e][0].mean_logprob(), b = scores[e][1].mean_logprob();
      correct += (b > a ? 1 : 0) == batch[e]->gold;
    }
    EXPECT_DOUBLE_EQ(m.objective[h], 1.0 - static_cast<double>(correct) / 24.0) << smezo_test::seed_note();
    EXPECT_EQ(m.loss[h], classification_loss(scores, batch));
  }
}

// --objective accuracy on SST-2 through the command line: both values logged, updates made
// (g != 0 on some steps), replay rebuilds the weights bit for bit, and resuming with another
// objective is refused, naming it.
TEST(MetricObjective, AccuracyRunReplaysAndIsPartOfTheRun) {
  const std::string dir = make_temp_dir("acc_objective");
  const std::string run = kSmezo + " train --batch 16 --max-len 40 --eval-every 0 --dev-examples 8 --skip-test "
                          "--progress-every 1000 --flush-every 5 --task sst2 --lr 2e-3 --eps 3e-2";
  std::string out;
  ASSERT_EQ(run_command(run + " --steps 12 --objective accuracy --out " + dir + "/run", &out), 0) << out;
  int moved = 0;
  for (const nlohmann::json& rec : lines_with(dir + "/run/metrics.jsonl", "loss")) {
    EXPECT_EQ(rec["objective"], "accuracy");
    const double k = rec["objective_plus"].get<double>() * 16;  // a share of 16 examples
    EXPECT_NEAR(k, std::round(k), 1e-9);
    moved += rec["g"].get<double>() != 0.0;
  }
  EXPECT_GT(moved, 0) << "no step changed the accuracy: the run did not train";
  ASSERT_EQ(run_command(kSmezo + " replay " + default_model_path() + " " + dir + "/run/seed_log.txt --out " + dir +
                            "/replayed", &out), 0) << out;
  EXPECT_EQ(read_file(dir + "/run/checkpoint/model.safetensors"), read_file(dir + "/replayed/model.safetensors"));
  EXPECT_NE(run_command(run + " --steps 13 --out " + dir + "/run --resume", &out), 0);
  EXPECT_THAT(out, HasSubstr("objective = \"accuracy\" in the run, \"loss\" here"));
}

TEST(MetricObjective, NonsenseCombinationsAreOneLineErrors) {
  const std::string dir = make_temp_dir("bad_objective");
  std::string out;
  const std::string run = kSmezo + " train --batch 2 --max-len 40 --steps 2 --task sst2 --skip-test";
  EXPECT_NE(run_command(run + " --objective f1 --out " + dir + "/a", &out), 0);
  EXPECT_THAT(out, HasSubstr("--objective f1 scores generated text, but task sst2 is a classification task"));
  EXPECT_EQ(smezo_test::occurrences(out, "\n"), 1u) << out;
  EXPECT_EQ(run_command(run + " --objective bleu --out " + dir + "/b", &out), 2);
  EXPECT_THAT(out, HasSubstr("--objective"));
  TrainOptions o = small_run(dir + "/c");
  o.objective = OBJECTIVE_ACCURACY;
  const std::string e = smezo_test::error_of([&] { train_on_splits(o, story_task()); });
  EXPECT_THAT(e, HasSubstr("--objective accuracy scores a choice among candidates, but task stories-gen is a "
                           "generation task"));
  o.objective = OBJECTIVE_LOSS;
  TaskSplits no_refs = story_task();
  no_refs.dev[2].references.clear();
  EXPECT_THAT(smezo_test::error_of([&] { train_on_splits(o, no_refs); }),
              HasSubstr("generation task: dev example 2 has no reference answer to score against"));
  EXPECT_FALSE(path_exists(dir + "/c/seed_log.txt"));  // refused before training
  o.objective = static_cast<Objective>(7);
  EXPECT_THAT(smezo_test::error_of([&] { train_on_splits(o, story_task()); }), HasSubstr("unknown --objective"));
}

// On the (emulated) CUDA backend: a generation run with the f1 objective trains, evaluates
// and replays there bit for bit.
TEST(GenerationTrain, F1ObjectiveRunOnCuda) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const std::string dir = make_temp_dir("gen_cuda");
  TrainOptions o = small_run(dir + "/run");
  o.device = DEVICE_CUDA;
  o.dtype = DTYPE_F32;
  o.objective = OBJECTIVE_F1;
  o.steps = 2;
  o.eval_every = 0;
  o.batch = 2;
  TaskSplits splits = story_task(3);
  splits.dev.resize(2);
  splits.test.resize(1);
  const TrainResult r = train_on_splits(o, splits);
  EXPECT_GE(r.final_dev_f1, 0.0);
  EXPECT_GE(r.test_em, 0.0);
  EXPECT_EQ(lines_with(dir + "/run/metrics.jsonl", "objective").size(), 2u);
  std::string out;
  ASSERT_EQ(run_command(kSmezo + " replay " + default_model_path() + " " + dir + "/run/seed_log.txt --device cuda "
                            "--dtype f32 --out " + dir + "/replayed", &out), 0) << out;
  EXPECT_EQ(read_file(dir + "/run/checkpoint/model.safetensors"), read_file(dir + "/replayed/model.safetensors"));
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}
