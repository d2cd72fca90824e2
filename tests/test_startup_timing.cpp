// Start-up phase timing: a run's summary.json says how long each start-up phase
// and each end phase took, in the order they ran, and the screen shows the same line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "setup/model_setup.h"
#include "smezo/train.h"
#include "test_util.h"

TEST(StartupTiming, SummaryHasEveryPhase) {
  const std::string dir = smezo_test::make_temp_dir("startup");
  smezo::TrainOptions o;
  o.model_path = smezo::default_model_path();
  o.task = "sst2";
  o.n_train = 8;
  o.n_dev = 4;
  o.n_test = 4;
  o.max_len = 40;
  o.batch = 2;
  o.steps = 2;
  o.eval_every = 0;
  o.out_dir = dir + "/run";
  o.spsa.lr = 1e-3f;
  smezo::train(o);
  const nlohmann::json s = nlohmann::json::parse(smezo_test::read_file(o.out_dir + "/summary.json"));
  ASSERT_TRUE(s.contains("startup_s")) << s.dump();
  for (const char* phase : {"data", "open", "load", "tokenize", "thresholds", "first_step"}) {
    ASSERT_TRUE(s["startup_s"].contains(phase)) << phase << " in " << s["startup_s"].dump();
    EXPECT_GE(s["startup_s"][phase].get<double>(), 0.0) << phase;
  }
  EXPECT_GT(s["startup_s"]["first_step"].get<double>(), 0.0);  // two forward passes at least
  for (const char* phase : {"evaluation", "checkpoint"}) {
    ASSERT_TRUE(s["finish_s"].contains(phase)) << phase;
    EXPECT_GT(s["finish_s"][phase].get<double>(), 0.0) << phase;
  }
  EXPECT_GT(s["estimated_backend_memory_MB"].get<double>(), s["peak_backend_memory_MB"].get<double>() * 0.5);
}

TEST(StartupTiming, ScreenShowsThePhases) {
  const std::string dir = smezo_test::make_temp_dir("startup_cli");
  std::string out;
  ASSERT_EQ(smezo_test::run_command(smezo_test::smezo_binary() +
                                        " train --task sst2 --lr 1e-3 --batch 2 --max-len 40 --steps 1 "
                                        "--eval-every 0 --train-examples 4 --dev-examples 2 --skip-test --out " +
                                        dir + "/run",
                                    &out),
            0)
      << out;
  EXPECT_THAT(out, testing::ContainsRegex("start-up: data [0-9.]+ s, open [0-9.]+ s, load [0-9.]+ s, tokenize "
                                          "[0-9.]+ s, thresholds [0-9.]+ s, first_step [0-9.]+ s; end: "
                                          "evaluation [0-9.]+ s, checkpoint [0-9.]+ s"));
}
