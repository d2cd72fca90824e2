// smezo eval: a model's accuracy on a task split (--task, or --task-spec and data files), zero-shot or
// in-context (k demonstrations from the training split), by length-normalised candidate
// log-likelihood, or a generation spec's SQuAD EM / token F1 after greedy decoding: the trainer's own
// evaluation functions, so a checkpoint measures here what its run measured. Defaults: a checkpoint's
// smezo_run.json (or the --adapter folder's), and it says so.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "common/assets.h"
#include "common/check.h"
#include "common/file_util.h"
#include "common/stopwatch.h"
#include "run/number_format.h"
#include "run/run_dir.h"
#include "run/summary.h"
#include "tasks/task_data.h"
#include "tasks/task_encode.h"
#include "tasks/task_files.h"
#include "tasks/text_metrics.h"
#include "train/adapter_folder.h"
#include "train/checkpoint.h"
#include "train/generation_eval.h"
#include "train/objective.h"

namespace smezo {

namespace {

enum EvalMode { EVAL_ZERO_SHOT, EVAL_ICL };  // icl: --shots demonstrations before each example
enum EvalSplit { SPLIT_DEV, SPLIT_TEST };
const EnumNames<EvalMode>& eval_mode_names() {
  static const EnumNames<EvalMode> names = {{EVAL_ZERO_SHOT, "zero-shot"}, {EVAL_ICL, "icl"}};
  return names;
}
const EnumNames<EvalSplit>& split_names() {
  static const EnumNames<EvalSplit> names = {{SPLIT_DEV, "dev"}, {SPLIT_TEST, "test"}};
  return names;
}

struct EvalState {
  ModelOpenOptions model;
  std::string adapter;       // --adapter DIR, "" for none
  std::string settings_dir;  // where the run's smezo_run.json was looked for (the adapter's or the model's)
  std::string task = "sst2", data_dir, out, examples_out;
  EvalMode mode = EVAL_ZERO_SHOT;
  EvalSplit split = SPLIT_TEST;
  std::string task_spec, train_file, dev_file, test_file;  // your own data (all "" with --task)
  int64_t shots = 16, max_len = 256, batch = 16, n_train = 1000, n_dev = 500, n_test = 1000;
  uint64_t seed = 42;
  CLI::Option *task_opt = nullptr, *shots_opt = nullptr, *max_len_opt = nullptr, *seed_opt = nullptr,
              *data_opt = nullptr, *n_train_opt = nullptr, *n_dev_opt = nullptr, *n_test_opt = nullptr,
              *split_opt = nullptr;
};

bool any_data_file(const EvalState& s) {
  return !s.train_file.empty() || !s.dev_file.empty() || !s.test_file.empty();
}

// The combinations the command line alone gets wrong, before the run's settings fill gaps.
void check_task_options(const EvalState& s) {
  SMEZO_REQUIRE(s.task_spec.empty() || s.task_opt->count() == 0,
                "eval: give --task (a built-in task) or --task-spec (your own data), not both");
  SMEZO_REQUIRE(!any_data_file(s) || s.task_opt->count() == 0,
                "eval: --train-file, --dev-file and --test-file go with --task-spec, not --task");
}

// A file or folder the run recorded: an absolute path (smezo train records them so). A relative one, of
// an older smezo, would be read against this command's folder, not the run's: it is refused.
std::string run_recorded_path(const EvalState& s, const nlohmann::json& run, const char* key, const char* option) {
  const std::string path = run[key].get<std::string>();
  SMEZO_REQUIRE(path.empty() || path[0] == '/', "eval: the run's %s %s (%s/%s) is a relative path, and the folder it "
                "was relative to is not recorded (an older smezo wrote it): it would name other files here ---> HINT: "
                "give %s with the file's path", option, printable(path).c_str(), s.settings_dir.c_str(),
                kRunSettingsFile, option);
  return path;
}

// A run of own data: its spec and files (as the run was given them), unless a task is named.
std::string take_run_task_files(EvalState& s, const nlohmann::json& run) {
  if (s.task_opt->count() || !s.task_spec.empty() || !run.contains("task_spec") || !run["task_spec"].is_string() ||
      run["task_spec"].get<std::string>().empty())
    return "";
  std::string taken;
  auto take = [&](std::string* field, const char* key, const char* option) {
    if (!field->empty() || !run.contains(key) || !run[key].is_string() || run[key].get<std::string>().empty()) return;
    *field = run_recorded_path(s, run, key, option);
    SMEZO_REQUIRE(path_exists(*field), "eval: the run's %s %s (%s/%s) is not there: give %s FILE (with --task-spec "
                  "and --dev-file or --test-file)", option, printable(*field).c_str(), s.settings_dir.c_str(),
                  kRunSettingsFile, option);
    taken += std::string(" ") + option + " " + *field;
  };
  take(&s.task_spec, "task_spec", "--task-spec");
  if (s.mode == EVAL_ICL) take(&s.train_file, "train_file", "--train-file");  // the demonstrations
  if (s.test_file.empty() && s.dev_file.empty()) {  // a file given on the command line is the one to score
    take(&s.dev_file, "dev_file", "--dev-file");
    take(&s.test_file, "test_file", "--test-file");
  }
  return taken;
}

// Takes the run's settings for the options the command line left out; says which it took.
void apply_run_settings(EvalState& s, const nlohmann::json& run) {
  std::string taken;
  auto take_int = [&](CLI::Option* opt, int64_t* field, const char* key) {
    if (opt->count() || !run.contains(key) || !run[key].is_number_integer()) return;
    *field = run[key].get<int64_t>();
    taken += " " + opt->get_name() + " " + std::to_string(*field);
  };
  const bool spec_run = run.contains("task_spec") && run["task_spec"].is_string() &&
                        !run["task_spec"].get<std::string>().empty();
  taken += take_run_task_files(s, run);
  if (!s.task_opt->count() && !spec_run && run.contains("task") && run["task"].is_string()) {
    s.task = run["task"].get<std::string>();
    taken += " --task " + s.task;
  }
  take_int(s.max_len_opt, &s.max_len, "max_len");
  if (!s.seed_opt->count() && s.task_spec.empty() && run.contains("data_seed") &&
      run["data_seed"].is_number_unsigned()) {
    s.seed = run["data_seed"].get<uint64_t>();
    taken += " --seed " + std::to_string(s.seed);
  }
  // a run on files records the rows it used of each: they say nothing of another file
  auto runs_file = [&](const std::string& file, const char* key) {
    return !spec_run || (!file.empty() && run.contains(key) && (run[key] == file || run[key] == absolute_path(file)));
  };
  if (runs_file(s.train_file, "train_file")) take_int(s.n_train_opt, &s.n_train, "n_train");
  if (runs_file(s.dev_file, "dev_file")) take_int(s.n_dev_opt, &s.n_dev, "n_dev");
  if (runs_file(s.test_file, "test_file")) take_int(s.n_test_opt, &s.n_test, "n_test");
  if (!s.data_opt->count() && s.task_spec.empty() && run.contains("data_dir") && run["data_dir"].is_string() &&
      !run["data_dir"].get<std::string>().empty()) {
    s.data_dir = run_recorded_path(s, run, "data_dir", "--data");
    taken += " --data " + s.data_dir;
  }
  if (!taken.empty())
    std::fprintf(stderr, "eval: using the run's settings from %s/%s:%s (give an option to override it)\n",
                 s.settings_dir.c_str(), kRunSettingsFile, taken.c_str());
}

// accuracy(), also writing s.examples_out (JSONL: a header, then each example's text, scores, choice).
double accuracy_writing_examples(Model& model, const std::vector<EncodedExample>& encoded,
                                 const std::vector<TaskExample>& xs, const std::string& prefix, const EvalState& s,
                                 const std::string& task) {
  std::string text = nlohmann::json({{"task", task}, {"mode", enum_name(eval_mode_names(), s.mode)},
                                     {"shots", s.shots},
                                     {"max_len", std::min(s.max_len, model.config().max_seq_len)},
                                     {"icl_prefix", prefix}, {"examples", xs.size()}})
                         .dump() + "\n";
  int64_t correct = 0;
  for (size_t start = 0; start < encoded.size(); start += s.batch) {
    std::vector<const EncodedExample*> batch;
    for (size_t i = start; i < std::min(encoded.size(), start + s.batch); i++) batch.push_back(&encoded[i]);
    const auto scores = score_examples(model, batch, {Probe{}}, false)[0];
    for (size_t e = 0; e < batch.size(); e++) {
      const TaskExample& x = xs[start + e];
      int best = 0;
      std::vector<double> means;
      for (size_t c = 0; c < scores[e].size(); c++) {
        means.push_back(scores[e][c].mean_logprob());
        if (scores[e][c].mean_logprob() > scores[e][best].mean_logprob()) best = static_cast<int>(c);
      }
      correct += best == batch[e]->gold;
      std::vector<std::vector<int32_t>> tokens;
      for (const EncodedCandidate& c : batch[e]->candidates) tokens.push_back(c.tokens);
      text += nlohmann::json({{"contexts", x.contexts}, {"options", x.options}, {"gold", x.gold},
                              {"scores", means}, {"pred", best}, {"tokens", tokens}})
                  .dump() + "\n";
    }
  }
  run_write_file_atomic(s.examples_out, text);
  return static_cast<double>(correct) / static_cast<double>(encoded.size());
}

// A generation task's EM and F1, also writing s.examples_out if given.
GenerationScore generation_writing_examples(Model& model, const Tokenizer& tokenizer,
                                            const std::vector<EncodedExample>& encoded,
                                            const std::vector<TaskExample>& xs, const TaskSplits& splits,
                                            const EvalState& s) {
  const GenerationLimits limits{splits.max_new_tokens, splits.stop};
  std::vector<std::string> texts;
  const GenerationScore g = evaluate_generation(model, tokenizer, encoded, xs, limits, s.batch,
                                                s.examples_out.empty() ? nullptr : &texts);
  if (s.examples_out.empty()) return g;
  std::string text = nlohmann::json({{"task", splits.name}, {"mode", enum_name(eval_mode_names(), s.mode)},
                                     {"max_len", std::min(s.max_len, model.config().max_seq_len)},
                                     {"max_new_tokens", limits.max_new_tokens}, {"stop", limits.stop},
                                     {"examples", xs.size()}})
                         .dump() + "\n";
  for (size_t e = 0; e < texts.size(); e++)
    text += nlohmann::json({{"prompt", xs[e].contexts[0]}, {"references", xs[e].references}, {"text", texts[e]},
                            {"em", max_exact_match(texts[e], xs[e].references)},
                            {"f1", max_token_f1(texts[e], xs[e].references)}})
                .dump() + "\n";
  run_write_file_atomic(s.examples_out, text);
  return g;
}

// The task's splits: a built-in task sampled by --seed, or the first rows of the spec's files.
TaskSplits load_eval_splits(EvalState& s) {
  if (s.task_spec.empty())
    return load_task(s.task, s.seed, s.n_train, s.n_dev, s.n_test,
                     s.data_dir.empty() ? asset_path("data") : s.data_dir);
  if (!s.split_opt->count() && s.test_file.empty()) s.split = SPLIT_DEV;  // the file there is
  const bool dev = s.split == SPLIT_DEV;
  const std::string& file = dev ? s.dev_file : s.test_file;
  const char* split = enum_name(split_names(), s.split);
  SMEZO_REQUIRE(!file.empty(), "eval: --task-spec with --split %s needs --%s-file FILE (the records to score)",
                split, split);
  const bool icl = s.mode == EVAL_ICL;
  SMEZO_REQUIRE(!icl || !s.train_file.empty(), "eval: --mode icl with --task-spec needs --train-file FILE (the "
                "demonstrations are its first --shots rows)");
  TaskSplits splits = load_task_files({s.task_spec, icl ? s.train_file : "", dev ? file : "", dev ? "" : file},
                                      icl ? s.n_train : 0, s.n_dev, s.n_test);
  SMEZO_REQUIRE(!icl || !splits.generation, "eval: --mode icl scores classification tasks; %s is a generation task "
                "(evaluated zero-shot)", splits.name.c_str());
  return splits;
}

// The model, its workspace sized from --batch (and a prefix's P rows), the adapter applied.
LoadedModel open_eval_model(EvalState& s, const TaskSplits& splits, const AdapterFolder* adapter) {
  const int64_t prefix = adapter ? adapter->prefix_tokens() : 0;
  // --max-len is capped at the model's context before it sizes anything (the trainer's rule)
  s.model.workspace = [&s, &splits, prefix](const ModelConfig& c) {
    const int64_t len = std::max<int64_t>(2, std::min(s.max_len, c.max_seq_len - prefix));
    WorkspaceRows ws = workspace_for_batch(s.batch, len, 8192);
    // greedy decoding runs over a prompt (< len) and the tokens generated (as the trainer sizes it)
    if (splits.generation)
      ws.tokens = std::max(ws.tokens, std::min(len + splits.max_new_tokens, std::max(c.max_seq_len, len)));
    ws.tokens = std::max(ws.tokens, prefix);  // add_prefix's runs
    return ws;
  };
  if (adapter) s.model.adapters = adapter_memory_shape(*adapter);  // counted by the memory check
  LoadedModel lm = open_model(s.model);
  if (adapter) apply_adapter_folder(*lm.model, *adapter);
  return lm;
}

// In-context: how many demonstrations the length limit left whole (said once, recorded).
nlohmann::json icl_report(const Tokenizer& tokenizer, const std::vector<TaskExample>& demos,
                          const std::vector<EncodedExample>& encoded, const EvalState& s, int64_t len) {
  IclDemoCounter counter(tokenizer, demos);
  int64_t all_kept = 0, fewest = s.shots, total = 0;
  for (const EncodedExample& e : encoded) {
    const int64_t whole = counter.whole_demos(e);
    all_kept += whole == s.shots;
    fewest = std::min(fewest, whole);
    total += whole;
  }
  const double mean = static_cast<double>(total) / static_cast<double>(encoded.size());
  if (all_kept == (int64_t)encoded.size())
    std::fprintf(stderr, "icl: all %lld demonstrations fit in --max-len %lld for every example\n",
                 (long long)s.shots, (long long)len);
  else
    std::fprintf(stderr, "icl: --max-len %lld cut the demonstrations (from the left) in %lld of %zu examples: "
                 "%.1f of %lld whole on average, %lld at least; raise --max-len or lower --shots "
                 "to keep them all\n", (long long)len, (long long)encoded.size() - all_kept, encoded.size(),
                 mean, (long long)s.shots, (long long)fewest);
  return {{"shots", s.shots}, {"max_len", len}, {"examples_with_all_demos", all_kept},
          {"mean_whole_demos", mean}, {"min_whole_demos", fewest}};
}

int run_eval(EvalState& s) {
  if (!s.out.empty()) {  // before the evaluation, not after it
    remove_stale_temp_files_of(s.out);
    run_prepare_output_file(s.out, "--out");
  }
  if (!s.examples_out.empty()) run_prepare_output_file(s.examples_out, "--examples-out");
  check_task_options(s);
  // --adapter: read (and checked) before anything loads; its folder holds the run's settings
  std::unique_ptr<AdapterFolder> adapter;
  if (!s.adapter.empty()) {
    adapter = std::make_unique<AdapterFolder>(read_adapter_folder(s.adapter));
    s.model.model_path = adapter_model_path(*adapter, s.model.model_path);
  }
  s.settings_dir = adapter ? s.adapter : s.model.model_path;
  const nlohmann::json run = adapter ? adapter->run_settings : checkpoint_read_run_settings(s.model.model_path);
  if (run.is_object()) apply_run_settings(s, run);
  SMEZO_REQUIRE(!any_data_file(s) || !s.task_spec.empty(), "eval: --train-file, --dev-file and --test-file need "
                "--task-spec FILE (how a record becomes an example)");
  if (s.mode == EVAL_ZERO_SHOT && !s.shots_opt->count()) s.shots = 0;
  SMEZO_REQUIRE(s.mode == EVAL_ICL ? s.shots > 0 : s.shots == 0,
                "--shots %lld: icl needs k > 0 demonstrations, zero-shot none", (long long)s.shots);
  TaskSplits splits = load_eval_splits(s);
  const char *split = enum_name(split_names(), s.split), *mode = enum_name(eval_mode_names(), s.mode);
  LoadedModel lm = open_eval_model(s, splits, adapter.get());
  SMEZO_REQUIRE(s.shots <= (int64_t)splits.train.size(), "--shots %lld: the training split has %zu examples",
                (long long)s.shots, splits.train.size());
  const std::vector<TaskExample> demos(splits.train.begin(), splits.train.begin() + s.shots);
  const std::string prefix = build_icl_prefix(demos);
  const std::vector<TaskExample>& xs = s.split == SPLIT_DEV ? splits.dev : splits.test;
  SMEZO_REQUIRE(!xs.empty(), "the %s split of %s is empty (--%s-examples 0?)", split,
                splits.name.c_str(), split);
  if (splits.generation) check_generation_examples(xs, split);
  std::vector<EncodedExample> encoded;
  // a prefix adapter takes the first positions (as the trainer encodes its examples)
  const int64_t len = std::min(s.max_len, lm.model->config().max_seq_len - lm.model->prefix_tokens());
  for (const TaskExample& x : xs) encoded.push_back(encode_example(*lm.tokenizer, x, len, prefix));

  const nlohmann::json icl = s.mode == EVAL_ICL ? icl_report(*lm.tokenizer, demos, encoded, s, len) : nullptr;

  const Stopwatch timer;
  nlohmann::json scores;  // what --out records: accuracy, or em and f1
  std::string said;       // what the line says
  if (splits.generation) {
    const GenerationScore g = generation_writing_examples(*lm.model, *lm.tokenizer, encoded, xs, splits, s);
    scores = {{"accuracy", nullptr}, {"em", g.exact_match}, {"f1", g.f1}};
    said = "EM " + format_accuracy(g.exact_match) + ", F1 " + format_accuracy(g.f1);
  } else {
    const double acc = s.examples_out.empty() ? accuracy(*lm.model, encoded, s.batch)
                                              : accuracy_writing_examples(*lm.model, encoded, xs, prefix, s,
                                                                          splits.name);
    scores = {{"accuracy", acc}};
    said = "accuracy " + format_accuracy(acc);
  }
  const double secs = timer.seconds();
  const std::string model_name = lm.model_path + (adapter ? " + adapter " + s.adapter : "");
  std::printf("%s %s %s (%zu examples, %s%s): %s  [%.1f s]\n", model_name.c_str(), splits.name.c_str(),
              split, xs.size(), mode, s.mode == EVAL_ICL ? (", k=" + std::to_string(s.shots)).c_str() : "", said.c_str(), secs);
  if (!s.out.empty()) {
    const std::string& data_file = s.split == SPLIT_DEV ? s.dev_file : s.test_file;
    nlohmann::json j = {{"model", lm.model_path}, {"adapter", adapter ? nlohmann::json(s.adapter) : nullptr},
                        {"task", splits.name}, {"split", split}, {"mode", mode},
                        {"shots", s.shots}, {"max_len", len}, {"examples", xs.size()},
                        {"task_spec", s.task_spec.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.task_spec)},
                        {"data_file", s.task_spec.empty() ? nlohmann::json(nullptr) : nlohmann::json(data_file)},
                        {"seed", s.seed}, {"split_note", splits.split_note}, {"wall_time_s", secs},
                        {"icl_demonstrations", icl},
                        {"run_settings", run.is_object() ? nlohmann::json(std::string(kRunSettingsFile))
                                                         : nlohmann::json(nullptr)}};
    j.update(scores);
    summary_add_standard_fields(&j);
    summary_write(s.out, j);
  }
  return 0;
}

}  // namespace

Command register_eval(CLI::App& smezo) {
  auto s = std::make_shared<EvalState>();
  CLI::App* cmd = add_command(smezo, "eval", "accuracy of a model on a task split, zero-shot or in-context, or "
                                             "exact match and F1 of a generation task's greedy answers; on a "
                                             "checkpoint of `smezo train` (a full model, or an adapter folder given "
                                             "as --adapter) the run's data settings (its task, or its task spec and data "
                                             "files) are the defaults");
  add_adapter_option(cmd, add_model_options(cmd, &s->model), &s->adapter);
  add_graphs_option(cmd, &s->model.graphs);
  add_weights_option(cmd, &s->model.weights);
  s->task_opt = cmd->add_option("--task", s->task, "the task")
                    ->type_name("NAME")
                    ->check(one_of(task_names(), true))
                    ->default_str("the run's task, else sst2");
  cmd->add_option("--task-spec", s->task_spec, "your own data instead of --task: a JSON task spec (as `smezo "
                  "train --task-spec`) with --dev-file or --test-file; a generation spec is scored by greedy "
                  "decoding, exact match and token F1")
      ->type_name("FILE")
      ->default_str("the run's, else none");
  cmd->add_option("--train-file", s->train_file, "with --task-spec and --mode icl: the records whose first --shots "
                  "rows are the demonstrations")
      ->type_name("FILE")
      ->default_str("the run's with --mode icl, else none");
  cmd->add_option("--dev-file", s->dev_file, "with --task-spec: dev records, the first --dev-examples rows")
      ->type_name("FILE")
      ->default_str("the run's, else none");
  cmd->add_option("--test-file", s->test_file, "with --task-spec: test records, the first --test-examples rows")
      ->type_name("FILE")
      ->default_str("the run's, else none");
  add_enum_option(cmd, "--mode", &s->mode, eval_mode_names(), "zero-shot, or icl: --shots demonstrations from the "
                  "training split before each example");
  s->shots_opt = cmd->add_option("--shots", s->shots, "in-context demonstrations")
                     ->check(integer_at_least(0))
                     ->default_str("16 with --mode icl, else 0");
  s->split_opt = add_enum_option(cmd, "--split", &s->split, split_names(), "which split to score")
                     ->default_str("test; with --task-spec the split whose file is given, test first");
  s->max_len_opt = cmd->add_option("--max-len", s->max_len, "tokens per candidate, the prompt cut from the left")
                       ->check(integer_at_least(2))
                       ->default_str("the run's, else 256");
  cmd->add_option("--batch", s->batch, "examples per forward")->check(integer_at_least(1));
  s->seed_opt = cmd->add_option("--seed", s->seed, "data seed: which examples are sampled")
                    ->check(unsigned_integer())
                    ->default_str("the run's data seed, else 42");
  s->data_opt = cmd->add_option("--data", s->data_dir, "folder holding glue/ and superglue/")
                    ->type_name("DIR")
                    ->default_str(asset_path("data"));
  s->n_train_opt = cmd->add_option("--train-examples", s->n_train, "training examples sampled (the demonstrations "
                                                                   "come from them)")
                       ->check(integer_at_least(1))
                       ->default_str("the run's, else 1000");
  s->n_dev_opt = cmd->add_option("--dev-examples", s->n_dev, "dev examples sampled")
                     ->check(integer_at_least(0))
                     ->default_str("the run's, else 500");
  s->n_test_opt = cmd->add_option("--test-examples", s->n_test, "test examples sampled")
                      ->check(integer_at_least(0))
                      ->default_str("the run's, else 1000");
  cmd->add_option("--out", s->out, "also write the result as JSON")->type_name("FILE")->default_str("none");
  cmd->add_option("--examples-out", s->examples_out, "also write every example's text, candidate scores, "
                                                     "prediction and tokens as JSONL (for oracle checks); for "
                                                     "a generation task its prompt, references, generated text, "
                                                     "EM and F1")
      ->type_name("FILE")
      ->default_str("none");
  return {cmd, [s] { return run_eval(*s); }};
}

}  // namespace smezo
