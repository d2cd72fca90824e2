// Every output a command writes, given a path whose folders do not exist yet: the folders are
// created (as `mkdir -p`), for files and run/checkpoint folders alike, and the command succeeds.
// A path that cannot be created (a file where a folder should be) is refused before any work,
// naming the option. (A new user's first command wrote into runs/, which a fresh clone lacks.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "setup/model_setup.h"
#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::run_command;
using testing::HasSubstr;

namespace fs = std::filesystem;

namespace {

const std::string kSmezo = smezo_test::smezo_binary();
// A tiny bundled-model run: 2 examples per step, few evaluation examples.
const std::string kTinyTrain = " train --task sst2 --batch 2 --max-len 40 --steps 2 --eval-every 2 "
                               "--dev-examples 2 --test-examples 2";
const std::string kTinyEval = " eval --task sst2 --mode zero-shot --split dev --dev-examples 2 --max-len 40";

// Runs `args` with `path` (under folders that do not exist) and expects it written.
void expect_writes_under_new_folders(const std::string& args, const std::string& path) {
  ASSERT_FALSE(fs::exists(fs::path(path).parent_path())) << path;
  std::string out;
  ASSERT_EQ(run_command(kSmezo + args, &out), 0) << args << "\n" << out;
  EXPECT_TRUE(fs::exists(path)) << args << " did not write " << path << "\n" << out;
}

}  // namespace

TEST(OutputPaths, FileOptionsCreateTheirFolders) {
  const std::string dir = make_temp_dir("outfiles");
  expect_writes_under_new_folders(kTinyEval + " --out " + dir + "/a/b/eval.json", dir + "/a/b/eval.json");
  expect_writes_under_new_folders(kTinyEval + " --examples-out " + dir + "/c/d/examples.jsonl",
                                  dir + "/c/d/examples.jsonl");
  expect_writes_under_new_folders(" logits --tokens 1,2,3 --out " + dir + "/e/f/logits.safetensors",
                                  dir + "/e/f/logits.safetensors");
  // --json of --shape (also --kernel's: the same call, before either runs)
  expect_writes_under_new_folders(" bench --shape tiny --device cpu --seq 8 --batch 2 --reps 1 --warmup 0 --json " +
                                      dir + "/g/h/bench.jsonl",
                                  dir + "/g/h/bench.jsonl");
  EXPECT_THAT(smezo_test::read_file(dir + "/g/h/bench.jsonl"), HasSubstr("\"phase\":\"smezo-step\""));
}

TEST(OutputPaths, FolderOptionsCreateTheirFolders) {
  const std::string dir = make_temp_dir("outdirs");
  const std::string run = dir + "/runs/x/run";
  expect_writes_under_new_folders(kTinyTrain + " --out " + run, run + "/summary.json");
  expect_writes_under_new_folders(kTinyTrain + " --export-data " + dir + "/data/x/exported",
                                  dir + "/data/x/exported/train.jsonl");
  expect_writes_under_new_folders(" convert --out " + dir + "/conv/x/hf", dir + "/conv/x/hf/config.json");
  expect_writes_under_new_folders(" replay " + smezo::default_model_path() + " " + run + "/seed_log.txt --out " +
                                      dir + "/replay/x/ckpt",
                                  dir + "/replay/x/ckpt/config.json");
  const std::string lora = dir + "/lora";
  std::string out;
  ASSERT_EQ(run_command(kSmezo + kTinyTrain + " --tune lora --lora-r 2 --out " + lora, &out), 0) << out;
  expect_writes_under_new_folders(" merge --adapter " + lora + "/checkpoint --out " + dir + "/merged/x/ckpt",
                                  dir + "/merged/x/ckpt/config.json");
}

// Where a folder cannot be made, the refusal names the option and comes before any work.
TEST(OutputPaths, AFileInTheWayIsRefusedFirst) {
  const std::string dir = make_temp_dir("outblocked");
  smezo_test::write_file(dir + "/file", "x");
  for (const std::string& args : {kTinyEval + " --out " + dir + "/file/sub/eval.json",
                                  kTinyEval + " --examples-out " + dir + "/file/sub/examples.jsonl",
                                  std::string(" logits --tokens 1,2 --out ") + dir + "/file/sub/l.safetensors"}) {
    std::string out;
    EXPECT_EQ(run_command(kSmezo + args, &out), 1) << args << "\n" << out;
    EXPECT_THAT(out, HasSubstr("smezo: error: cannot create the folder of --"));
    EXPECT_THAT(out, HasSubstr(dir + "/file/sub"));
    EXPECT_TRUE(smezo_test::is_one_line_output(out)) << out;
  }
}
