// The library owns the training options (src/train/train_options.h): resolve_defaults fills in
// what `smezo train` fills in, one validation refuses what no run can use, and the names of
// the enums come from one table. A program that calls smezo::train() with only the public
// header (no CLI knowledge) trains with MeZO, S-MeZO and R-MeZO, and gets the run the CLI gives
// for the same options, byte for byte.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/device_names.h"
#include "run/seed_log.h"
#include "smezo/train.h"
#include "test_util.h"
#include "train/option_names.h"
#include "train/train_options.h"

using namespace smezo;
using smezo_test::error_of;
using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::run_command;
using testing::HasSubstr;

TEST(TrainOptions, ResolveDefaultsAreTheCommandLines) {
  struct Case {
    Method method;
    double sparsity;
    float lr;
  } cases[] = {{METHOD_MEZO, 0.0, 1e-6f}, {METHOD_SMEZO, 0.75, 2e-6f}, {METHOD_RMEZO, 0.75, 2e-6f},
               {METHOD_FZOO, 0.0, 1e-6f}};
  for (const Case& c : cases) {
    TrainOptions o;
    o.task = "sst2";
    o.steps = 7;
    o.spsa.method = c.method;
    o.spsa.seed = 5;
    const TrainOptions r = resolve_defaults(o);
    ASSERT_TRUE(r.spsa.sparsity && r.spsa.lr);
    EXPECT_EQ(*r.spsa.sparsity, c.sparsity) << method_name(c.method);
    EXPECT_EQ(*r.spsa.lr, c.lr) << method_name(c.method);
    EXPECT_EQ(r.spsa.total_steps, 7);
    EXPECT_EQ(r.data_seed, 5u);  // 0: the run seed
    EXPECT_EQ(r.out_dir, std::string("runs/sst2-") + method_name(c.method));
    // what the caller set stays, and resolving twice changes nothing
    o.spsa.lr = 3e-4f, o.spsa.sparsity = 0.5, o.data_seed = 9, o.out_dir = "x";
    const TrainOptions set = resolve_defaults(resolve_defaults(o));
    EXPECT_EQ(*set.spsa.lr, 3e-4f);
    EXPECT_EQ(*set.spsa.sparsity, 0.5);
    EXPECT_EQ(set.data_seed, 9u);
    EXPECT_EQ(set.out_dir, "x");
  }
  TrainOptions spec;
  spec.task_spec = "specs/my-task.json";
  spec.spsa.method = METHOD_RMEZO;
  EXPECT_EQ(resolve_defaults(spec).out_dir, "runs/my-task-rmezo");
}

// --weights auto: a GGUF's blocks stay packed under a frozen base, dequantized when every weight is tuned
TEST(TrainOptions, WeightsAutoPacksAFrozenBase) {
  for (Tune tune : {TUNE_FULL, TUNE_LORA, TUNE_PREFIX, TUNE_SCALES}) {
    TrainOptions o;
    o.tune = tune;
    EXPECT_EQ(o.weights, WEIGHTS_AUTO);
    EXPECT_EQ(resolve_defaults(o).weights, tune == TUNE_FULL ? WEIGHTS_DEQUANTIZED : WEIGHTS_PACKED) << tune;
    o.weights = WEIGHTS_DEQUANTIZED;  // what the caller set stays
    EXPECT_EQ(resolve_defaults(o).weights, WEIGHTS_DEQUANTIZED) << tune;
  }
  EXPECT_EQ(enum_choices(weight_storage_names()), (std::vector<std::string>{"auto", "dequantized", "packed"}));
}

TEST(TrainOptions, EveryNameParsesToItsValueAndBack) {
  EXPECT_EQ(method_parse("s-mezo"), METHOD_SMEZO);  // a spelling that parses but is not offered
  EXPECT_EQ(enum_choices(method_names()), (std::vector<std::string>{"mezo", "smezo", "rmezo", "fzoo"}));
  EXPECT_EQ(enum_choices(noise_names()), (std::vector<std::string>{"gaussian", "gaussian-v1", "rademacher", "sign"}));
  for (const auto& n : tune_names()) EXPECT_EQ(enum_find(tune_names(), n.name), n.value);
  for (const auto& n : objective_names()) EXPECT_EQ(enum_parse(objective_names(), n.name, "objective"), n.value);
  EXPECT_THAT(error_of([] { method_parse("adam"); }), HasSubstr("unknown method 'adam' (choose mezo, smezo, rmezo or "
                                                                "fzoo)"));
}

// One validation: the ranges the command line states, checked for an API caller too.
TEST(TrainOptions, ValidationNamesTheOptionAndItsRange) {
  auto error = [](const std::function<void(TrainOptions*)>& change) {
    TrainOptions o;
    o.task = "sst2";
    change(&o);
    return error_of([&] { validate_train_options(resolve_defaults(o)); });
  };
  EXPECT_THAT(error([](TrainOptions* o) { o->spsa.lr = -1e-3f; }), HasSubstr("--lr must be >= 0, got -0.001"));
  EXPECT_THAT(error([](TrainOptions* o) { o->batch = 0; }), HasSubstr("--batch must be an integer >= 1, got 0"));
  EXPECT_THAT(error([](TrainOptions* o) { o->spsa.sparsity = 1.0; }), HasSubstr("--sparsity must be in [0, 1), got 1"));
  EXPECT_THAT(error([](TrainOptions* o) { o->tune = static_cast<Tune>(9); }),
              HasSubstr("unknown --tune 9 (choose full, lora, prefix or scales)"));
  EXPECT_THAT(error([](TrainOptions* o) {
                o->spsa.method = METHOD_MEZO;
                o->spsa.sparsity = 0.5;
              }),
              HasSubstr("--sparsity 0.5: mezo tunes every entry (a sparsity applies to smezo and rmezo only)"));
  EXPECT_THAT(error([](TrainOptions* o) { o->train_file = "t.jsonl"; }), HasSubstr("need --task-spec"));
  // the command line checks the same range, in the same words
  EXPECT_EQ(train_option_range("--max-len").describe(), "integer >= 2");
  EXPECT_EQ(train_option_range("--eps").describe(), ">= 1.17549e-38");
}

namespace {

// A tiny stories260K run: the same options through the CLI's words and through TrainOptions.
const char* kCliRun = " train --task sst2 --train-examples 16 --dev-examples 4 --test-examples 4 --batch 2 "
                      "--max-len 40 --steps 3 --eval-every 0 --skip-test --progress-every 1000";

TrainOptions api_run(Method method, const std::string& out_dir) {
  TrainOptions o;  // model_path "": the bundled stories260K, as the CLI's default
  o.task = "sst2";
  o.n_train = 16, o.n_dev = 4, o.n_test = 4;
  o.batch = 2;
  o.max_len = 40;
  o.steps = 3;
  o.eval_every = 0;
  o.skip_test = true;
  o.progress_every = 1000;
  o.out_dir = out_dir;
  o.spsa.method = method;  // lr and sparsity left to the method's defaults
  return o;
}

}  // namespace

// MeZO, S-MeZO and R-MeZO through the public API with no sparsity or lr given: each runs with the
// method's defaults, and the seed log and the weights are those of `smezo train` byte for byte.
TEST(TrainOptions, ApiAndCliGiveByteIdenticalRuns) {
  const std::string dir = make_temp_dir("api_cli");
  for (Method method : {METHOD_MEZO, METHOD_SMEZO, METHOD_RMEZO}) {
    const std::string name = method_name(method);
    const TrainResult r = train(api_run(method, dir + "/api-" + name));
    EXPECT_EQ(r.steps_done, 3) << name;
    std::string out;
    ASSERT_EQ(run_command(smezo_test::smezo_binary() + kCliRun + " --method " + name + " --out " + dir + "/cli-" +
                          name, &out), 0) << out;
    const std::string api_log = read_file(dir + "/api-" + name + "/seed_log.txt");
    EXPECT_EQ(api_log, read_file(dir + "/cli-" + name + "/seed_log.txt")) << name;
    EXPECT_EQ(read_file(dir + "/api-" + name + "/checkpoint/model.safetensors"),
              read_file(dir + "/cli-" + name + "/checkpoint/model.safetensors")) << name;
    const nlohmann::json spsa = seed_log_read(dir + "/api-" + name + "/seed_log.txt").header["spsa"];
    const TrainOptions resolved = resolve_defaults(api_run(method, ""));
    EXPECT_EQ(spsa["sparsity"].get<double>(), *resolved.spsa.sparsity) << name;
    EXPECT_EQ(spsa["lr"].get<float>(), *resolved.spsa.lr) << name;
  }
}
