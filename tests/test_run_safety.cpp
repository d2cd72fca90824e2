// Runs never lose a result: resuming a finished run changes nothing, a run killed
// before its seed log existed resumes from step 1, leftovers of interrupted writes are
// removed, summary.json is written before the final checkpoint and a failed checkpoint is a
// warning, `eval --out` is checked before evaluating, and replay needs no tokenizer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "run/run_dir.h"
#include "run/seed_log.h"
#include "run/summary.h"
#include "setup/model_setup.h"
#include "smezo/train.h"
#include "test_util.h"
#include "train/checkpoint.h"

using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::read_json;
using smezo_test::run_command;
using testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

const std::string kSmezo = smezo_test::smezo_binary();
// A tiny run: 2 examples per step, short candidates, a few dev and test examples.
const std::string kTiny = " train --task sst2 --batch 2 --max-len 40 --lr 2e-3 --flush-every 2 --eval-every 0"
                          " --dev-examples 4 --test-examples 4 --progress-every 1000";

// Every file under dir (relative path -> bytes).
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = read_file(e.path().string());
  return files;
}

// A pid that belonged to a process which has ended (for stale "<file>.tmp.<pid>" names).
std::string dead_pid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return std::to_string(pid);
}

// Replaces the checkpoint free-space query for one scope.
struct FakeFreeSpace {
  explicit FakeFreeSpace(smezo::FreeSpaceQuery q) : previous(smezo::checkpoint_set_free_space_query(std::move(q))) {}
  ~FakeFreeSpace() { smezo::checkpoint_set_free_space_query(previous); }
  smezo::FreeSpaceQuery previous;
};

smezo::TrainOptions tiny_options(const std::string& out_dir) {
  smezo::TrainOptions o;
  o.task = "sst2";
  o.n_train = 16;
  o.n_dev = 4;
  o.n_test = 4;
  o.max_len = 40;
  o.batch = 2;
  o.steps = 6;
  o.eval_every = 0;
  o.flush_every = 2;
  o.progress_every = 1000;
  o.out_dir = out_dir;
  o.spsa.lr = 2e-3f;
  return o;
}

}  // namespace

// --resume on a finished run leaves every file byte for byte as it was and says so.
TEST(RunSafety, ResumeOfAFinishedRunChangesNothing) {
  const std::string dir = make_temp_dir("finished");
  const std::string cmd = kSmezo + kTiny + " --steps 3 --out " + dir + "/run";
  std::string out;
  ASSERT_EQ(run_command(cmd, &out), 0) << out;
  const auto before = snapshot(dir + "/run");
  ASSERT_TRUE(before.count("summary.json") && before.count("checkpoint/model.safetensors"));
  ASSERT_EQ(run_command(cmd + " --resume", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("run already finished at step 3"));
  EXPECT_THAT(out, testing::Not(HasSubstr("nan")));
  EXPECT_EQ(snapshot(dir + "/run"), before);
}

// A run killed before its seed log existed leaves an empty folder (or none, or leftovers of the
// seed log's atomic write): --resume starts it at step 1 and ends where an uninterrupted run ends.
TEST(RunSafety, ResumeBeforeTheFirstLogStartsAtStepOne) {
  const std::string dir = make_temp_dir("early");
  const std::string cmd = kSmezo + kTiny + " --steps 4 --checkpoint-every 2";
  std::string out;
  ASSERT_EQ(run_command(cmd + " --out " + dir + "/straight", &out), 0) << out;
  fs::create_directories(dir + "/killed/checkpoint.tmp");
  smezo_test::write_file(dir + "/killed/seed_log.txt.tmp." + dead_pid(), "# smezo seed log v1\n");
  ASSERT_EQ(run_command(cmd + " --out " + dir + "/killed --resume", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("resume: nothing is logged in " + dir + "/killed yet"));
  EXPECT_THAT(out, HasSubstr("removed what an interrupted write left in " + dir + "/killed: "));
  EXPECT_EQ(read_file(dir + "/killed/seed_log.txt"), read_file(dir + "/straight/seed_log.txt"));
  EXPECT_EQ(read_file(dir + "/killed/checkpoint/model.safetensors"),
            read_file(dir + "/straight/checkpoint/model.safetensors"));
  for (const auto& e : fs::directory_iterator(dir + "/killed"))
    EXPECT_FALSE(smezo::run_dir_is_temporary(e.path().filename().string())) << e.path();
  // no folder at all: the same
  ASSERT_EQ(run_command(cmd + " --out " + dir + "/never --resume", &out), 0) << out;
  EXPECT_EQ(read_file(dir + "/never/seed_log.txt"), read_file(dir + "/straight/seed_log.txt"));
}

// --resume refuses a folder that is not a run's and touches nothing in it; a new run may use
// such a folder (tools/claim/zo_grid.py puts its run.log there first) and leaves its files alone.
TEST(RunSafety, ResumeRefusesAFolderThatIsNotARun) {
  const std::string dir = make_temp_dir("foreign");
  fs::create_directories(dir + "/run");
  smezo_test::write_file(dir + "/run/notes.txt", "mine");
  smezo_test::write_file(dir + "/run/draft.tmp", "mine too");
  std::string out;
  EXPECT_EQ(run_command(kSmezo + kTiny + " --steps 2 --resume --out " + dir + "/run", &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("--resume: " + dir + "/run is not a smezo run folder: it holds "));
  EXPECT_THAT(out, HasSubstr(" and no seed_log.txt"));
  EXPECT_TRUE(smezo_test::is_one_line_output(out));
  EXPECT_EQ(snapshot(dir + "/run"),
            (std::map<std::string, std::string>{{"draft.tmp", "mine too"}, {"notes.txt", "mine"}}));
  ASSERT_EQ(run_command(kSmezo + kTiny + " --steps 2 --out " + dir + "/run", &out), 0) << out;
  EXPECT_EQ(read_file(dir + "/run/notes.txt"), "mine");
  EXPECT_EQ(read_file(dir + "/run/draft.tmp"), "mine too");
}

// --resume with options other than the run's is refused before anything is written, with
// every differing option named once, with both values, on one line.
TEST(RunSafety, ResumeWithOtherOptionsNamesEveryDifference) {
  const std::string dir = make_temp_dir("resume_other");
  const std::string cmd = kSmezo + " train --task sst2 --lr 2e-3 --flush-every 2 --eval-every 0 --dev-examples 4"
                          " --test-examples 4 --progress-every 1000 --steps 2 --out " + dir + "/run";
  std::string out;
  ASSERT_EQ(run_command(cmd + " --batch 2 --max-len 40", &out), 0) << out;
  const auto before = snapshot(dir + "/run");
  // one option: named with both values
  EXPECT_EQ(run_command(cmd + " --resume --batch 4 --max-len 40", &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("smezo: error: " + dir + "/run/seed_log.txt: this command differs from the run in 1 "
                             "option: batch = 2 in the run, 4 here ---> HINT: resume with the options of the "
                             "original run"));
  EXPECT_TRUE(smezo_test::is_one_line_output(out));
  // five options (--seed sets the data seed too), two of them the optimiser's: all in one message
  EXPECT_EQ(run_command(cmd + " --resume --batch 4 --max-len 48 --seed 9 --eps 0.01", &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("this command differs from the run in 5 options: "));
  EXPECT_THAT(out, HasSubstr("batch = 2 in the run, 4 here"));
  EXPECT_THAT(out, HasSubstr("max_len = 40 in the run, 48 here"));
  EXPECT_THAT(out, testing::ContainsRegex("; seed = [0-9]+ in the run, 9 here"));
  EXPECT_THAT(out, testing::ContainsRegex("data_seed = [0-9]+ in the run, 9 here"));
  EXPECT_THAT(out, testing::ContainsRegex("eps = [0-9.e-]+ in the run, 0\\.01?[0-9]* here"));
  EXPECT_TRUE(smezo_test::is_one_line_output(out));
  EXPECT_EQ(snapshot(dir + "/run"), before);
  // the run's own options still resume it (finished: nothing to do)
  EXPECT_EQ(run_command(cmd + " --resume --batch 2 --max-len 40", &out), 0) << out;
  EXPECT_EQ(snapshot(dir + "/run"), before);
}

// A new run into a folder that already holds one is refused, with a hint, and the run stays.
TEST(RunSafety, NewRunIntoARunFolderIsRefused) {
  const std::string dir = make_temp_dir("run_twice");
  const std::string cmd = kSmezo + kTiny + " --steps 2 --out " + dir + "/run";
  std::string out;
  ASSERT_EQ(run_command(cmd, &out), 0) << out;
  const auto before = snapshot(dir + "/run");
  for (const std::string& other : {std::string(), std::string(" --seed 3")}) {
    EXPECT_EQ(run_command(cmd + other, &out), 1) << out;
    EXPECT_THAT(out, HasSubstr("smezo: error: " + dir + "/run already holds a run ---> HINT: pass --resume to "
                               "continue it, or choose another --out"));
    EXPECT_TRUE(smezo_test::is_one_line_output(out));
    EXPECT_EQ(snapshot(dir + "/run"), before);
  }
}

// Leftovers of interrupted writes go on the next start; a kill between the two renames of a
// checkpoint swap leaves checkpoint.old, which is put back.
TEST(RunSafety, LeftoversAreRemovedOnTheNextStart) {
  const std::string dir = make_temp_dir("leftovers");
  const std::string cmd = kSmezo + kTiny + " --steps 3 --out " + dir + "/run";
  std::string out;
  ASSERT_EQ(run_command(cmd, &out), 0) << out;
  const auto before = snapshot(dir + "/run");
  const std::string pid = dead_pid();
  fs::rename(dir + "/run/checkpoint", dir + "/run/checkpoint.old");
  fs::create_directories(dir + "/run/checkpoint.tmp");
  smezo_test::write_file(dir + "/run/checkpoint.tmp/model.safetensors.tmp", "half");
  smezo_test::write_file(dir + "/run/summary.json.tmp." + pid, "{");
  smezo_test::write_file(dir + "/run/seed_log.txt.tmp." + pid, "#");
  smezo_test::write_file(dir + "/run/metrics.jsonl.tmp." + pid, "");
  ASSERT_EQ(run_command(cmd + " --resume", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("checkpoint.old (restored as checkpoint)"));
  EXPECT_THAT(out, HasSubstr("summary.json.tmp." + pid));
  EXPECT_THAT(out, HasSubstr("run already finished at step 3"));
  EXPECT_EQ(snapshot(dir + "/run"), before);
}

// A failed write removes its temporary file or folder at once.
TEST(RunSafety, AFailedCheckpointLeavesNoTemporaryFolder) {
  const std::string dir = make_temp_dir("ckptfail");
  smezo::LoadedModel lm = smezo::open_model_paths(smezo::default_model_path(), "", smezo::DEVICE_CPU, 1, 1);
  lm.model->params()[2]->w.f32()[7] = NAN;
  EXPECT_THROW_MSG(smezo::save_hf_checkpoint(*lm.model, dir + "/ckpt", lm.tokenizer_path),
                   "not writing checkpoint " + dir + "/ckpt: tensor model.layers.0.self_attn.q_proj.weight holds a "
                   "non-finite value (nan at index 7); the previous checkpoint is kept");
  EXPECT_FALSE(fs::exists(dir + "/ckpt.tmp"));
  EXPECT_FALSE(fs::exists(dir + "/ckpt"));
  // an unwritable target (a file where the folder should be) fails before writing anything
  smezo_test::write_file(dir + "/file", "x");
  EXPECT_THAT([&] { smezo::run_prepare_output_file(dir + "/file/e.json", "--out"); },
              testing::ThrowsMessage<smezo::Error>(HasSubstr("cannot write --out " + dir + "/file/e.json")));
}

// summary.json (with the test accuracy) is written before the final checkpoint; a checkpoint
// that cannot be written (here: too little disk) is a warning that keeps the summary, the
// seed log and the previous checkpoint; --resume later writes the missing one.
TEST(RunSafety, AFailedFinalCheckpointKeepsTheResult) {
  const std::string dir = make_temp_dir("diskfull");
  smezo::TrainOptions o = tiny_options(dir + "/run");
  o.checkpoint_every = 2;
  smezo::TrainResult r;
  {
    int calls = 0;  // checkpoints of steps 2 and 4 fit, the final one does not
    FakeFreeSpace fake([&](const std::string&) -> int64_t { return ++calls <= 2 ? (int64_t)1 << 40 : 1000; });
    r = smezo::train(o);
    EXPECT_EQ(calls, 3);
  }
  EXPECT_THAT(r.checkpoint_error, HasSubstr("not writing checkpoint " + o.out_dir + "/checkpoint: it needs "));
  EXPECT_THAT(r.checkpoint_error, HasSubstr("the disk has 1000 bytes (1.00 KB) free; the previous checkpoint is kept"));
  const nlohmann::json s = read_json(o.out_dir + "/summary.json");
  EXPECT_EQ(s["status"], "completed");
  EXPECT_TRUE(s["test_acc"].is_number()) << s.dump();
  EXPECT_EQ(s["checkpoint"]["status"], "failed: " + r.checkpoint_error);
  EXPECT_EQ(smezo::seed_log_read(o.out_dir + "/seed_log.txt").records.size(), 6u);
  EXPECT_EQ(smezo::checkpoint_read_run_settings(o.out_dir + "/checkpoint")["step"], 4);  // the previous one
  EXPECT_FALSE(fs::exists(o.out_dir + "/checkpoint.tmp"));
  // with space again, --resume rebuilds the final checkpoint from the seed log, and only that
  smezo::TrainOptions straight = tiny_options(dir + "/straight");
  smezo::train(straight);
  const std::string seed_log = read_file(o.out_dir + "/seed_log.txt");
  o.resume = true;
  r = smezo::train(o);
  EXPECT_EQ(r.checkpoint_error, "");
  EXPECT_EQ(smezo::checkpoint_read_run_settings(o.out_dir + "/checkpoint")["step"], 6);
  EXPECT_EQ(read_file(o.out_dir + "/checkpoint/model.safetensors"),
            read_file(straight.out_dir + "/checkpoint/model.safetensors"));
  EXPECT_EQ(read_file(o.out_dir + "/seed_log.txt"), seed_log);
  EXPECT_EQ(read_json(o.out_dir + "/summary.json")["checkpoint"]["status"], "written (rebuilt from the seed log)");
}

// The CLI: a final checkpoint that fails is a warning, the run's result stays, exit code 3.
TEST(RunSafety, CliExitCodeThreeWhenOnlyTheCheckpointFailed) {
  const std::string dir = make_temp_dir("exit3");
  const std::string cmd = kSmezo + kTiny + " --steps 2 --out " + dir + "/run";
  std::string out;
  ASSERT_EQ(run_command(cmd, &out), 0) << out;
  // the checkpoint's place is taken by a file: the missing checkpoint cannot be rebuilt
  fs::remove_all(dir + "/run/checkpoint");
  smezo_test::write_file(dir + "/run/checkpoint", "not a folder");
  EXPECT_EQ(run_command(cmd + " --resume", &out), 3) << out;
  EXPECT_THAT(out, HasSubstr("run already finished at step 2, but its final checkpoint is missing"));
  EXPECT_THAT(out, HasSubstr("smezo: warning: the checkpoint of step 2 was not written: refusing to replace " + dir +
                             "/run/checkpoint"));
  const nlohmann::json s = read_json(dir + "/run/summary.json");
  EXPECT_THAT(s["checkpoint"]["status"].get<std::string>(), HasSubstr("failed: refusing to replace"));
  EXPECT_TRUE(s["test_acc"].is_number());
}

// eval --out is checked before anything is evaluated (its missing folders are created:
// test_output_paths.cpp); stale temporary files of it go.
TEST(RunSafety, EvalChecksItsOutputFirst) {
  const std::string dir = make_temp_dir("evalout");
  std::string out;
  smezo_test::write_file(dir + "/file", "x");
  EXPECT_EQ(run_command(kSmezo + " eval --task sst2 --test-examples 4 --out " + dir + "/file/e.json", &out), 1);
  EXPECT_THAT(out, HasSubstr("cannot write --out " + dir + "/file/e.json: Not a directory ---> HINT: a part of the path is a file"));
  EXPECT_THAT(out, testing::Not(HasSubstr("accuracy")));
  EXPECT_EQ(run_command(kSmezo + " eval --task sst2 --test-examples 4 --out " + dir, &out), 1);
  EXPECT_THAT(out, HasSubstr("--out " + dir + " is not a regular file"));
  const std::string stale = dir + "/e.json.tmp." + dead_pid();
  smezo_test::write_file(stale, "{");
  ASSERT_EQ(run_command(kSmezo + " eval --task sst2 --test-examples 4 --out " + dir + "/e.json", &out), 0) << out;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(read_json(dir + "/e.json")["accuracy"].is_number());
}

// Replay needs no tokenizer: it works on a model folder without one and says so; one found
// (or given) is copied into the checkpoint.
TEST(RunSafety, ReplayWithoutATokenizer) {
  const std::string dir = make_temp_dir("replaytok");
  {
    smezo::LoadedModel lm = smezo::open_model_paths(smezo::default_model_path(), "", smezo::DEVICE_CPU, 1, 1);
    smezo::save_hf_checkpoint(*lm.model, dir + "/base", "");  // an HF folder with no tokenizer
  }
  ASSERT_FALSE(fs::exists(dir + "/base/tokenizer.model"));
  const std::string tok = smezo::find_tokenizer_path(smezo::default_model_path(), "");
  std::string out;
  ASSERT_EQ(run_command(kSmezo + kTiny + " --steps 3 --model " + dir + "/base --tokenizer " + tok + " --out " + dir +
                        "/run", &out), 0) << out;
  ASSERT_EQ(run_command(kSmezo + " replay " + dir + "/base " + dir + "/run/seed_log.txt --out " + dir + "/replayed",
                        &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("no tokenizer beside " + dir + "/base and no --tokenizer: " + dir +
                             "/replayed holds none"));
  EXPECT_FALSE(fs::exists(dir + "/replayed/tokenizer.model"));
  EXPECT_EQ(read_file(dir + "/replayed/model.safetensors"), read_file(dir + "/run/checkpoint/model.safetensors"));
  ASSERT_EQ(run_command(kSmezo + " replay " + dir + "/base " + dir + "/run/seed_log.txt --tokenizer " + tok +
                        " --out " + dir + "/with_tok", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("tokenizer " + tok + " copied into " + dir + "/with_tok"));
  EXPECT_EQ(read_file(dir + "/with_tok/tokenizer.model"), read_file(tok));
}
