// What `smezo train`, `eval` and `generate` say and record: dev evaluation off with
// --dev-examples 0, the progress line's dev accuracy labelled with its step, one number
// format, eval reusing a run's settings, in-context demonstrations counted, learning-rate
// checks, seeds printed for sampled text, and sentencepiece kept quiet.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include <nlohmann/json.hpp>

#include "common/assets.h"
#include "common/check.h"
#include "setup/model_setup.h"
#include "smezo/train.h"
#include "tasks/task_data.h"
#include "tasks/task_encode.h"
#include "test_util.h"

namespace sentencepiece {
namespace logging {
int GetMinLogLevel() __attribute__((weak));
}  // namespace logging
}  // namespace sentencepiece

using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::read_json;
using smezo_test::run_command;
using testing::HasSubstr;

namespace {

const std::string kSmezo = smezo_test::smezo_binary();
// A tiny run: 2 examples per step, short candidates.
const std::string kTiny = " train --task sst2 --batch 2 --max-len 40 --lr 2e-3 --flush-every 2";

}  // namespace

// --dev-examples 0 means no dev evaluation: none runs, none prints, summary.json says null.
TEST(CliRuns, NoDevExamplesMeansNoDevEvaluation) {
  const std::string dir = make_temp_dir("nodev");
  std::string out;
  ASSERT_EQ(run_command(kSmezo + kTiny + " --steps 4 --eval-every 2 --dev-examples 0 --test-examples 6 "
                        "--progress-every 1 --out " + dir + "/run", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("done: no dev evaluation, test acc 0."));
  EXPECT_THAT(out, HasSubstr("evaluating on 6 test examples"));
  EXPECT_THAT(out, testing::Not(HasSubstr("-1.0")));
  const nlohmann::json s = read_json(dir + "/run/summary.json");
  EXPECT_TRUE(s["final_dev_acc"].is_null()) << s.dump();
  EXPECT_TRUE(s["best_dev_acc"].is_null()) << s.dump();
  EXPECT_TRUE(s["test_acc"].is_number());
  EXPECT_THAT(read_file(dir + "/run/metrics.jsonl"), testing::Not(HasSubstr("dev_acc")));
}

// The progress line names the step its dev accuracy is from; every accuracy and loss prints
// with 4 decimals (progress line, end-of-run line, eval).
TEST(CliRuns, DevAccuracyLabelledAndOneNumberFormat) {
  const std::string dir = make_temp_dir("format");
  std::string out;
  ASSERT_EQ(run_command(kSmezo + kTiny + " --steps 4 --eval-every 2 --dev-examples 6 --test-examples 6 "
                        "--progress-every 1 --out " + dir + "/run", &out), 0) << out;
  EXPECT_THAT(out, testing::ContainsRegex("step 2/4 50.0% \\| loss [0-9]+\\.[0-9]{4} \\(last [0-9]+\\.[0-9]{4}\\).*"
                                          "\\| dev acc -\n"));
  EXPECT_THAT(out, testing::ContainsRegex("step 3/4 .*\\| dev acc [01]\\.[0-9]{4} \\(step 2\\)\n"));
  EXPECT_THAT(out, testing::ContainsRegex("done: dev acc [01]\\.[0-9]{4} \\(best [01]\\.[0-9]{4}\\), "
                                          "test acc [01]\\.[0-9]{4}, "));
  ASSERT_EQ(run_command(kSmezo + " eval --task sst2 --max-len 40 --test-examples 6", &out), 0) << out;
  EXPECT_THAT(out, testing::ContainsRegex("accuracy [01]\\.[0-9]{4}  \\["));
}

// eval on a run's checkpoint reuses the run's --max-len and data settings (from
// smezo_run.json), says so, and measures the run's test accuracy; options given win.
TEST(CliRuns, EvalReusesTheRunsSettings) {
  const std::string dir = make_temp_dir("evalrun");
  std::string out;
  ASSERT_EQ(run_command(kSmezo + " train --task rte --batch 2 --max-len 48 --lr 2e-3 --steps 3 --eval-every 0 "
                        "--train-examples 20 --dev-examples 4 --test-examples 24 --seed 7 --out " + dir + "/run", &out),
            0) << out;
  const nlohmann::json settings = read_json(dir + "/run/checkpoint/smezo_run.json");
  EXPECT_EQ(settings["task"], "rte");
  EXPECT_EQ(settings["max_len"], 48);
  EXPECT_EQ(settings["data_seed"], 7);
  EXPECT_EQ(settings["n_test"], 24);
  EXPECT_EQ(settings["step"], 3);
  const double test_acc = read_json(dir + "/run/summary.json")["test_acc"].get<double>();
  ASSERT_EQ(run_command(kSmezo + " eval --model " + dir + "/run/checkpoint --out " + dir + "/eval.json", &out), 0)
      << out;
  EXPECT_THAT(out, HasSubstr("eval: using the run's settings from " + dir + "/run/checkpoint/smezo_run.json: "
                             "--task rte --max-len 48 --seed 7 --train-examples 20 --dev-examples 4 "
                             "--test-examples 24"));
  EXPECT_THAT(out, HasSubstr("rte test (24 examples, zero-shot): accuracy " + smezo::format_string("%.4f", test_acc)));
  const nlohmann::json e = read_json(dir + "/eval.json");
  EXPECT_EQ(e["max_len"], 48);
  EXPECT_DOUBLE_EQ(e["accuracy"].get<double>(), test_acc);
  // an option on the command line wins and is not reported as taken from the run
  ASSERT_EQ(run_command(kSmezo + " eval --model " + dir + "/run/checkpoint --max-len 64 --test-examples 8", &out), 0)
      << out;
  EXPECT_THAT(out, testing::Not(HasSubstr("--max-len 48")));
  EXPECT_THAT(out, HasSubstr("--task rte --seed 7"));
  EXPECT_THAT(out, HasSubstr("rte test (8 examples, zero-shot)"));
}

// IclDemoCounter: all demonstrations when nothing was cut; fewer, exactly, as max_len shrinks.
TEST(CliRuns, IclDemoCounterCountsWholeDemonstrations) {
  auto tok = smezo::load_sentencepiece_tokenizer(smezo::asset_path("tokenizers/tinystories-512.model"));
  smezo::TaskSplits splits = smezo::load_task("sst2", 3, 8, 0, 4);
  const std::vector<smezo::TaskExample> demos(splits.train.begin(), splits.train.begin() + 4);
  const std::string prefix = smezo::build_icl_prefix(demos);
  smezo::IclDemoCounter counter(*tok, demos);
  const smezo::TaskExample& x = splits.test[0];
  const int64_t full = static_cast<int64_t>(smezo::encode_example(*tok, x, 100000, prefix).candidates[0].tokens.size());
  EXPECT_EQ(counter.whole_demos(smezo::encode_example(*tok, x, 100000, prefix)), 4);
  // the length of the prompt without demonstrations: below it no demonstration is whole
  const int64_t bare = static_cast<int64_t>(smezo::encode_example(*tok, x, 100000, "").candidates[0].tokens.size());
  EXPECT_EQ(counter.whole_demos(smezo::encode_example(*tok, x, bare + 2, prefix)), 0);
  // one token short of everything drops the first demonstration only
  EXPECT_EQ(counter.whole_demos(smezo::encode_example(*tok, x, full - 1, prefix)), 3);
  int64_t last = 4;
  for (int64_t len = full; len >= bare; len -= 7) {  // monotone in max_len
    const int64_t whole = counter.whole_demos(smezo::encode_example(*tok, x, len, prefix));
    EXPECT_LE(whole, last) << len;
    last = whole;
  }
  EXPECT_EQ(last, 0);
}

// smezo eval --mode icl says once how many demonstrations fit and records it.
TEST(CliRuns, IclSaysHowManyDemonstrationsWereKept) {
  const std::string dir = make_temp_dir("icl");
  std::string out;
  ASSERT_EQ(run_command(kSmezo + " eval --task sst2 --mode icl --shots 4 --max-len 48 --test-examples 6 --out " + dir +
                        "/cut.json", &out), 0) << out;
  EXPECT_THAT(out, testing::ContainsRegex("icl: --max-len 48 cut the demonstrations \\(from the left\\) in [1-6] of 6 "
                                          "examples: [0-9.]+ of 4 whole on average, [0-3] at least"));
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;  // that line and the result
  const nlohmann::json cut = read_json(dir + "/cut.json")["icl_demonstrations"];
  EXPECT_EQ(cut["shots"], 4);
  EXPECT_LT(cut["min_whole_demos"].get<int64_t>(), 4);
  EXPECT_LT(cut["examples_with_all_demos"].get<int64_t>(), 6);
  ASSERT_EQ(run_command(kSmezo + " eval --task sst2 --mode icl --shots 2 --max-len 512 --test-examples 6 --out " +
                        dir + "/all.json", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("icl: all 2 demonstrations fit in --max-len 512 for every example"));
  const nlohmann::json all = read_json(dir + "/all.json")["icl_demonstrations"];
  EXPECT_EQ(all["examples_with_all_demos"], 6);
  EXPECT_EQ(all["min_whole_demos"], 2);
  EXPECT_TRUE(read_json(dir + "/all.json").contains("icl_demonstrations"));
}

// A learning rate that is not finite is refused; one above 0.1 is used with a one-line warning.
TEST(CliRuns, LearningRateChecks) {
  const std::string dir = make_temp_dir("lr");
  std::string out;
  EXPECT_EQ(run_command(kSmezo + " train --steps 1 --lr 1e39 --out " + dir + "/a", &out), 2);
  EXPECT_THAT(out, HasSubstr("--lr: '1e39' is not a finite number"));  // would be inf as a float
  ASSERT_EQ(run_command(kSmezo + " train --task sst2 --batch 2 --max-len 40 --steps 1 --dev-examples 2 "
                        "--test-examples 2 --lr 2e3 --out " + dir + "/b 2>&1 >/dev/null | grep warning", &out), 0);
  EXPECT_EQ(out, "smezo: warning: --lr 2000 is above 0.1, where zeroth-order updates usually blow the weights up "
                 "(MeZO uses 1e-7 to 1e-5 on LLMs, stories260K about 1e-3); training anyway\n");
  // the library refuses it too
  smezo::TrainOptions o;
  o.out_dir = dir + "/c";
  o.spsa.lr = INFINITY;
  EXPECT_THAT([&] { smezo::train(o); },
              testing::ThrowsMessage<smezo::Error>(HasSubstr("--lr must be a finite number >= 0, got inf")));
  o.spsa.lr = 1e-3f;
  o.max_len = 1;  // and names the real minimum of --max-len
  EXPECT_THAT([&] { smezo::train(o); },
              testing::ThrowsMessage<smezo::Error>(HasSubstr("--max-len must be an integer >= 2, got 1")));
}

// Sampled text without --seed: a seed from the clock, printed, that repeats the text.
TEST(CliRuns, SampledGenerateSeedsFromTheClockAndSaysSo) {
  std::string a, b, again;
  ASSERT_EQ(run_command(kSmezo + " generate --temperature 1 --steps 40", &a), 0) << a;
  ASSERT_EQ(run_command(kSmezo + " generate --temperature 1 --steps 40", &b), 0) << b;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(a, m, std::regex("generate: sampling with --seed ([0-9]+) \\(pass it to get this text "
                                                 "again\\)\n")));
  const std::string seed = m[1];
  EXPECT_NE(a, b);  // different seeds (and, at 40 tokens, different text)
  const std::string text_a = std::regex_replace(a, std::regex("generate: sampling[^\n]*\n"), "");
  ASSERT_EQ(run_command(kSmezo + " generate --temperature 1 --steps 40 --seed " + seed, &again), 0);
  EXPECT_EQ(again, text_a);  // no seed line when --seed is given
  // greedy needs no seed and prints none
  ASSERT_EQ(run_command(kSmezo + " generate --steps 5", &a), 0);
  EXPECT_THAT(a, testing::Not(HasSubstr("seed")));
}

// --steps counts the prompt's tokens (llama2.c's -n); --new-tokens counts only new ones.
TEST(CliRuns, GenerateNewTokensCountsAfterThePrompt) {
  const std::string prompt = " --prompt 'Once upon a time there was'";
  std::string out;
  ASSERT_EQ(run_command(kSmezo + " generate --steps 2" + prompt, &out), 1);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("the prompt \\(([0-9]+) tokens with BOS\\) does not fit --steps 2, "
                                                   "which counts the prompt's tokens")))
      << out;
  const int n_prompt = std::stoi(m[1]);
  std::string by_steps, by_new;
  ASSERT_EQ(run_command(kSmezo + " generate --new-tokens 6" + prompt + " 2>&1", &by_new), 0);
  ASSERT_EQ(run_command(kSmezo + " generate --steps " + std::to_string(n_prompt - 1 + 6) + prompt, &by_steps), 0);
  EXPECT_EQ(by_new, by_steps);
  EXPECT_GT(by_new.size(), std::string("Once upon a time there was\n").size());
}

// sentencepiece's own INFO/WARNING logging is switched off when a tokenizer loads; its real
// errors still come back as one-line smezo errors.
TEST(CliRuns, SentencepieceLoggingIsQuiet) {
  auto tok = smezo::load_sentencepiece_tokenizer(smezo::asset_path("tokenizers/tinystories-512.model"));
  ASSERT_NE(&sentencepiece::logging::GetMinLogLevel, nullptr) << "this sentencepiece has no log level";
  EXPECT_EQ(sentencepiece::logging::GetMinLogLevel(), 2);  // LOG_ERROR: INFO and WARNING quiet
  std::string out;
  EXPECT_EQ(run_command(kSmezo + " generate --steps 3 --tokenizer README.md", &out), 1);
  EXPECT_TRUE(smezo_test::is_one_line_output(out));
  EXPECT_THAT(out, HasSubstr("README.md is not a sentencepiece model"));
}
