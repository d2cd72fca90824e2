// The smezo binary end to end: the golden stories260K greedy output and one-line errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/assets.h"
#include "test_util.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"
#endif

using smezo_test::read_file;
using smezo_test::run_command;

namespace {

const std::string kSmezo = smezo_test::smezo_binary();

}  // namespace

// llama2.c's run.c with -t 0 -n 200 prints exactly this for stories260K.
void expect_golden_greedy(const std::string& device_args) {
  std::string out;
  // stdout only (a slow load prints progress on stderr): run_command adds 2>&1 outside the ()
  std::string cmd = "(" + std::string(kSmezo) + " generate --model " + smezo::asset_path("models/stories260K.bin") +
                    " --tokenizer " + smezo::asset_path("tokenizers/tinystories-512.model") +
                    " --temperature 0 --steps 200" + device_args + " 2>/dev/null)";
  ASSERT_EQ(run_command(cmd, &out), 0) << out;
  EXPECT_EQ(out, read_file(smezo::asset_path("models/stories260K.greedy200.txt")));
}

TEST(Cli, GoldenGreedyStories260K) { expect_golden_greedy(""); }

// The same through the CUDA backend (fp32): on a GPU, or on the emulated one (make emu-test).
TEST(Cli, GoldenGreedyStories260KOnCuda) {
#ifdef SMEZO_WITH_CUDA
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  expect_golden_greedy(" --device cuda --dtype f32");
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

TEST(Cli, InfoPrintsParameterCount) {
  std::string out;
  ASSERT_EQ(run_command(std::string(kSmezo) + " info", &out), 0) << out;
  EXPECT_THAT(out, testing::HasSubstr("parameters   260032"));
  EXPECT_THAT(out, testing::HasSubstr("model.layers.4.mlp.down_proj.weight"));
}

TEST(Cli, ErrorsAreOneLineAndNonZero) {
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"generate --model no/such.bin", "no/such.bin"},
      {"generate --tokenizer " + smezo::asset_path("tokenizers/llama2.model"), "has 32000 tokens but model"},
      {"generate --stepz 3", "unknown option --stepz"},
      {"info no/such/dir", "no/such/dir"},
      {"frobnicate", "unknown command"},
      {"train -steps 5", "unexpected argument '-steps'"},
      {"logits --tokens 1,4294967298 --out build/x.safetensors", "'4294967298' is not a token id"},
  };
  for (const Case& c : cases) {
    std::string out;
    int rc = run_command(std::string(kSmezo) + " " + c.args, &out);
    EXPECT_NE(rc, 0) << c.args;
    EXPECT_THAT(out, testing::HasSubstr(c.expect)) << c.args;
    EXPECT_THAT(out, testing::StartsWith("smezo: error: ")) << c.args;
    EXPECT_TRUE(smezo_test::is_one_line_output(out)) << c.args;
  }
}

// A Hugging Face directory whose tensor disagrees with its config.json: the error names the
// tensor, the file and both shapes.
TEST(Cli, ShapeDisagreeingWithConfigJsonIsNamed) {
  std::string dir = smezo_test::make_temp_dir("cli_shape"), out;
  ASSERT_EQ(run_command(std::string(kSmezo) + " replay " + smezo::asset_path("models/stories260K.bin") + " " + dir +
                            "/none.txt --out " + dir + "/hf", &out),
            1);  // no seed log: a clear error, nothing written
  EXPECT_THAT(out, testing::HasSubstr("none.txt"));
  // export the model (empty seed log), then claim a different MLP width in config.json
  smezo_test::write_file(dir + "/log.txt", "# smezo seed log v1\n# {\"spsa\":{\"method\":\"mezo\",\"sparsity\":0.0,"
                         "\"eps\":0.001,\"lr\":1e-06,\"lr_schedule\":\"constant\",\"total_steps\":1,"
                         "\"weight_decay\":0.0,\"seed\":42,\"freeze\":{\"embeddings\":false,\"norms\":false,"
                         "\"biases\":false},\"thresholds_f32_bits\":{}}}\n");
  ASSERT_EQ(run_command(std::string(kSmezo) + " replay " + smezo::asset_path("models/stories260K.bin") + " " + dir +
                            "/log.txt --out " + dir + "/hf", &out), 0) << out;
  std::string config = read_file(dir + "/hf/config.json");
  size_t at = config.find("\"intermediate_size\": 172");
  ASSERT_NE(at, std::string::npos) << config;
  config.replace(at, std::string("\"intermediate_size\": 172").size(), "\"intermediate_size\": 176");
  smezo_test::write_file(dir + "/hf/config.json", config);
  ASSERT_NE(run_command(std::string(kSmezo) + " generate --steps 5 --model " + dir + "/hf", &out), 0);
  EXPECT_THAT(out, testing::HasSubstr("tensor model.layers.0.mlp.gate_proj.weight in " + dir + "/hf/model.safetensors "
                                      "has shape [172, 64], the model config says [176, 64]"));
}

// Updates round to the storage dtype: a bf16 run cannot be replayed with fp32 weights.
TEST(Cli, ReplayRefusesAnotherStorageDtype) {
  std::string dir = smezo_test::make_temp_dir("cli_dtype"), out;
  smezo_test::write_file(dir + "/log.txt", "# smezo seed log v1\n# {\"storage_dtype\":\"BF16\",\"device\":\"cpu\","
                         "\"spsa\":{\"method\":\"mezo\",\"sparsity\":0.0,\"eps\":0.001,\"lr\":1e-06,"
                         "\"lr_schedule\":\"constant\",\"total_steps\":1,\"weight_decay\":0.0,\"seed\":42,"
                         "\"freeze\":{\"embeddings\":false,\"norms\":false,\"biases\":false},"
                         "\"thresholds_f32_bits\":{}}}\n");
  ASSERT_NE(run_command(std::string(kSmezo) + " replay " + smezo::asset_path("models/stories260K.bin") + " " + dir +
                            "/log.txt --out " + dir + "/hf", &out), 0);
  EXPECT_THAT(out, testing::HasSubstr("stored weights as BF16, this replay as F32"));
}

// replay --out never deletes a directory that holds anything but a checkpoint.
TEST(Cli, ReplayRefusesToReplaceAnOrdinaryDirectory) {
  std::string dir = smezo_test::make_temp_dir("cli_out"), out;
  smezo_test::write_file(dir + "/log.txt", "# smezo seed log v1\n# {\"spsa\":{\"method\":\"mezo\",\"sparsity\":0.0,"
                         "\"eps\":0.001,\"lr\":1e-06,\"lr_schedule\":\"constant\",\"total_steps\":1,"
                         "\"weight_decay\":0.0,\"seed\":42,\"freeze\":{\"embeddings\":false,\"norms\":false,"
                         "\"biases\":false},\"thresholds_f32_bits\":{}}}\n");
  smezo_test::write_file(dir + "/notes.txt", "precious");
  ASSERT_NE(run_command(std::string(kSmezo) + " replay " + smezo::asset_path("models/stories260K.bin") + " " + dir +
                            "/log.txt --out " + dir, &out), 0);
  EXPECT_THAT(out, testing::HasSubstr("refusing to replace"));
  EXPECT_EQ(read_file(dir + "/notes.txt"), "precious");
  EXPECT_EQ(read_file(dir + "/log.txt").substr(0, 19), "# smezo seed log v1");
  // replacing an earlier checkpoint is fine
  ASSERT_EQ(run_command(std::string(kSmezo) + " replay " + smezo::asset_path("models/stories260K.bin") + " " + dir +
                            "/log.txt --out " + dir + "/ckpt", &out), 0) << out;
  ASSERT_EQ(run_command(std::string(kSmezo) + " replay " + smezo::asset_path("models/stories260K.bin") + " " + dir +
                            "/log.txt --out " + dir + "/ckpt", &out), 0) << out;
}
