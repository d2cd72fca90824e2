// SIGKILL at random moments: a short CPU run on stories260K with frequent seed-log
// flushes, checkpoints and evaluations is killed 20 times at random moments of its life
// (start-up, steps, seed-log flushes, checkpoint writes, the final evaluation and summary),
// each killed run is resumed with --resume, and every one must end with the weights and the
// seed log of the uninterrupted run, byte for byte, and no temporary file left behind.
//
// The kill moments come from a seeded generator; the seed is printed, and
// SMEZO_KILL_SEED=<seed> repeats the same moments (the machine's load still moves what each
// moment hits).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include "run/metrics_log.h"
#include "run/run_dir.h"
#include "run/seed_log.h"
#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::run_command;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// What a killed run's folder held: how far the seed log got and which writes were cut.
std::string describe_folder(const std::string& dir) {
  if (!fs::exists(dir)) return "no folder yet";
  std::string s;
  try {
    s = std::to_string(smezo::seed_log_read(dir + "/seed_log.txt").records.size()) + " steps logged";
  } catch (const std::exception&) {
    s = "no seed log";
  }
  for (const auto& e : fs::directory_iterator(dir))
    if (smezo::run_dir_is_temporary(e.path().filename().string())) s += ", " + e.path().filename().string();
  if (fs::exists(dir + "/summary.json")) s += ", summary.json";
  return s;
}

}  // namespace

TEST(KillResume, TwentyRandomKillsEachResumeBitForBit) {
  const char* env = std::getenv("SMEZO_KILL_SEED");
  const uint64_t seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::printf("kill/resume: seed %llu (SMEZO_KILL_SEED=%llu repeats these kill moments)\n", (unsigned long long)seed,
              (unsigned long long)seed);
  RecordProperty("kill_seed", std::to_string(seed));
  const int steps = 16;
  const std::string run = smezo_test::smezo_binary() +
                          " train --task sst2 --batch 2 --max-len 32 --lr 2e-3 --steps " + std::to_string(steps) +
                          " --train-examples 32 --dev-examples 4 --eval-examples 2 --eval-every 4 --test-examples 4"
                          " --flush-every 3 --checkpoint-every 2 --progress-every 1000";
  const std::string dir = make_temp_dir("killresume");
  std::string out;
  const auto t0 = Clock::now();
  ASSERT_EQ(run_command(run + " --out " + dir + "/straight", &out), 0) << out;
  const double life_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const std::string weights = read_file(dir + "/straight/checkpoint/model.safetensors");
  const std::string seed_log = read_file(dir + "/straight/seed_log.txt");

  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> moment(0.0, 1.05);  // a few land after the end
  for (int k = 0; k < 20; k++) {
    const std::string out_dir = dir + "/killed" + std::to_string(k);
    const double at_ms = moment(rng) * life_ms;
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const std::string cmd = "exec " + run + " --out " + out_dir + " > /dev/null 2>&1";
      execl("/bin/sh", "sh", "-c", cmd.c_str(), (char*)nullptr);
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(at_ms * 1000)));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    const std::string what = "kill " + std::to_string(k) + " at " + std::to_string((int)at_ms) + " of " +
                             std::to_string((int)life_ms) + " ms (" +
                             (WIFSIGNALED(status) ? describe_folder(out_dir) : std::string("it had finished")) + ")";
    std::printf("kill/resume: %s\n", what.c_str());
    ASSERT_EQ(run_command(run + " --out " + out_dir + " --resume", &out), 0) << what << "\n" << out;
    EXPECT_EQ(read_file(out_dir + "/checkpoint/model.safetensors"), weights) << what;
    EXPECT_EQ(read_file(out_dir + "/seed_log.txt"), seed_log) << what;
    int64_t step_lines = 0;
    for (const auto& rec : smezo::metrics_log_read(out_dir + "/metrics.jsonl")) step_lines += rec.contains("loss");
    EXPECT_EQ(step_lines, steps) << what;
    for (const auto& e : fs::directory_iterator(out_dir))
      EXPECT_FALSE(smezo::run_dir_is_temporary(e.path().filename().string())) << what << ": " << e.path();
    if (HasFailure()) {
      std::printf("kill/resume: failed; repeat with SMEZO_KILL_SEED=%llu\n", (unsigned long long)seed);
      return;
    }
    fs::remove_all(out_dir);
  }
}
