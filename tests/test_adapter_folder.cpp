// --adapter DIR on smezo eval / generate / logits (train/adapter_folder.h), end to end through
// the smezo binary on the bundled stories260K: a --tune prefix or --tune lora run's checkpoint
// scores exactly the run's final dev accuracy (same examples from its smezo_run.json, same
// numbers: the CPU is deterministic); a LoRA adapter scores as its merged model does; a prefix
// adapter changes the generated text and the logits, reproducibly; the folders smezo cannot
// apply fail with one line each. The CUDA case runs the prefix adapter on the device (f32
// storage, so that only the summation order differs from the CPU) and expects the CPU's
// accuracy.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "test_util.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"
#endif

using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::read_json;
using smezo_test::run_command;
using testing::HasSubstr;

namespace {

// 8 steps of sst2 with a dev evaluation of 32 examples at the end; the run folder.
std::string train_run(const std::string& dir, const std::string& tune_args) {
  std::string out;
  const std::string run = dir + "/run";
  EXPECT_EQ(run_command(smezo_test::smezo_binary() + " train --task sst2 --batch 2 --max-len 40 --eval-every 0"
                        " --dev-examples 32 --skip-test --progress-every 1000 --steps 8 --lr 5e-2 --eps 1e-2 " +
                        tune_args + " --out " + run, &out), 0) << out;
  return run;
}

// `smezo eval ARGS --split dev --out FILE`'s result.
nlohmann::json eval_dev(const std::string& args, const std::string& out_file) {
  std::string out;
  EXPECT_EQ(run_command(smezo_test::smezo_binary() + " eval " + args + " --split dev --out " + out_file, &out), 0)
      << out;
  return read_json(out_file);
}

// The per-example candidate scores an --examples-out file holds (its header line skipped).
std::vector<std::vector<double>> example_scores(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<std::vector<double>> scores;
  while (std::getline(in, line)) scores.push_back(nlohmann::json::parse(line)["scores"]);
  return scores;
}

std::vector<float> logits_in(const std::string& path) {
  const smezo::SafetensorsFile file(path);
  const smezo::HostTensorView& v = file.tensor("logits");
  std::vector<float> values(static_cast<size_t>(v.numel()));
  v.read_f32(values.data());
  return values;
}

// A copy of an adapter folder with its adapter_config.json edited by `edit`.
std::string edited_copy(const std::string& adapter, const std::string& to,
                        const std::function<void(nlohmann::json&)>& edit) {
  std::filesystem::copy(adapter, to, std::filesystem::copy_options::recursive);
  nlohmann::json config = read_json(to + "/adapter_config.json");
  edit(config);
  smezo_test::write_file(to + "/adapter_config.json", config.dump(2));
  return to;
}

// The one line a failing command prints; the test fails when it succeeds.
std::string error_line(const std::string& args) {
  std::string out;
  EXPECT_NE(run_command(smezo_test::smezo_binary() + " " + args, &out), 0) << out;
  EXPECT_TRUE(smezo_test::is_one_line_output(out)) << out;
  return out;
}

}  // namespace

TEST(AdapterEval, PrefixCheckpointScoresTheRunsDevAccuracy) {
  const std::string dir = make_temp_dir("adapter_prefix");
  const std::string run = train_run(dir, "--tune prefix --prefix-tokens 3");
  const nlohmann::json summary = read_json(run + "/summary.json");
  ASSERT_TRUE(summary["final_dev_acc"].is_number()) << summary.dump();
  const nlohmann::json got = eval_dev("--adapter " + run + "/checkpoint --examples-out " + dir + "/adapted.jsonl",
                                      dir + "/eval.json");
  EXPECT_EQ(got["accuracy"].get<double>(), summary["final_dev_acc"].get<double>());
  EXPECT_EQ(got["examples"], 32) << "the run's --dev-examples, from its smezo_run.json";
  EXPECT_EQ(got["adapter"], run + "/checkpoint");
  // the prefix was applied: the base model scores the same examples otherwise
  eval_dev("--max-len 40 --dev-examples 32 --examples-out " + dir + "/base.jsonl", dir + "/base.json");
  const auto adapted = example_scores(dir + "/adapted.jsonl"), base = example_scores(dir + "/base.jsonl");
  ASSERT_EQ(adapted.size(), 32u);
  ASSERT_EQ(base.size(), 32u);
  EXPECT_NE(adapted, base);
}

TEST(AdapterEval, LoraCheckpointScoresTheRunsDevAccuracyAndTheMergedModels) {
  const std::string dir = make_temp_dir("adapter_lora");
  const std::string run = train_run(dir, "--tune lora --lora-r 4 --lora-alpha 8 --lora-targets q,v,down");
  const nlohmann::json summary = read_json(run + "/summary.json");
  const nlohmann::json got = eval_dev("--adapter " + run + "/checkpoint --examples-out " + dir + "/adapted.jsonl",
                                      dir + "/eval.json");
  EXPECT_EQ(got["accuracy"].get<double>(), summary["final_dev_acc"].get<double>());
  EXPECT_EQ(got["examples"], 32);
  std::string out;
  ASSERT_EQ(run_command(smezo_test::smezo_binary() + " merge --adapter " + run + "/checkpoint --out " + dir +
                            "/merged", &out), 0) << out;
  // the merged folder has no smezo_run.json: the run's settings by hand
  const nlohmann::json merged = eval_dev("--model " + dir + "/merged --max-len 40 --dev-examples 32 --examples-out " +
                                         dir + "/merged.jsonl", dir + "/merged.json");
  EXPECT_EQ(merged["accuracy"].get<double>(), got["accuracy"].get<double>());
  // per candidate: the merge's tolerance (test_lora.cpp: the same sums rounded in another order)
  const auto a = example_scores(dir + "/adapted.jsonl"), m = example_scores(dir + "/merged.jsonl");
  ASSERT_EQ(a.size(), m.size());
  for (size_t e = 0; e < a.size(); e++)
    for (size_t c = 0; c < a[e].size(); c++) EXPECT_NEAR(a[e][c], m[e][c], 1e-4 * std::fabs(m[e][c])) << e;
}

TEST(AdapterGenerate, PrefixChangesTextAndLogitsReproducibly) {
  const std::string dir = make_temp_dir("adapter_generate");
  const std::string run = train_run(dir, "--tune prefix --prefix-tokens 4");
  const std::string smezo = smezo_test::smezo_binary(), adapter = " --adapter " + run + "/checkpoint";
  std::string base_text, adapted_text, out;
  ASSERT_EQ(run_command(smezo + " generate --steps 60", &base_text), 0) << base_text;
  ASSERT_EQ(run_command(smezo + " generate --steps 60" + adapter, &adapted_text), 0) << adapted_text;
  EXPECT_NE(adapted_text, base_text);
  const std::string tokens = " --tokens 1,403,72,9,300,17,88,250";
  ASSERT_EQ(run_command(smezo + " logits" + tokens + " --out " + dir + "/base.st", &out), 0) << out;
  ASSERT_EQ(run_command(smezo + " logits" + tokens + adapter + " --out " + dir + "/a.st", &out), 0) << out;
  ASSERT_EQ(run_command(smezo + " logits" + tokens + adapter + " --out " + dir + "/b.st", &out), 0) << out;
  EXPECT_EQ(read_file(dir + "/a.st"), read_file(dir + "/b.st")) << "the same adapter, the same bytes";
  EXPECT_NE(logits_in(dir + "/a.st"), logits_in(dir + "/base.st"));
}

TEST(AdapterErrors, EachFolderSmezoCannotApplyIsOneClearLine) {
  const std::string dir = make_temp_dir("adapter_errors");
  const std::string run = train_run(dir, "--tune prefix --prefix-tokens 3"), adapter = run + "/checkpoint";
  const std::string logits = "logits --tokens 1,2,3 --out " + dir + "/x.st";

  const std::string ia3 = edited_copy(adapter, dir + "/ia3", [](nlohmann::json& j) { j["peft_type"] = "IA3"; });
  std::string err = error_line("eval --split dev --adapter " + ia3);
  EXPECT_THAT(err, HasSubstr(ia3 + "/adapter_config.json: peft_type \"IA3\""));
  EXPECT_THAT(err, HasSubstr("LORA and PREFIX_TUNING"));

  err = error_line(logits + " --model " + adapter);
  EXPECT_THAT(err, HasSubstr("is an adapter folder"));
  EXPECT_THAT(err, HasSubstr("--adapter " + adapter));

  // a prefix made for a model of 6 layers (stories260K has 5): the config and tensor agree
  const std::string six = edited_copy(adapter, dir + "/six", [](nlohmann::json& j) { j["num_layers"] = 6; });
  const nlohmann::json config = read_json(six + "/adapter_config.json");
  const int64_t P = config["num_virtual_tokens"], width = 6 * 2 * config["token_dim"].get<int64_t>();
  const std::vector<float> zeros(static_cast<size_t>(P * width));
  smezo::write_safetensors(six + "/adapter_model.safetensors",
                           {smezo::SafetensorsEntry{"prompt_embeddings", smezo::DTYPE_F32, {P, width}, zeros.data()}},
                           {{"format", "pt"}});
  err = error_line(logits + " --adapter " + six);
  EXPECT_THAT(err, HasSubstr("--adapter " + six + " does not fit this model"));
  EXPECT_THAT(err, HasSubstr("for 6 layers"));

  // a PEFT-made folder (no smezo_run.json) whose base is a Hub id
  const std::string elsewhere =
      edited_copy(adapter, dir + "/elsewhere", [](nlohmann::json& j) { j["base_model_name_or_path"] = "org/nowhere"; });
  std::filesystem::remove(elsewhere + "/smezo_run.json");
  err = error_line(logits + " --adapter " + elsewhere);
  EXPECT_THAT(err, HasSubstr("the adapter's base model org/nowhere (base_model_name_or_path in"));
  EXPECT_THAT(err, HasSubstr("pass --model PATH"));
}

// The prefix adapter of a CPU run on the CUDA backend: the CPU's dev accuracy.
TEST(AdapterEvalCuda, PrefixOnTheDeviceGivesTheCpusAccuracy) {
#ifdef SMEZO_WITH_CUDA
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const std::string dir = make_temp_dir("adapter_cuda");
  const std::string run = train_run(dir, "--tune prefix --prefix-tokens 3");
  const nlohmann::json cpu = eval_dev("--adapter " + run + "/checkpoint", dir + "/cpu.json");
  const nlohmann::json cuda = eval_dev("--adapter " + run + "/checkpoint --device cuda --dtype f32", dir + "/cuda.json");
  EXPECT_EQ(cuda["accuracy"].get<double>(), cpu["accuracy"].get<double>());
  EXPECT_EQ(cuda["accuracy"].get<double>(), read_json(run + "/summary.json")["final_dev_acc"].get<double>());
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}
