// The smezo binary end to end: the golden stories260K greedy output and one-line errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/assets.h"
#include "test_util.h"

using smezo_test::read_file;
using smezo_test::run_command;

namespace {

const char* kSmezo = "./build/smezo";

}  // namespace

// llama2.c's run.c with -t 0 -n 200 prints exactly this for stories260K.
TEST(Cli, GoldenGreedyStories260K) {
  std::string out;
  std::string cmd = std::string(kSmezo) + " generate --model " + smezo::asset_path("models/stories260K.bin") +
                    " --tokenizer " + smezo::asset_path("tokenizers/tinystories-512.model") +
                    " --temperature 0 --steps 200 2>/dev/null";
  ASSERT_EQ(run_command(cmd, &out), 0) << out;
  EXPECT_EQ(out, read_file(smezo::asset_path("models/stories260K.greedy200.txt")));
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
  };
  for (const Case& c : cases) {
    std::string out;
    int rc = run_command(std::string(kSmezo) + " " + c.args, &out);
    EXPECT_NE(rc, 0) << c.args;
    EXPECT_THAT(out, testing::HasSubstr(c.expect)) << c.args;
    EXPECT_THAT(out, testing::StartsWith("smezo: error: ")) << c.args;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << c.args << ": " << out;
  }
}
