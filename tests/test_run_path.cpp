// The path a run took (src/setup/run_path.h): the resolved linear path, the W' block and graphs,
// written to the seed-log header and summary.json, read back, compared by --resume (a different
// path is refused with what was recorded, what this invocation resolves to and the option to pass;
// a log written before the record resumes, assuming this invocation's path) and printed by replay.
// The CUDA cases (*Cuda*) run on a GPU or the emulated target (make emu-test).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "run/seed_log.h"
#include "setup/model_setup.h"
#include "setup/run_path.h"
#include "test_util.h"

#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"  // cuda_device_available
#endif

using namespace smezo;
using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::run_command;
using smezo_test::write_file;
using testing::HasSubstr;

namespace {

// A short SST-2 run of stories260K (the options after `smezo`).
std::string train_args(int steps) {
  return " train --task sst2 --method smezo --sparsity 0.5 --steps " + std::to_string(steps) +
         " --batch 2 --max-len 40 --train-examples 16 --dev-examples 0 --skip-test --lr 2e-3 --flush-every 1 "
         "--progress-every 1000";
}

// The run's log cut to its first `keep` steps, the header's JSON passed through `edit` (a killed run
// whose header says something else).
void cut_log(const std::string& from, const std::string& to, int keep,
             void (*edit)(nlohmann::json*) = nullptr) {
  const SeedLog log = seed_log_read(from);
  nlohmann::json header = log.header;
  if (edit) edit(&header);
  std::string text = "# smezo seed log v1\n# " + header.dump() + "\n";
  for (int i = 0; i < keep; ++i) text += seed_log_format_record(log.records[i]);
  ASSERT_EQ(run_command("mkdir -p " + to, nullptr), 0);
  write_file(to + "/seed_log.txt", text);
}

}  // namespace

TEST(RunPath, RecordResolvesTheLinearPath) {
  const nlohmann::json cpu = run_path_record(DEVICE_CPU, LINEAR_MODE_AUTO);
  EXPECT_EQ(cpu, nlohmann::json({{"linear_path", "cpu"}, {"weight_block_bytes", nullptr}, {"graphs", "off"}}));
  EXPECT_EQ(run_path_record(DEVICE_CUDA, LINEAR_MODE_AUTO)["linear_path"], "wprime");  // the crossover table is empty
  EXPECT_EQ(run_path_record(DEVICE_CUDA, LINEAR_MODE_WPRIME)["linear_path"], "wprime");
  EXPECT_EQ(run_path_record(DEVICE_CUDA, LINEAR_MODE_FUSED)["linear_path"], "fused");
  EXPECT_EQ(run_path_record(DEVICE_CUDA, LINEAR_MODE_AUTO)["weight_block_bytes"], int64_t(64) << 20);
  EXPECT_EQ(run_path_record(DEVICE_CUDA, LINEAR_MODE_FUSED)["graphs"], "off");
  EXPECT_EQ(run_path_record(DEVICE_CUDA, LINEAR_MODE_AUTO, true)["graphs"], "on");  // --graphs on
  EXPECT_EQ(run_path_record(DEVICE_CPU, LINEAR_MODE_AUTO, false)["graphs"], "off");
  EXPECT_THAT(smezo_test::error_of([] { run_path_record(DEVICE_CUDA, static_cast<LinearPathMode>(3)); }),
              HasSubstr("unknown linear path 3"));
  EXPECT_EQ(run_path_describe(run_path_record(DEVICE_CUDA, LINEAR_MODE_FUSED)),
            "linear path \"fused\", W' blocks of 64 MiB, graphs \"off\"");
  EXPECT_EQ(run_path_describe(cpu), "linear path \"cpu\", no W' blocks, graphs \"off\"");
  EXPECT_THAT(run_path_describe(nlohmann::json::object()), HasSubstr("no recorded path"));
}

TEST(RunPath, DifferencesNameTheOptionThatTakesTheRunsPath) {
  const nlohmann::json cpu = run_path_record(DEVICE_CPU, LINEAR_MODE_AUTO),
                       wprime = run_path_record(DEVICE_CUDA, LINEAR_MODE_AUTO),
                       fused = run_path_record(DEVICE_CUDA, LINEAR_MODE_FUSED);
  EXPECT_TRUE(run_path_differences(cpu, cpu).empty());
  EXPECT_TRUE(run_path_differences(nlohmann::json::object(), fused).empty());  // not recorded: assumed
  std::vector<std::string> d = run_path_differences(fused, wprime);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "linear path \"fused\" in the run, \"wprime\" here (pass --linear-path fused)");
  d = run_path_differences(cpu, fused);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], "linear path \"cpu\" in the run, \"fused\" here (pass --device cpu)");
  EXPECT_THAT(d[1], HasSubstr("W' block of null bytes in the run, 67108864 here"));
  EXPECT_EQ(run_path_differences(wprime, cpu)[0],
            "linear path \"wprime\" in the run, \"cpu\" here (pass --device cuda --linear-path wprime)");
  nlohmann::json other = wprime;
  other["weight_block_bytes"] = int64_t(16) << 20;
  other["graphs"] = "on";
  d = run_path_differences(other, wprime);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_THAT(d[0], HasSubstr("W' block of 16777216 bytes in the run, 67108864 here"));
  EXPECT_EQ(d[1], "graphs \"on\" in the run, \"off\" here (pass --graphs on)");
}

// A CPU run writes the record to its seed log and summary.json; --resume takes a log without it
// (written before smezo recorded it) and says what it assumed; a log that says the run took another
// path is refused in one line naming both and the option; replay prints the record.
TEST(RunPath, CpuRunRecordsResumesAndRefuses) {
  const std::string dir = make_temp_dir("run_path_cpu"), smezo = smezo_test::smezo_binary() + train_args(4);
  std::string out;
  ASSERT_EQ(run_command(smezo + " --out " + dir + "/full", &out), 0) << out;
  const nlohmann::json header = seed_log_read(dir + "/full/seed_log.txt").header;
  EXPECT_EQ(header["linear_path"], "cpu");
  EXPECT_TRUE(header["weight_block_bytes"].is_null());
  EXPECT_EQ(header["graphs"], "off");
  const nlohmann::json summary = nlohmann::json::parse(read_file(dir + "/full/summary.json"));
  for (const char* key : {"linear_path", "weight_block_bytes", "graphs"}) {
    EXPECT_EQ(summary[key], header[key]) << key;
    EXPECT_EQ(summary["hyperparameters"][key], header[key]) << key;
  }
  EXPECT_EQ(summary["noise"], header["spsa"]["noise"]);
  // an old log: no record, resumes on this invocation's path and ends where the full run did
  cut_log(dir + "/full/seed_log.txt", dir + "/old", 2, [](nlohmann::json* h) {
    for (const char* key : {"linear_path", "weight_block_bytes", "graphs"}) h->erase(key);
  });
  ASSERT_EQ(run_command(smezo + " --resume --out " + dir + "/old", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("records no path (written before smezo recorded it): assuming this invocation's, "
                             "linear path \"cpu\", no W' blocks, graphs \"off\""));
  EXPECT_EQ(read_file(dir + "/old/checkpoint/model.safetensors"), read_file(dir + "/full/checkpoint/model.safetensors"));
  // a log whose run took the GPU's fused path (as if its device were edited too): refused
  cut_log(dir + "/full/seed_log.txt", dir + "/fused", 2, [](nlohmann::json* h) {
    (*h)["linear_path"] = "fused";
    (*h)["weight_block_bytes"] = int64_t(64) << 20;
  });
  EXPECT_NE(run_command(smezo + " --resume --out " + dir + "/fused", &out), 0);
  EXPECT_THAT(out, HasSubstr("linear path \"fused\" in the run, \"cpu\" here (pass --device cuda --linear-path fused)"));
  EXPECT_TRUE(smezo_test::is_one_line_output(out)) << out;
  ASSERT_EQ(run_command(smezo_test::smezo_binary() + " replay " + default_model_path() + " " + dir + "/full/seed_log.txt --out " + dir +
                            "/replayed", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("the run's forward passes took: linear path \"cpu\", no W' blocks, graphs \"off\""));
}

// On the CUDA backend (a GPU or emulated): a --linear-path fused run records "fused" and resumes only
// with it; a CPU run's log resumed with --device cuda is refused, naming the device and the path.
TEST(RunPathCuda, ResumeRefusesAnotherPath) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const std::string dir = make_temp_dir("run_path_cuda"), smezo = smezo_test::smezo_binary();
  const std::string cuda = train_args(4) + " --device cuda --dtype f32";
  std::string out;
  ASSERT_EQ(run_command(smezo + cuda + " --linear-path fused --out " + dir + "/fused", &out), 0) << out;
  const nlohmann::json header = seed_log_read(dir + "/fused/seed_log.txt").header;
  EXPECT_EQ(header["linear_path"], "fused");
  EXPECT_EQ(header["weight_block_bytes"], int64_t(64) << 20);
  EXPECT_EQ(header["graphs"], "off");
  EXPECT_EQ(nlohmann::json::parse(read_file(dir + "/fused/summary.json"))["linear_path"], "fused");
  cut_log(dir + "/fused/seed_log.txt", dir + "/killed", 2);
  EXPECT_NE(run_command(smezo + cuda + " --resume --out " + dir + "/killed", &out), 0);  // auto: wprime
  EXPECT_THAT(out, HasSubstr("linear path \"fused\" in the run, \"wprime\" here (pass --linear-path fused)"));
  EXPECT_TRUE(smezo_test::is_one_line_output(out)) << out;
  ASSERT_EQ(run_command(smezo + cuda + " --linear-path fused --resume --out " + dir + "/killed", &out), 0) << out;
  EXPECT_EQ(read_file(dir + "/killed/checkpoint/model.safetensors"), read_file(dir + "/fused/checkpoint/model.safetensors"));
  // a CPU run's log, resumed on the device
  ASSERT_EQ(run_command(smezo + train_args(2) + " --out " + dir + "/cpu", &out), 0) << out;
  cut_log(dir + "/cpu/seed_log.txt", dir + "/cpu-killed", 1);
  EXPECT_NE(run_command(smezo + train_args(2) + " --device cuda --dtype f32 --resume --out " + dir + "/cpu-killed",
                        &out), 0);
  EXPECT_THAT(out, HasSubstr("device = \"cpu\" in the run, \"cuda\" here"));
  EXPECT_THAT(out, HasSubstr("linear path \"cpu\" in the run, \"wprime\" here (pass --device cpu)"));
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// --graphs on records "on"; a killed run resumes only with --graphs on (without: refused in one line with
// the option), and then ends where the whole run did. With SMEZO_CUDA_SYNC=1 it is refused.
TEST(RunPathCuda, ResumeRefusesTheOtherGraphsSetting) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const std::string dir = make_temp_dir("run_path_graphs"), smezo = smezo_test::smezo_binary();
  const std::string cuda = train_args(3) + " --device cuda --dtype f32";
  std::string out;
  ASSERT_EQ(run_command(smezo + cuda + " --graphs on --out " + dir + "/on", &out), 0) << out;
  EXPECT_EQ(seed_log_read(dir + "/on/seed_log.txt").header["graphs"], "on");
  EXPECT_EQ(nlohmann::json::parse(read_file(dir + "/on/summary.json"))["graphs"], "on");
  cut_log(dir + "/on/seed_log.txt", dir + "/killed", 1);
  EXPECT_NE(run_command(smezo + cuda + " --resume --out " + dir + "/killed", &out), 0);
  EXPECT_THAT(out, HasSubstr("graphs \"on\" in the run, \"off\" here (pass --graphs on)"));
  EXPECT_TRUE(smezo_test::is_one_line_output(out)) << out;
  ASSERT_EQ(run_command(smezo + cuda + " --graphs on --resume --out " + dir + "/killed", &out), 0) << out;
  EXPECT_EQ(read_file(dir + "/killed/checkpoint/model.safetensors"), read_file(dir + "/on/checkpoint/model.safetensors"));
  // SMEZO_CUDA_SYNC=1 synchronises after each launch, which a capture forbids: refused before loading
  EXPECT_NE(run_command("SMEZO_CUDA_SYNC=1 " + smezo + cuda + " --graphs on --out " + dir + "/sync", &out), 0);
  EXPECT_THAT(out, HasSubstr("--graphs on: SMEZO_CUDA_SYNC=1 synchronises after every launch"));
  EXPECT_TRUE(smezo_test::is_one_line_output(out)) << out;
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}
