// smezo eval: accuracy of a model on a task split, zero-shot or in-context (k demonstrations
// from the training split), by length-normalised candidate log-likelihood.
#include <chrono>
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/model_setup.h"
#include "common/assets.h"
#include "common/check.h"
#include "run/summary.h"
#include "tasks/task_data.h"
#include "tasks/task_encode.h"
#include "train/objective.h"

namespace smezo {

int command_eval(int argc, char** argv) {
  Args args(argc, argv, 2);
  const std::string task = args.str("task", "sst2");
  const std::string mode = args.str("mode", "zero-shot");
  const std::string split = args.str("split", "test");
  const int64_t shots = args.integer("shots", mode == "icl" ? 16 : 0);
  const int64_t max_len = args.integer("max-len", 256);
  const int64_t batch = args.integer("batch", 16);
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed", 42));
  const std::string data_dir = args.str("data", asset_path("data"));
  const std::string out = args.str("out", "");
  const int64_t n_train = args.integer("train-examples", 1000), n_dev = args.integer("dev-examples", 500),
                n_test = args.integer("test-examples", 1000);
  SMEZO_REQUIRE(mode == "zero-shot" || mode == "icl", "unknown --mode '%s' (choose zero-shot or icl)", mode.c_str());
  SMEZO_REQUIRE(split == "dev" || split == "test", "unknown --split '%s' (choose dev or test)", split.c_str());
  SMEZO_REQUIRE(mode == "icl" ? shots > 0 : shots == 0, "--shots %lld: icl needs k > 0 demonstrations, zero-shot none",
                (long long)shots);
  SMEZO_REQUIRE(batch > 0 && max_len > 1, "--batch and --max-len must be positive");
  TaskSplits splits = load_task(task, seed, n_train, n_dev, n_test, data_dir);
  LoadedModel lm = open_model(args, std::max<int64_t>(8192, max_len), std::max<int64_t>(1024, max_len));
  args.require_all_used();
  SMEZO_REQUIRE(args.positional().empty(), "%s: unexpected argument '%s' (options are --name value)",
                "eval", args.positional().empty() ? "" : args.positional()[0].c_str());
  SMEZO_REQUIRE(shots <= (int64_t)splits.train.size(), "--shots %lld: the training split has %zu examples",
                (long long)shots, splits.train.size());
  const std::string prefix = build_icl_prefix(
      std::vector<TaskExample>(splits.train.begin(), splits.train.begin() + shots));
  const std::vector<TaskExample>& xs = split == "dev" ? splits.dev : splits.test;
  std::vector<EncodedExample> encoded;
  const int64_t len = std::min(max_len, lm.model->config().max_seq_len);
  for (const TaskExample& x : xs) encoded.push_back(encode_example(*lm.tokenizer, x, len, prefix));
  auto t0 = std::chrono::steady_clock::now();
  const double acc = accuracy(*lm.model, encoded, batch);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s %s %s (%zu examples, %s%s): accuracy %.4f  [%.1f s]\n", lm.model_path.c_str(),
              splits.name.c_str(), split.c_str(), xs.size(), mode.c_str(),
              mode == "icl" ? (", k=" + std::to_string(shots)).c_str() : "", acc, secs);
  if (!out.empty()) {
    nlohmann::json j = {{"model", lm.model_path}, {"task", splits.name}, {"split", split}, {"mode", mode},
                        {"shots", shots}, {"examples", xs.size()}, {"accuracy", acc}, {"seed", seed},
                        {"split_note", splits.split_note}, {"wall_time_s", secs}};
    summary_add_standard_fields(&j);
    summary_write(out, j);
  }
  return 0;
}

}  // namespace smezo
