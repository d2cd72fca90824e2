// `smezo eval` on your own data (--task-spec with --dev-file/--test-file, src/cli/command_eval.cpp):
// a classification spec scores what the built-in task scores (an exported sst2 gives the same
// accuracy and per-example scores, random records the accuracy computed here); a generation
// spec's EM/F1 of a trained checkpoint equal the run's own final dev evaluation (summary.json),
// with the task spec and data files taken from the checkpoint's smezo_run.json; bad option
// combinations are one-line errors; --help documents the options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "setup/model_setup.h"
#include "tasks/task_encode.h"
#include "tasks/task_files.h"
#include "tasks/text_metrics.h"
#include "train/objective.h"
#include "test_util.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"
#endif

using namespace smezo;
using nlohmann::json;
using smezo_test::read_file;
using smezo_test::read_json;
using smezo_test::run_command;
using testing::HasSubstr;

namespace {

const std::string kSmezo = smezo_test::smezo_binary();

// Words stories260K knows, for records and references.
const std::vector<std::string> kWords = {"Lily", "Tom", "cat", "dog", "park", "ball", "happy", "sad", "big", "little",
                                         "tree", "sun", "girl", "boy", "mom", "play", "saw", "went", "red", "day"};

std::vector<json> read_jsonl(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

class EvalFiles : public testing::Test {
 protected:
  void SetUp() override { dir_ = smezo_test::make_temp_dir("eval_files"); }
  std::string put(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    smezo_test::write_file(path, bytes);
    return path;
  }
  std::string words(std::mt19937& rng, int n) {
    std::string s;
    for (int i = 0; i < n; i++) s += (i ? " " : "") + kWords[rng() % kWords.size()];
    return s;
  }
  std::string dir_;
};

// The generation comparison: random prompts, references partly the base model's own greedy
// words (so EM and F1 are neither all 0 nor all 1), a few training steps, then `smezo eval` of
// the checkpoint (no task options: the run's spec and dev file) against summary.json.
void expect_checkpoint_eval_equals_run(const std::string& dir, const std::string& device) {
  std::mt19937 rng(static_cast<uint32_t>(smezo_test::mixed_seed(2401)));
  const std::string spec = dir + "/gen.json";
  smezo_test::write_file(spec, R"({"name": "gen", "kind": "generation", "prompt": "{story}",
      "completion_field": "answers", "completion_prefix": " ", "max_new_tokens": 5, "stop": ["."]})");
  std::vector<std::string> prompts;
  std::string first;
  for (int i = 0; i < 10; i++) {
    std::string p;
    for (int k = 0; k < 3; k++) p += (k ? " " : "") + kWords[rng() % kWords.size()];
    prompts.push_back("Once upon a time " + p);
    first += json({{"story", prompts.back()}, {"answers", {"x"}}}).dump() + "\n";
  }
  const std::string dev = dir + "/dev.jsonl";
  smezo_test::write_file(dev, first);
  std::string out;
  ASSERT_EQ(run_command(kSmezo + " eval" + device + " --task-spec " + spec + " --dev-file " + dev + " --max-len 48 "
                        "--examples-out " + dir + "/base.jsonl", &out), 0) << out;
  const std::vector<json> base = read_jsonl(dir + "/base.jsonl");
  ASSERT_EQ(base.size(), 11u) << out;
  std::string data;
  for (int i = 0; i < 10; i++) {  // even: the base model's text (or its first word); odd: random words
    const std::string text = base[i + 1]["text"].get<std::string>();
    std::vector<std::string> refs = {kWords[rng() % kWords.size()]};
    if (i % 2 == 0) refs.push_back(i % 4 == 0 ? text : text.substr(0, text.find(' ', 1)));
    data += json({{"story", prompts[i]}, {"answers", refs}}).dump() + "\n";
  }
  smezo_test::write_file(dev, data);
  ASSERT_EQ(run_command(kSmezo + " train" + device + " --task-spec " + spec + " --train-file " + dev + " --dev-file " +
                        dev + " --steps 3 --batch 4 --max-len 48 --lr 1e-5 --eval-every 0 --progress-every 1000 "
                        "--out " + dir + "/run", &out), 0) << out;
  const json s = read_json(dir + "/run/summary.json");
  ASSERT_TRUE(s["final_dev_em"].is_number() && s["final_dev_f1"].is_number()) << s.dump();
  ASSERT_EQ(run_command(kSmezo + " eval" + device + " --model " + dir + "/run/checkpoint --batch 4 --out " + dir +
                        "/eval.json --examples-out " + dir + "/ex.jsonl", &out), 0) << out;
  // the run recorded its files as absolute paths (eval from any folder scores its rows)
  const std::string abs_spec = std::filesystem::absolute(spec).string(), abs_dev = std::filesystem::absolute(dev).string();
  EXPECT_THAT(out, HasSubstr("eval: using the run's settings from " + dir + "/run/checkpoint/smezo_run.json: "
                             "--task-spec " + abs_spec + " --dev-file " + abs_dev + " --max-len 48"));
  EXPECT_THAT(out, HasSubstr("gen dev (10 examples, zero-shot): EM "));
  const json e = read_json(dir + "/eval.json");
  EXPECT_DOUBLE_EQ(e["em"].get<double>(), s["final_dev_em"].get<double>());
  EXPECT_DOUBLE_EQ(e["f1"].get<double>(), s["final_dev_f1"].get<double>());
  EXPECT_TRUE(e["accuracy"].is_null());
  EXPECT_EQ(e["task_spec"], abs_spec);
  EXPECT_EQ(e["data_file"], abs_dev);
  // the comparison can fail: the numbers are neither 0 nor 1
  for (const char* key : {"em", "f1"}) {
    EXPECT_GT(e[key].get<double>(), 0.0) << key;
    EXPECT_LT(e[key].get<double>(), 1.0) << key;
  }
  // every example's line: its text, scored here, and the means are the reported EM/F1
  const std::vector<json> ex = read_jsonl(dir + "/ex.jsonl");
  ASSERT_EQ(ex.size(), 11u);
  EXPECT_EQ(ex[0]["max_new_tokens"], 5);
  double em = 0, f1 = 0;
  for (size_t i = 1; i < ex.size(); i++) {
    const std::string text = ex[i]["text"].get<std::string>();
    const auto refs = ex[i]["references"].get<std::vector<std::string>>();
    EXPECT_EQ(ex[i]["prompt"], prompts[i - 1]);
    EXPECT_EQ(text.find('.'), std::string::npos) << text;  // cut at the stop string
    EXPECT_DOUBLE_EQ(ex[i]["em"].get<double>(), max_exact_match(text, refs));
    EXPECT_DOUBLE_EQ(ex[i]["f1"].get<double>(), max_token_f1(text, refs));
    em += max_exact_match(text, refs) / 10;
    f1 += max_token_f1(text, refs) / 10;
  }
  EXPECT_NEAR(em, e["em"].get<double>(), 1e-12);
  EXPECT_NEAR(f1, e["f1"].get<double>(), 1e-12);
}

}  // namespace

// An exported built-in task evaluated from its files scores as the built-in task: the same
// accuracy and the same per-example lines (text, scores, prediction, tokens).
TEST_F(EvalFiles, ExportedSst2EvaluatesAsTheBuiltInTask) {
  std::string out;
  ASSERT_EQ(run_command(kSmezo + " train --task sst2 --data-seed 42 --train-examples 4 --dev-examples 4 "
                        "--test-examples 12 --export-data " + dir_ + "/exp", &out), 0) << out;
  ASSERT_EQ(run_command(kSmezo + " eval --task sst2 --test-examples 12 --max-len 40 --out " + dir_ +
                        "/builtin.json --examples-out " + dir_ + "/builtin.jsonl", &out), 0) << out;
  ASSERT_EQ(run_command(kSmezo + " eval --task-spec " + dir_ + "/exp/spec.json --test-file " + dir_ +
                        "/exp/test.jsonl --max-len 40 --out " + dir_ + "/files.json --examples-out " + dir_ +
                        "/files.jsonl", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("sst2 test (12 examples, zero-shot): accuracy "));
  EXPECT_DOUBLE_EQ(read_json(dir_ + "/files.json")["accuracy"].get<double>(),
                   read_json(dir_ + "/builtin.json")["accuracy"].get<double>());
  const std::vector<json> a = read_jsonl(dir_ + "/builtin.jsonl"), b = read_jsonl(dir_ + "/files.jsonl");
  ASSERT_EQ(a.size(), 13u);
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 1; i < a.size(); i++) EXPECT_EQ(a[i], b[i]) << i;
  // in-context: the demonstrations are the training file's first --shots rows, as the built-in
  // task's first sampled training examples (the header holds the prefix they make)
  ASSERT_EQ(run_command(kSmezo + " eval --task sst2 --mode icl --shots 3 --train-examples 4 --test-examples 12 "
                        "--max-len 96 --examples-out " + dir_ + "/builtin_icl.jsonl", &out), 0) << out;
  ASSERT_EQ(run_command(kSmezo + " eval --task-spec " + dir_ + "/exp/spec.json --train-file " + dir_ +
                        "/exp/train.jsonl --test-file " + dir_ + "/exp/test.jsonl --mode icl --shots 3 --max-len 96 "
                        "--examples-out " + dir_ + "/files_icl.jsonl", &out), 0) << out;
  const std::vector<json> icl = read_jsonl(dir_ + "/files_icl.jsonl");
  EXPECT_EQ(icl, read_jsonl(dir_ + "/builtin_icl.jsonl"));
  ASSERT_EQ(icl.size(), 13u);
  EXPECT_NE(icl[0]["icl_prefix"], "");
  EXPECT_NE(icl[1]["scores"], a[1]["scores"]);  // the demonstrations changed the scores
  // the comparison can fail: another seed's export holds other examples
  ASSERT_EQ(run_command(kSmezo + " train --task sst2 --data-seed 5 --train-examples 4 --dev-examples 4 "
                        "--test-examples 12 --export-data " + dir_ + "/other", &out), 0) << out;
  ASSERT_EQ(run_command(kSmezo + " eval --task-spec " + dir_ + "/other/spec.json --test-file " + dir_ +
                        "/other/test.jsonl --max-len 40 --examples-out " + dir_ + "/other.jsonl", &out), 0) << out;
  EXPECT_NE(read_jsonl(dir_ + "/other.jsonl")[1], a[1]);
}

// Random records of a spec of our own: the accuracy is the one computed here from the
// per-example scores, and the one the library's accuracy() gives for the spec's examples.
TEST_F(EvalFiles, RandomClassificationRecordsScoreTheirAccuracy) {
  std::mt19937 rng(static_cast<uint32_t>(smezo_test::mixed_seed(2402)));
  const std::string spec = put("mood.json", R"({"name": "mood", "prompt": "{text} The day was",
      "candidates": [" good", " bad", " long"], "label": {"field": "label", "values": ["g", "b", "l"]}})");
  std::string data;
  for (int i = 0; i < 14; i++)
    data += json({{"text", words(rng, 6)}, {"label", std::string(1, "gbl"[rng() % 3])}}).dump() + "\n";
  const std::string test = put("mood.jsonl", data);
  std::string out;
  ASSERT_EQ(run_command(kSmezo + " eval --task-spec " + spec + " --test-file " + test + " --test-examples 11 --batch 3 "
                        "--max-len 32 --out " + dir_ + "/e.json --examples-out " + dir_ + "/ex.jsonl", &out), 0) << out;
  const double acc = read_json(dir_ + "/e.json")["accuracy"].get<double>();
  const std::vector<json> ex = read_jsonl(dir_ + "/ex.jsonl");
  ASSERT_EQ(ex.size(), 12u);  // the first 11 rows
  int correct = 0;
  for (size_t i = 1; i < ex.size(); i++) {
    const auto scores = ex[i]["scores"].get<std::vector<double>>();
    ASSERT_EQ(scores.size(), 3u);
    const int best = static_cast<int>(std::max_element(scores.begin(), scores.end()) - scores.begin());
    EXPECT_EQ(ex[i]["pred"], best);
    correct += best == ex[i]["gold"].get<int>();
  }
  EXPECT_DOUBLE_EQ(acc, correct / 11.0);
  const TaskSplits splits = load_task_files({spec, "", "", test}, 0, 0, 11);
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 1024, 64);
  std::vector<EncodedExample> enc;
  for (const TaskExample& x : splits.test) enc.push_back(encode_example(*lm.tokenizer, x, 32));
  EXPECT_DOUBLE_EQ(acc, accuracy(*lm.model, enc, 3));
}

TEST_F(EvalFiles, GenerationCheckpointEqualsTheRunsFinalDevEvaluation) {
  expect_checkpoint_eval_equals_run(dir_, "");
}

// The same through the CUDA backend (fp32): on a GPU, or on the emulated one (make emu-test).
TEST_F(EvalFiles, GenerationCheckpointEqualsTheRunsFinalDevEvaluationOnCuda) {
#ifdef SMEZO_WITH_CUDA
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  expect_checkpoint_eval_equals_run(dir_, " --device cuda --dtype f32");
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// Bad combinations are one-line errors naming what to give.
TEST_F(EvalFiles, BadCombinationsAreOneLineErrors) {
  const std::string spec = put("s.json", R"({"name": "s", "prompt": "{t}", "candidates": [" a", " b"],
      "label": {"field": "l"}})");
  const std::string data = put("d.jsonl", "{\"t\": \"x\", \"l\": 1}\n");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {" --task sst2 --task-spec " + spec + " --test-file " + data, "give --task (a built-in task) or --task-spec"},
      {" --dev-file " + data, "--train-file, --dev-file and --test-file need --task-spec FILE"},
      {" --task sst2 --test-file " + data, "go with --task-spec, not --task"},
      {" --task-spec " + spec, "--task-spec with --split dev needs --dev-file FILE"},
      {" --task-spec " + spec + " --dev-file " + data + " --split test", "--split test needs --test-file FILE"},
      {" --task-spec " + spec + " --test-file " + data + " --mode icl --shots 1", "needs --train-file FILE"},
  };
  for (const auto& [args, says] : cases) {
    std::string out;
    EXPECT_EQ(run_command(kSmezo + " eval" + args, &out), 1) << args << "\n" << out;
    EXPECT_THAT(out, HasSubstr(says)) << args;
    EXPECT_TRUE(smezo_test::is_one_line_output(out)) << args;
  }
}

// A checkpoint whose run's spec is gone: the error names the file and the option to give.
TEST_F(EvalFiles, MissingRunSpecNamesTheOption) {
  const std::string spec = put("s.json", R"({"name": "s", "prompt": "{t}", "candidates": [" a", " b"],
      "label": {"field": "l"}})");
  const std::string data = put("d.jsonl", "{\"t\": \"x y\", \"l\": 1}\n{\"t\": \"y\", \"l\": 0}\n");
  std::string out;
  ASSERT_EQ(run_command(kSmezo + " train --task-spec " + spec + " --train-file " + data + " --test-file " + data +
                        " --steps 1 --batch 2 --max-len 16 --lr 1e-3 --progress-every 1000 --out " + dir_ + "/run",
                        &out), 0) << out;
  ASSERT_EQ(run_command(kSmezo + " eval --model " + dir_ + "/run/checkpoint", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("s test (2 examples, zero-shot): accuracy "));
  std::filesystem::remove(spec);
  EXPECT_EQ(run_command(kSmezo + " eval --model " + dir_ + "/run/checkpoint", &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("eval: the run's --task-spec " + std::filesystem::absolute(spec).string()));
  EXPECT_THAT(out, HasSubstr("give --task-spec FILE"));
  EXPECT_TRUE(smezo_test::is_one_line_output(out)) << out;
  // --task on the same checkpoint evaluates the built-in task instead
  ASSERT_EQ(run_command(kSmezo + " eval --model " + dir_ + "/run/checkpoint --task sst2 --test-examples 4", &out), 0)
      << out;
  EXPECT_THAT(out, HasSubstr("sst2 test (4 examples"));
}

TEST(EvalFilesHelp, HelpDocumentsTheFileOptions) {
  std::string out;
  ASSERT_EQ(run_command(kSmezo + " eval --help", &out), 0) << out;
  for (const char* opt : {"--task-spec", "--train-file", "--dev-file", "--test-file", "exact match and F1"})
    EXPECT_THAT(out, HasSubstr(opt));
}
