// smezo::replay() through the public headers alone (include/smezo/), as an embedding program calls
// it: a short run's seed log replays onto the bundled stories260K to its own checkpoint, byte for
// byte, and a log that is not a run's is one error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "smezo/replay.h"
#include "smezo/train.h"
#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::read_file;

TEST(ReplayApi, RebuildsTheRunsCheckpointByteForByte) {
  const std::string dir = make_temp_dir("replay_api");
  smezo::TrainOptions o;  // the bundled stories260K on the CPU
  o.task = "sst2";
  o.n_train = 16, o.n_dev = 4, o.n_test = 4;
  o.max_len = 40;
  o.batch = 2;
  o.steps = 6;
  o.eval_every = 0;
  o.skip_test = true;
  o.progress_every = 1000;
  o.out_dir = dir + "/run";
  o.spsa.lr = 2e-3f;
  ASSERT_EQ(smezo::train(o).steps_done, 6);
  smezo::ReplayOptions r;  // base "": the bundled stories260K, as the run
  r.seed_log = o.out_dir + "/seed_log.txt";
  r.out = dir + "/replayed";
  const smezo::ReplayResult result = smezo::replay(r);
  EXPECT_EQ(result.steps, 6);
  EXPECT_FALSE(result.partial_tail);
  EXPECT_EQ(result.written, smezo::TUNE_FULL);
  EXPECT_THAT(result.base, testing::EndsWith("stories260K.bin"));
  EXPECT_NE(result.tokenizer_path, "");  // the bundled tokenizer, copied
  EXPECT_NE(result.run_path, "");
  const std::string trained = read_file(o.out_dir + "/checkpoint/model.safetensors");
  EXPECT_EQ(read_file(r.out + "/model.safetensors"), trained);
  // a file that is not a run's seed log: one error, nothing written
  r.seed_log = o.out_dir + "/summary.json";
  r.out = dir + "/not_written";
  EXPECT_THROW(smezo::replay(r), std::runtime_error);
}
