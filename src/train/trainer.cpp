// The training driver (see trainer.h): one run as a sequence of phases over a Topology.
#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <random>
#include <tuple>

#include "setup/model_setup.h"
#include "setup/run_path.h"
#include "common/assets.h"
#include "common/check.h"
#include "common/file_util.h"
#include "common/input_file.h"
#include "common/splitmix.h"
#include "common/stopwatch.h"
#include "dist/device.h"
#include "dist/world.h"
#include "formats/json_read.h"
#include "formats/safetensors.h"  // checkpoint_step
#include "model/model_fingerprint.h"
#include "run/metrics_log.h"
#include "run/number_format.h"
#include "run/progress_bar.h"
#include "run/run_dir.h"
#include "run/seed_log.h"
#include "run/summary.h"
#include "run/svg_plot.h"
#include "tasks/task_data.h"
#include "tasks/task_files.h"
#include "tasks/task_encode.h"
#include "train/checkpoint.h"
#include "train/checkpoint_lora.h"
#include "train/checkpoint_prefix.h"
#include "train/checkpoint_scales.h"
#include "train/data_parallel.h"  // require_same_on_all_ranks
#include "train/generation_eval.h"
#include "train/metric_objective.h"
#include "train/objective.h"
#include "train/run_recorder.h"
#include "train/topology.h"
#include "train/train_options.h"

namespace smezo {

namespace {

struct EncodedSplits {
  std::vector<EncodedExample> train, dev, test;
};

std::vector<EncodedExample> encode_all(const Tokenizer& tok, const std::vector<TaskExample>& xs, int64_t max_len) {
  std::vector<EncodedExample> out;
  out.reserve(xs.size());
  for (const TaskExample& x : xs) out.push_back(encode_example(tok, x, max_len));
  return out;
}

// The minibatch of a step: a pure function of (data seed, step), so resume sees the same one.
std::vector<const EncodedExample*> minibatch(const std::vector<EncodedExample>& train, int64_t batch,
                                             uint64_t data_seed, int64_t step) {
  std::vector<int64_t> idx(train.size());
  for (size_t i = 0; i < idx.size(); i++) idx[i] = static_cast<int64_t>(i);
  std::mt19937_64 rng(splitmix64(data_seed * 0x2545F4914F6CDD1DULL + static_cast<uint64_t>(step)));
  const int64_t n = std::min<int64_t>(batch, static_cast<int64_t>(idx.size()));
  std::vector<const EncodedExample*> out;
  for (int64_t i = 0; i < n; i++) {  // partial Fisher-Yates
    int64_t j = i + static_cast<int64_t>(rng() % static_cast<uint64_t>(idx.size() - i));
    std::swap(idx[i], idx[j]);
    out.push_back(&train[idx[i]]);
  }
  return out;
}

// minibatch()'s `step` for minibatch k (0 .. K-1) of a step: K per step in a row; K = 1 gives the step.
int64_t accumulated_minibatch(int64_t step, int64_t k, int64_t accumulate) { return (step - 1) * accumulate + k + 1; }

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());  // two halves: 0.5·(l+ + l-) exactly
}

void add_into(std::vector<double>* sum, const std::vector<double>& v) {
  if (sum->empty()) {
    *sum = v;
    return;
  }
  for (size_t h = 0; h < v.size(); h++) (*sum)[h] += v[h];
}

nlohmann::json run_header(const TrainOptions& o, const SpsaOptimizer& opt, Model& model) {
  nlohmann::json h;
  // Updates round to the storage dtype, so replay and resume must store weights the same way.
  h["storage_dtype"] = dtype_name(model.storage_dtype());
  h["device"] = model.backend().name();
  h["spsa"] = opt.describe();
  h["task"] = o.task;
  h["data_seed"] = o.data_seed;
  h["n_train"] = o.n_train;
  h["n_dev"] = o.n_dev;  // small tasks take dev out of the train pool: it shapes the train set
  h["data_dir"] = o.data_dir;
  h["batch"] = o.batch;
  h["max_len"] = o.max_len;
  h["fixed_batch"] = o.fixed_batch;
  h["model"] = o.model_path;
  h["objective"] = enum_name(objective_names(), o.objective);  // a log without it ran on the loss (check_resume_header)
  if (o.accumulate != 1) h["accumulate"] = o.accumulate;  // absent: 1 (a one-minibatch run's header is unchanged)
  if (model.has_lora()) h["tune"] = lora_describe(model.lora_options());  // absent: full (older logs too)
  if (model.has_prefix()) h["tune"] = prefix_describe(model.prefix_options());
  if (model.has_scales()) h["tune"] = scales_describe(model, o.model_path);  // with the base's sha256
  h.update(run_path_record(model.backend().kind() == BACKEND_CUDA ? DEVICE_CUDA : DEVICE_CPU, o.linear_path,
                           o.graphs));  // the paths round differently
  return h;
}

// An older data-file log holds the counts asked, not used: it matches if those and data_fingerprint do.
bool logged_as_asked(const nlohmann::json& logged, const nlohmann::json& mine, const nlohmann::json& asked,
                     const char* key) {
  return asked.contains(key) && logged.contains(key) && logged[key] == asked[key] &&
         logged.contains("data_fingerprint") && logged["data_fingerprint"] == mine["data_fingerprint"];
}

// Refuses a resume whose options differ, listing them all. asked: a data-file run's n_train, n_dev as asked.
// where: the header's "PATH line N", which the messages about a malformed field name.
void check_resume_header(const nlohmann::json& logged, const nlohmann::json& mine, const nlohmann::json& asked,
                         const SpsaOptimizer& opt, const std::string& path, const std::string& where) {
  std::vector<std::string> diffs = opt.differences(logged.value("spsa", nlohmann::json::object()), where);
  for (const std::string& d : run_path_differences(logged, mine)) diffs.push_back(d);  // none unrecorded
  for (const char* key : {"task", "data_seed", "n_train", "n_dev", "data_dir", "batch", "max_len",
                          "fixed_batch", "storage_dtype", "device"}) {
    if (logged_as_asked(logged, mine, asked, key)) continue;
    if (!logged.contains(key) || logged[key] != mine[key])
      diffs.push_back(format_string("%s = %s in the run, %s here", key,
                                    logged.contains(key) ? logged[key].dump().c_str() : "(missing)",
                                    mine[key].dump().c_str()));
  }
  const std::string objective = logged.value("objective", std::string("loss"));
  if (objective != mine["objective"])
    diffs.push_back("objective = \"" + objective + "\" in the run, " + mine["objective"].dump() + " here");
  const int64_t their_k = logged.contains("accumulate") ? json_number<int64_t>(logged["accumulate"]).value_or(0) : 1;
  const int64_t my_k = mine.value("accumulate", int64_t{1});
  if (their_k != my_k)
    diffs.push_back(format_string("accumulate = %lld in the run, %lld here", (long long)their_k, (long long)my_k));
  // the examples themselves, when the options that choose them agree (data files edited or swapped)
  bool same_data_options = true;
  for (const char* key : {"task", "data_seed", "n_train", "n_dev", "data_dir"})
    same_data_options = same_data_options && logged.contains(key) && logged[key] == mine[key];
  if (same_data_options && logged.contains("data_fingerprint") && logged["data_fingerprint"] != mine["data_fingerprint"])
    diffs.push_back("the train/dev examples differ (data_fingerprint " + logged["data_fingerprint"].dump() +
                    " in the run, " + mine["data_fingerprint"].dump() + " here)");
  const std::string other_model = model_fingerprint_difference(logged.value("model_fingerprint", nlohmann::json()),
                                                               mine.value("model_fingerprint", nlohmann::json()),
                                                               mine.value("model", ""));
  if (!other_model.empty()) diffs.push_back(other_model);
  if (logged.value("tune", nlohmann::json()) != mine.value("tune", nlohmann::json()))
    diffs.push_back(format_string("tune = %s in the run, %s here", logged.value("tune", nlohmann::json("full")).dump().c_str(),
                                  mine.value("tune", nlohmann::json("full")).dump().c_str()));
  std::string listed;
  for (const std::string& d : diffs) listed += (listed.empty() ? "" : "; ") + d;
  SMEZO_REQUIRE(diffs.empty(), "%s: this command differs from the run in %zu option%s: %s ---> HINT: resume with "
                "the options of the original run", path.c_str(), diffs.size(), diffs.size() == 1 ? "" : "s",
                listed.c_str());
  opt.check_matches(logged.value("spsa", nlohmann::json::object()), path);  // the thresholds
}


// "open 0.01 s, load 0.20 s, ..." in the order the phases ran.
std::string describe_phases(const nlohmann::ordered_json& phases) {
  std::string out;
  for (const auto& kv : phases.items()) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s %.2f s", out.empty() ? "" : ", ", kv.key().c_str(), kv.value().get<double>());
    out += buf;
  }
  return out;
}

// The summary.json of a run that completed o.steps steps, or null.
nlohmann::json completed_summary(const std::string& out_dir, int64_t steps) {
  const std::string path = out_dir + "/summary.json";
  if (!path_exists(path)) return nullptr;
  const nlohmann::json s =
      nlohmann::json::parse(input_read(path, "run summary", kInputSettingsMaxBytes), nullptr, false);
  if (s.is_discarded() || !s.is_object() || s.value("status", std::string()) != "completed" ||
      !s.contains("steps") || s["steps"] != steps)
    return nullptr;
  return s;
}

// The training step the weights in out_dir/checkpoint are from; -1 when there is none or it is damaged
// (*damage says how: a truncated weights file, unreadable settings), so it is rebuilt.
int64_t checkpoint_step(const std::string& out_dir, std::string* damage) {
  const std::string dir = out_dir + "/checkpoint";
  const std::string adapter = dir + "/" + kAdapterWeightsFile, scales = dir + "/" + kScalesMastersFile;
  const std::string weights = path_exists(adapter) ? adapter : path_exists(scales) ? scales : dir + "/model.safetensors";
  if (!path_exists(weights)) return -1;
  try {
    const SafetensorsFile file(weights);  // checks its header and its tensors' extents against its length
    const nlohmann::json run = checkpoint_read_run_settings(dir);
    return run.is_object() && run.contains("step") && run["step"].is_number_integer() ? run["step"].get<int64_t>()
                                                                                      : -1;
  } catch (const Error& e) {
    *damage = e.message();
    return -1;
  }
}

double number_or(const nlohmann::json& j, const char* key, double none) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : none;
}

double host_peak_rss_mb() {
  nlohmann::json j = nlohmann::json::object();
  summary_add_standard_fields(&j);
  return j.value("peak_host_rss_bytes", 0.0) / 1e6;
}

TrainOptions validated(const TrainOptions& o) {
  validate_train_options(o);
  return o;
}

std::string options_warning(const TrainOptions& o) {
  if (*o.spsa.lr <= kLrWarnAbove) return "";
  return format_string("smezo: warning: --lr %g is above %g, where zeroth-order updates usually blow the weights up "
                       "(MeZO uses 1e-7 to 1e-5 on LLMs, stories260K about 1e-3); training anyway", *o.spsa.lr,
                       kLrWarnAbove);
}

// A data-file run uses each file's first rows: o's counts become the rows used; a line if fewer, else "".
std::string use_file_rows(const TaskSplits& s, TrainOptions* o) {
  std::string fewer;
  for (const auto& [split, n, used, file, option] :
       {std::tuple{"train", &o->n_train, s.train.size(), &o->train_file, "--train-examples"},
        std::tuple{"dev", &o->n_dev, s.dev.size(), &o->dev_file, "--dev-examples"},
        std::tuple{"test", &o->n_test, s.test.size(), &o->test_file, "--test-examples"}}) {
    if (!file->empty() && static_cast<int64_t>(used) < *n)
      fewer += format_string("%s%s %zu of %s %lld (%s)", fewer.empty() ? "" : ", ", split, used, option,
                             static_cast<long long>(*n), file->c_str());
    *n = static_cast<int64_t>(used);
  }
  return fewer.empty() ? "" : "data: fewer records than asked for: " + fewer + "; the run uses and records these";
}

// One run on one rank: every rank computes, rank 0's recorder alone writes (phases: docs/ARCHITECTURE.md).
class TrainRun {
 public:
  // splits: the task's examples made by the caller (train_on_splits), or null to load o.task
  TrainRun(const TrainOptions& options, World& world, const TaskSplits* splits = nullptr);
  TrainResult run();

 private:
  void load();
  void load_data();  // the splits, checked; a data-file run's row counts (what it uses)
  WorkspaceRows run_workspace(const ModelConfig& config) const;
  void agree_on_run_folder();
  bool start();  // false: the run had already finished (result_ holds it)
  void complete_finished_run(const nlohmann::json& done, const SeedLog& log);
  void read_history();
  void train_steps();
  void train_step(int64_t step, const std::vector<const EncodedExample*>& fixed,
                  const std::vector<EncodedExample>& dev_subset);
  void record_step(const SpsaStep& s, const std::vector<double>& task_losses,
                   const std::vector<EncodedExample>& dev_subset);
  void record_stop(const Error& e, int64_t steps_done);
  void evaluate_at_end();
  void finish();
  nlohmann::json completed_summary_json(int64_t parameters, int64_t tuned) const;

  Model& model() { return *lm_.model; }
  bool evaluates() const { return !data_.dev.empty(); }  // --dev-examples 0: no dev evaluation at all
  bool tests() const { return !o_.skip_test && !data_.test.empty(); }
  std::string title() const { return splits_.name + " · " + method_name(o_.spsa.method) + " · " + o_.model_path; }
  double evaluate_dev(int64_t step, const std::vector<EncodedExample>& set);
  ProgressOptions progress_options() const;
  TrainingPlotOptions plot_options() const {  // a generation task plots its dev F1
    TrainingPlotOptions p;
    if (splits_.generation) p.dev_label = "dev F1";
    return p;
  }
  // Generation tasks: exact match and F1 of greedy generations instead of candidate accuracy.
  GenerationLimits limits() const { return GenerationLimits{splits_.max_new_tokens, splits_.stop}; }
  GenerationScore evaluate_dev_generation(int64_t step, const std::vector<EncodedExample>& set);
  void evaluate_generation_at_end();
  // Per probe half: what SPSA sees (the task's loss, or 1 - the metric: --objective) and the task's loss.
  ProbeMeasures probe_losses(const std::vector<const EncodedExample*>& batch, const std::vector<Probe>& probes);
  // A step's forward passes: probe_losses averaged over its K minibatches (--accumulate).
  ProbeMeasures step_losses(int64_t step, const std::vector<const EncodedExample*>& fixed,
                            const std::vector<Probe>& probes);
  std::string save_checkpoint(int64_t step);  // "" or why it failed (a warning)

  TrainOptions o_;
  Topology topo_;
  RunRecorder recorder_;  // the run folder's records and terminal lines: rank 0's; no-ops elsewhere
  SteadyClock::time_point t_start_;
  // start-up and end phases, wall seconds in run order (summary.json startup_s, finish_s)
  nlohmann::ordered_json startup_, finish_;
  const TaskSplits* given_splits_;
  TaskSplits splits_;
  LoadedModel lm_;
  EncodedSplits data_;
  std::unique_ptr<SpsaOptimizer> optimizer_;
  nlohmann::json header_;        // the run's identity: the seed log's header
  nlohmann::json fingerprint_parts_;  // this rank's base tensors' (model_fingerprint.h), merged into header_
  nlohmann::json run_settings_;  // what `smezo eval` needs to measure a checkpoint as the run did
  nlohmann::json asked_rows_ = nlohmann::json::object();  // a data-file run's n_train, n_dev as asked
  std::string seed_log_path_;
  int64_t first_step_ = 1;
  bool final_dev_logged_ = false;        // a resumed, already finished run: its final evaluation too
  double train_wall_ = 0;
  TrainResult result_;
};

TrainRun::TrainRun(const TrainOptions& options, World& world, const TaskSplits* splits)
    : o_(validated(resolve_defaults(options))),
      topo_(world, o_.pipeline_stages, o_.micro_batches, o_.device),
      recorder_(world.is_root()),
      given_splits_(splits) {
  recorder_.say(options_warning(o_));
  t_start_ = SteadyClock::now();
}

TrainResult TrainRun::run() {
  load();
  agree_on_run_folder();
  if (!start()) return result_;
  read_history();
  train_steps();
  evaluate_at_end();
  finish();
  return result_;
}

void TrainRun::load_data() {
  if (given_splits_ || o_.task_spec.empty()) {
    splits_ = given_splits_ ? *given_splits_
                            : load_task(o_.task, o_.data_seed, o_.n_train, o_.n_dev, o_.n_test,
                                        o_.data_dir.empty() ? asset_path("data") : o_.data_dir);
  } else {  // your own data; the seed log names the spec's task, so an exported built-in task logs as it
    splits_ = load_task_files({o_.task_spec, o_.train_file, o_.dev_file, o_.test_file}, o_.n_train, o_.n_dev,
                              o_.n_test);
    o_.task = splits_.name;
    asked_rows_ = {{"n_train", o_.n_train}, {"n_dev", o_.n_dev}};
    recorder_.say(use_file_rows(splits_, &o_));
  }
  SMEZO_REQUIRE(!splits_.train.empty(), "task %s has no training examples", o_.task.c_str());
  const int64_t passes = o_.accumulate * (o_.spsa.method == METHOD_FZOO ? o_.spsa.probes + 1 : 2 * o_.spsa.probes);
  recorder_.say(task_candidates_warning(splits_, o_.batch, passes));
  check_objective(o_.objective, splits_.generation, splits_.name);
  if (splits_.generation)  // before any training: a bad example would fail only at evaluation
    for (const auto& [split, xs] : {std::pair{"train", &splits_.train}, {"dev", &splits_.dev}, {"test", &splits_.test}})
      check_generation_examples(*xs, split);
  // greedy decoding and metric objectives run the whole batch on every rank: not split over stages
  SMEZO_REQUIRE(!topo_.pipelined() || (!splits_.generation && o_.objective == OBJECTIVE_LOSS), "train: "
                "--pipeline-stages %d does not run %s yet ---> HINT: use data parallel (no --pipeline-stages)",
                o_.pipeline_stages, splits_.generation ? "generation tasks"
                : (std::string("--objective ") + enum_name(objective_names(), o_.objective)).c_str());
}

// The workspace for this run's batch and length, the length capped at the model's context (after a
// prefix): a probe pair runs two copies of a chunk side by side.
WorkspaceRows TrainRun::run_workspace(const ModelConfig& c) const {
  const int64_t prefix = o_.tune == TUNE_PREFIX ? o_.prefix_tokens : 0;
  const int64_t len = std::max<int64_t>(2, std::min(o_.max_len, c.max_seq_len - prefix));
  const int64_t copies = o_.probe_passes == PROBES_PAIR ? 2 : 1;
  WorkspaceRows ws = workspace_for_batch(o_.batch, len, o_.max_tokens);
  ws.tokens = std::max(ws.tokens, copies * len);
  ws.logit_rows = std::max(ws.logit_rows, copies * len);
  // greedy decoding runs one probe at a time over a prompt (< len) and the tokens generated, within the context
  if (splits_.generation)
    ws.tokens = std::max(ws.tokens, std::min(len + splits_.max_new_tokens, std::max(c.max_seq_len, len)));
  return ws;
}

void TrainRun::load() {
  auto t_phase = SteadyClock::now();
  load_data();
  ModelOpenOptions mo;
  mo.model_path = o_.model_path;
  mo.tokenizer_path = o_.tokenizer_path;
  mo.device = o_.device;
  mo.dtype = o_.dtype;
  mo.linear_path = o_.linear_path;
  mo.graphs = o_.graphs;
  mo.weights = o_.weights;
  mo.workspace = [this](const ModelConfig& c) { return run_workspace(c); };
  if (o_.tune == TUNE_LORA) {  // counted in the memory check before loading; added after it
    mo.adapters.lora_rank = o_.lora_r;
    mo.adapters.lora_targets = lora_targets_parse(o_.lora_targets);
  }
  if (o_.tune == TUNE_PREFIX) mo.adapters.prefix_tokens = o_.prefix_tokens;
  if (o_.tune == TUNE_SCALES) mo.adapters.scales_rows = o_.scales_m ? 2 : 1;
  topo_.select_stage(&mo);  // a pipeline stage loads only its layers
  // a stage's passes exchange hidden states mid-pass; MPI ranks: untested with graphs
  SMEZO_REQUIRE(!o_.graphs || topo_.world().size() == 1,
                "--graphs on: runs of one process only (this one has %d ranks%s) ---> HINT: pass --graphs off "
                "under mpirun", topo_.world().size(), topo_.pipelined() ? " in pipeline stages" : "");
  dist_select_device(topo_.world(), o_.device);
  startup_["data"] = seconds_since(t_phase);
  lm_ = open_model(mo);
  startup_["open"] = lm_.open_s;
  startup_["load"] = lm_.load_s;
  t_phase = SteadyClock::now();
  o_.model_path = lm_.model_path;
  checkpoint_dtype(model(), o_.checkpoint_dtype);  // a bad name fails now, not after training
  const int64_t prefix = o_.tune == TUNE_PREFIX ? o_.prefix_tokens : 0;
  if (prefix > 0) prefix_require_room(prefix, model().config().max_seq_len);  // before the examples are cut to fit
  const int64_t max_len = std::min(o_.max_len, model().config().max_seq_len - prefix);
  data_.train = encode_all(*lm_.tokenizer, splits_.train, max_len);
  data_.dev = encode_all(*lm_.tokenizer, splits_.dev, max_len);
  if (!o_.skip_test) data_.test = encode_all(*lm_.tokenizer, splits_.test, max_len);
  startup_["tokenize"] = seconds_since(t_phase);

  seed_log_path_ = o_.out_dir + "/seed_log.txt";
  // A resumed run continues with its own noise unless the options name one (then it must match).
  if (o_.resume && o_.spsa.noise == NOISE_AUTO && path_exists(seed_log_path_)) {
    const SeedLog log = seed_log_read(seed_log_path_);
    o_.spsa.noise = spsa_logged_noise(log.header.value("spsa", nlohmann::json::object()),
                                      seed_log_header_where(log, seed_log_path_));
  }
  fingerprint_parts_ = model_fingerprint_parts(model());  // of the base weights, before any adapter
  if (o_.tune == TUNE_LORA) {  // adapters from the run seed, so resume and replay rebuild the same ones
    const LoraOptions lora{o_.lora_r, o_.lora_alpha, lora_targets_parse(o_.lora_targets)};
    lora_require_useful_rank(model().params(), lora);
    model().add_lora(lora, o_.spsa.seed);
  }
  if (o_.tune == TUNE_PREFIX) model().add_prefix(PrefixOptions{o_.prefix_tokens}, o_.spsa.seed);  // the same
  if (o_.tune == TUNE_SCALES) model().add_scales(o_.scales_m);  // the file's f16 scales as f32 masters
  t_phase = SteadyClock::now();
  optimizer_ = std::make_unique<SpsaOptimizer>(model(), o_.spsa);  // S-MeZO: the per-tensor thresholds
  optimizer_->set_fold_update(o_.fold_update);  // flushed before every read of W outside a step's passes
  startup_["thresholds"] = seconds_since(t_phase);
  header_ = run_header(o_, *optimizer_, model());
  header_["data_fingerprint"] = task_examples_fingerprint(splits_);  // the examples, wherever they came from
  // the files as absolute paths: `smezo eval` of the checkpoint from any folder scores the run's own rows
  run_settings_ = {{"written_by", "smezo train"}, {"task", splits_.name}, {"max_len", o_.max_len},
                   {"data_seed", o_.data_seed}, {"n_train", o_.n_train}, {"n_dev", o_.n_dev},
                   {"n_test", o_.n_test}, {"data_dir", absolute_path(o_.data_dir)}};
  if (!o_.task_spec.empty())
    run_settings_.update({{"task_spec", absolute_path(o_.task_spec)}, {"train_file", absolute_path(o_.train_file)},
                          {"dev_file", absolute_path(o_.dev_file)}, {"test_file", absolute_path(o_.test_file)}});
}

// The run folder decides fresh start or resume; every rank reads it before rank 0 may write.
void TrainRun::agree_on_run_folder() {
  std::string foreign;
  const RunDirKind kind = run_dir_kind(o_.out_dir, &foreign);
  // one exchange for options and folder kind; pipeline stages' thresholds are compared once merged
  nlohmann::json compared = header_;
  if (topo_.pipelined()) compared["spsa"].erase("thresholds_f32_bits");
  require_same_on_all_ranks(topo_.world(), compared.dump() + "\nrun folder kind " + std::to_string(kind) +
                                               topo_.describe(),
                            "run options (model, data, method)");
  // the seed log header names every tensor's threshold, as one process's does
  header_["spsa"]["thresholds_f32_bits"] =
      topo_.whole_model_object(header_["spsa"]["thresholds_f32_bits"], "the S-MeZO thresholds");
  header_["model_fingerprint"] =
      model_fingerprint(topo_.whole_model_object(fingerprint_parts_, "the model fingerprint"), model().config());
  SMEZO_REQUIRE(!o_.resume || kind != RUN_DIR_OTHER, "--resume: %s is not a smezo run folder: it holds %s and no "
                "seed_log.txt ---> HINT: check --out, or start the run without --resume", o_.out_dir.c_str(),
                foreign.c_str());
  SMEZO_REQUIRE(o_.resume || kind != RUN_DIR_RUN, "%s already holds a run ---> HINT: pass --resume to continue it, "
                "or choose another --out", o_.out_dir.c_str());
  if (o_.resume && kind == RUN_DIR_NOTHING) {
    recorder_.say("resume: nothing is logged in " + o_.out_dir + " yet (the run stopped before its seed log was "
                  "written): starting it at step 1");
    o_.resume = false;
  }
  recorder_.open(o_.out_dir, title(), plot_options());
}

// Start fresh, or rebuild the weights of a killed run from its seed log.
bool TrainRun::start() {
  if (!o_.resume) {
    const int version = o_.spsa.probes > 1 ? 2 : 1;  // one probe per step: log v1
    recorder_.start(header_, o_.flush_every, version, model(), o_.spsa, topo_.pipelined());
    return true;
  }
  const auto t_phase = SteadyClock::now();
  const SeedLog log = seed_log_read(seed_log_path_);
  if (model().has_scales())  // a foreign or changed base GGUF: named before the header's other fields
    scales_require_base(log.header.value("tune", nlohmann::json()), o_.model_path,
                        "--resume: " + seed_log_header_where(log, seed_log_path_));
  check_resume_header(log.header, header_, asked_rows_, *optimizer_, seed_log_path_,
                      seed_log_header_where(log, seed_log_path_));
  if (!run_path_recorded(log.header))
    recorder_.say("resume: " + seed_log_path_ + " records no path (written before smezo recorded it): assuming this "
                  "invocation's, " + run_path_describe(header_));
  const int64_t last = log.records.empty() ? 0 : log.records.back().step;
  // every rank sees the same summary: rank 0 has written nothing since the agreement above
  const nlohmann::json done = last == o_.steps ? completed_summary(o_.out_dir, o_.steps) : nlohmann::json(nullptr);
  if (done.is_object()) {
    complete_finished_run(done, log);
    return false;
  }
  // a start killed before its mask record: the record is of the base weights, held until the replay
  recorder_.write_masks_if_missing(model(), o_.spsa, topo_.pipelined());
  optimizer_->apply_seed_log(log, seed_log_path_);
  first_step_ = last + 1;
  startup_["replay"] = seconds_since(t_phase);
  // every rank has read the log (and replayed the same updates) before rank 0 touches it
  require_same_on_all_ranks(topo_.world(), log.records.empty() ? "" : seed_log_format_record(log.records.back()),
                            "last step in " + seed_log_path_);
  recorder_.resume(first_step_, o_.flush_every, log.records.size());
  return true;
}

// A finished run: its files stay as they are, unless its final checkpoint is missing.
void TrainRun::complete_finished_run(const nlohmann::json& done, const SeedLog& log) {
  result_.steps_done = o_.steps;
  result_.first_loss = number_or(done, "first_loss", 0);
  result_.last_loss = number_or(done, "final_loss", 0);
  result_.final_dev_acc = number_or(done, "final_dev_acc", -1);
  result_.best_dev_acc = number_or(done, "best_dev_acc", -1);
  result_.test_acc = number_or(done, "test_acc", -1);
  result_.final_dev_em = number_or(done, "final_dev_em", -1);
  result_.final_dev_f1 = number_or(done, "final_dev_f1", -1);
  result_.best_dev_f1 = number_or(done, "best_dev_f1", -1);
  result_.test_em = number_or(done, "test_em", -1);
  result_.test_f1 = number_or(done, "test_f1", -1);
  result_.wall_s = number_or(done, "wall_time_s", 0);
  // Rank 0 decides whether the checkpoint is there (its clean-up may have restored checkpoint.old).
  std::string damage;
  const int64_t have_checkpoint =
      topo_.checkpoint_decision(checkpoint_step(o_.out_dir, &damage), "the final checkpoint's step");
  if (!topo_.writes_checkpoint()) return;  // a data-parallel replica: nothing to rebuild
  const std::string steps = std::to_string(o_.steps);
  if (have_checkpoint == o_.steps)
    return recorder_.say("run already finished at step " + steps + " (" + o_.out_dir + "/summary.json); nothing to do");
  recorder_.say("run already finished at step " + steps + ", but its final checkpoint is " +
                (damage.empty() ? "missing" : "damaged (" + damage + ")") + ": rebuilding it from the seed log");
  optimizer_->apply_seed_log(log, seed_log_path_);
  nlohmann::json summary = done;  // a later pipeline stage serves rank 0 its tensors and records nothing
  result_.checkpoint_error = save_checkpoint(o_.steps);
  summary["checkpoint"]["status"] = result_.checkpoint_error.empty() ? "written (rebuilt from the seed log)"
                                                                     : "failed: " + result_.checkpoint_error;
  recorder_.write_summary(summary);
}

// The loss and accuracy history of the steps already run, from the metrics file (rank 0's recorder).
void TrainRun::read_history() {
  const char* dev_key = splits_.generation ? "dev_f1" : "dev_acc";  // what the plot shows
  double& best_dev = splits_.generation ? result_.best_dev_f1 : result_.best_dev_acc;
  for (const nlohmann::json& rec : recorder_.logged_metrics()) {
    if (rec.contains("loss") && rec["loss"].is_number()) {
      recorder_.plot_loss(rec["step"], rec["loss"]);
      if (rec["step"] == 1) result_.first_loss = rec["loss"].get<double>();
      result_.last_loss = rec["loss"].get<double>();  // a resume with no step left to run
    }
    if (rec.contains(dev_key) && rec["step"] == o_.steps && rec.value("dev_examples", 0) == (int64_t)data_.dev.size())
      final_dev_logged_ = true;
    if (rec.contains(dev_key) && rec[dev_key].is_number()) {
      recorder_.plot_dev(rec["step"], rec[dev_key]);
      best_dev = std::max(best_dev, rec[dev_key].get<double>());
    }
  }
}

ProgressOptions TrainRun::progress_options() const {
  ProgressOptions po;
  po.total_steps = o_.steps;
  po.start_step = first_step_ - 1;
  if (splits_.generation) po.dev_label = "dev F1";
  po.plain_every = o_.progress_every > 0 ? o_.progress_every : std::max<int64_t>(1, o_.steps / kProgressLinesPerRun);
  return po;
}

// One step: its probes, their forward passes, the update from their losses, then its records.
void TrainRun::train_step(int64_t step, const std::vector<const EncodedExample*>& fixed,
                          const std::vector<EncodedExample>& dev_subset) {
  const auto t_step = SteadyClock::now();
  const std::vector<Probe> probes = optimizer_->probes(step, o_.probe_passes == PROBES_PAIR);
  const ProbeMeasures losses = step_losses(step, fixed, probes);  // the forward passes
  const SpsaStep s = optimizer_->finish(step, losses.objective);  // g, then the update (held under the fold)
  if (step == first_step_) startup_["first_step"] = seconds_since(t_step);
  record_step(s, losses.loss, dev_subset);
}

void TrainRun::train_steps() {
  const std::vector<EncodedExample> dev_subset =
      o_.eval_examples > 0 && o_.eval_examples < (int64_t)data_.dev.size()
          ? std::vector<EncodedExample>(data_.dev.begin(), data_.dev.begin() + o_.eval_examples)
          : data_.dev;
  const std::vector<const EncodedExample*> fixed = minibatch(data_.train, o_.batch, o_.data_seed, 1);
  recorder_.start_progress(progress_options());
  int64_t step = first_step_;
  const auto t_loop = SteadyClock::now();
  try {
    for (; step <= o_.steps; step++) train_step(step, fixed, dev_subset);
  } catch (const Error& e) {
    record_stop(e, step - 1);  // a non-finite loss: W is untouched, so the log so far and any checkpoint stay good
    throw;
  }
  optimizer_->flush_updates();  // the run's end: the last step's update
  recorder_.end_steps();
  result_.steps_done = o_.steps;
  train_wall_ = seconds_since(t_loop);
}

ProbeMeasures TrainRun::step_losses(int64_t step, const std::vector<const EncodedExample*>& fixed,
                                    const std::vector<Probe>& probes) {
  ProbeMeasures sum;
  for (int64_t k = 0; k < o_.accumulate; k++) {
    const auto batch = o_.fixed_batch ? fixed : minibatch(data_.train, o_.batch, o_.data_seed,
                                                          accumulated_minibatch(step, k, o_.accumulate));
    const ProbeMeasures m = probe_losses(batch, probes);
    add_into(&sum.objective, m.objective);
    add_into(&sum.loss, m.loss);
  }
  const double k = static_cast<double>(o_.accumulate);  // K = 1: l / 1 = l exactly
  for (std::vector<double>* v : {&sum.objective, &sum.loss})
    for (double& l : *v) l /= k;
  return sum;
}

ProbeMeasures TrainRun::probe_losses(const std::vector<const EncodedExample*>& batch,
                                     const std::vector<Probe>& probes) {
  // a generation task trains on its completion's tokens (the gold-token cross-entropy)
  const bool as_classification = splits_.train_as_classification && !splits_.generation;
  if (o_.objective == OBJECTIVE_LOSS) {
    std::vector<double> loss = topo_.losses(model(), batch, probes, as_classification);
    return {loss, loss};
  }
  MetricBatch mb{&batch, {}, as_classification};
  if (splits_.generation) mb.references = references_of(batch, data_.train, splits_.train);
  // every rank measures the whole batch (data parallel: the same numbers on each)
  return measure_metric_objective(model(), *lm_.tokenizer, o_.objective, mb, probes, limits());
}

// A step into the results, metrics, progress and seed log; then any evaluation and checkpoint due.
void TrainRun::record_step(const SpsaStep& s, const std::vector<double>& task_losses,
                           const std::vector<EncodedExample>& dev_subset) {
  const int64_t step = s.step;
  // with --objective accuracy|f1 SPSA saw 1 - the metric (s's losses); the task loss is logged beside it
  const bool metric = o_.objective != OBJECTIVE_LOSS, fzoo = o_.spsa.method == METHOD_FZOO;
  double loss = s.loss, loss_plus = s.loss_plus, loss_minus = s.loss_minus;
  if (metric) {  // task_losses in the order of s.losses (fzoo: l_0 first)
    loss = fzoo ? task_losses.at(0) : mean_of(task_losses);
    loss_plus = task_losses.at(fzoo ? 1 : 0);
    loss_minus = task_losses.at(fzoo ? 0 : 1);
  }
  if (step == 1) result_.first_loss = loss;
  result_.last_loss = loss;
  // Metrics (and evaluation) before the seed log: a kill between leaves lines resume drops, never a gap.
  nlohmann::json m = {{"step", step}, {"loss", loss}, {"loss_plus", loss_plus}, {"loss_minus", loss_minus},
                      {"g", s.g}, {"lr", s.lr}};
  if (metric)
    m.update({{"objective", enum_name(objective_names(), o_.objective)}, {"objective_value", s.loss},
              {"objective_plus", s.loss_plus}, {"objective_minus", s.loss_minus}});
  if (s.probes.size() > 1) {  // several probes: each one's g and every half's loss (metric: objective)
    m["probe_g"] = nlohmann::json::array();
    for (const SeedProbe& p : s.probes) m["probe_g"].push_back(p.g);
    m["losses"] = s.losses;
    if (metric) m["task_losses"] = task_losses;
  }
  if (fzoo) m["sigma"] = s.sigma;
  recorder_.step(m, step, loss);
  if (evaluates() && o_.eval_every > 0 && step % o_.eval_every == 0 && step < o_.steps)
    recorder_.dev_shown(evaluate_dev(step, dev_subset), step);  // a generation task's F1
  recorder_.seed(s.record());
  if (o_.checkpoint_every > 0 && step % o_.checkpoint_every == 0 && step < o_.steps) {
    recorder_.flush_seed_log();
    save_checkpoint(step);  // a failure warns; training goes on
  }
}

// When a step stops the run: the log so far made durable, and a summary saying why.
void TrainRun::record_stop(const Error& e, int64_t steps_done) {
  recorder_.end_steps();
  const std::string status = "stopped: " + e.message();  // the hint goes to the terminal, not into the record
  nlohmann::json summary = {{"status", status}, {"task", splits_.name}, {"steps_done", steps_done},
                            {"hyperparameters", header_}, {"startup_s", startup_}};
  summary_add_standard_fields(&summary);
  recorder_.write_summary(summary);
}

double TrainRun::evaluate_dev(int64_t step, const std::vector<EncodedExample>& set) {
  optimizer_->flush_updates();  // the fold: evaluation reads W unperturbed
  if (splits_.generation) return evaluate_dev_generation(step, set).f1;
  const double acc = topo_.accuracy(model(), set, o_.batch);
  recorder_.dev({{"step", step}, {"dev_acc", acc}, {"dev_examples", set.size()}}, step, acc);
  result_.best_dev_acc = std::max(result_.best_dev_acc, acc);
  return acc;
}

// Every rank decodes the whole set (data parallel: the same texts on each).
GenerationScore TrainRun::evaluate_dev_generation(int64_t step, const std::vector<EncodedExample>& set) {
  const GenerationScore g = evaluate_generation(model(), *lm_.tokenizer, set, splits_.dev, limits(), o_.batch);
  recorder_.dev({{"step", step}, {"dev_em", g.exact_match}, {"dev_f1", g.f1}, {"dev_examples", set.size()}}, step,
                g.f1);
  if (step < o_.steps)
    recorder_.message(format_string("step %lld: dev EM %s, F1 %s (%zu examples)", (long long)step,
                                    format_accuracy(g.exact_match).c_str(), format_accuracy(g.f1).c_str(), set.size()));
  result_.best_dev_f1 = std::max(result_.best_dev_f1, g.f1);
  return g;
}

void TrainRun::evaluate_generation_at_end() {
  if (evaluates()) {
    const GenerationScore dev =
        final_dev_logged_  // resumed after the end: measure again, do not log it twice
            ? evaluate_generation(model(), *lm_.tokenizer, data_.dev, splits_.dev, limits(), o_.batch)
            : evaluate_dev_generation(o_.steps, data_.dev);
    result_.final_dev_em = dev.exact_match;
    result_.final_dev_f1 = dev.f1;
  }
  if (tests()) {
    const GenerationScore test = evaluate_generation(model(), *lm_.tokenizer, data_.test, splits_.test, limits(), o_.batch);
    result_.test_em = test.exact_match;
    result_.test_f1 = test.f1;
  }
}

void TrainRun::evaluate_at_end() {
  optimizer_->flush_updates();  // nothing is held after train_steps: this read too is flushed
  const bool test = tests();
  const auto t_phase = SteadyClock::now();
  if (evaluates() || test)
    recorder_.say("evaluating on " + (evaluates() ? std::to_string(data_.dev.size()) + " dev" : "") +
                  (evaluates() && test ? " and " : "") + (test ? std::to_string(data_.test.size()) + " test" : "") +
                  " examples...");
  if (splits_.generation) {
    evaluate_generation_at_end();
  } else if (!evaluates()) {
    result_.final_dev_acc = -1;
  } else if (final_dev_logged_) {  // resumed after the end: measure again, do not log it twice
    result_.final_dev_acc = topo_.accuracy(model(), data_.dev, o_.batch);
  } else {
    result_.final_dev_acc = evaluate_dev(o_.steps, data_.dev);
  }
  if (test && !splits_.generation) result_.test_acc = topo_.accuracy(model(), data_.test, o_.batch);
  finish_["evaluation"] = seconds_since(t_phase);
  result_.wall_s = seconds_since(t_start_);
}

// A failed checkpoint is a warning: the seed log holds the run, and smezo replay rebuilds it.
std::string TrainRun::save_checkpoint(int64_t step) {
  optimizer_->flush_updates();  // every rank that saves: a held update would make download throw
  nlohmann::json settings = run_settings_;
  settings["step"] = step;
  const std::string dir = o_.out_dir + "/checkpoint";
  const bool adapter = model().has_lora() || model().has_prefix() || model().has_scales();
  if (!topo_.root()) {  // a pipeline stage serves rank 0 its tensors (an adapter's: rank 0 alone); others: nothing
    if (!adapter) topo_.save_checkpoint(model(), dir, lm_.tokenizer_path, settings, o_.checkpoint_dtype);
    return "";
  }
  try {
    if (model().has_lora())
      save_lora_adapter(model(), dir, o_.model_path, settings);  // PEFT's adapter folder
    else if (model().has_prefix())
      save_prefix_adapter(model(), dir, o_.model_path, settings);
    else if (model().has_scales())
      save_scales_checkpoint(model(), dir, o_.model_path,  // a GGUF of the base's types and size
                             scales_provenance(header_, o_.model_path, step, absolute_path(seed_log_path_), "smezo train"),
                             settings);
    else
      topo_.save_checkpoint(model(), dir, lm_.tokenizer_path, settings, o_.checkpoint_dtype);
    return "";
  } catch (const PeerTimeout&) {
    throw;  // a pipeline stage is gone: the job cannot go on
  } catch (const Error& e) {
    std::fprintf(stderr, "smezo: warning: the checkpoint of step %lld was not written: %s\n", (long long)step,
                 e.what());
    return e.message();
  }
}

void TrainRun::finish() {
  // a pipeline stage holds part of the model: the counts are added over the stages
  const int64_t parameters = topo_.sum_over_model(model(), [](const Param& p) { return p.w.numel(); });
  const int64_t tuned =
      topo_.sum_over_model(model(), [](const Param& p) { return p.info.trainable ? p.w.numel() : int64_t{0}; });
  recorder_.write_plot();
  // The summary is durable before the final checkpoint is tried, then rewritten with its status.
  nlohmann::json summary = completed_summary_json(parameters, tuned);
  recorder_.write_summary(summary);
  const auto t_phase = SteadyClock::now();
  result_.checkpoint_error = save_checkpoint(o_.steps);
  finish_["checkpoint"] = seconds_since(t_phase);
  summary["finish_s"] = finish_;
  summary["checkpoint"]["status"] = result_.checkpoint_error.empty() ? "written" : "failed: " + result_.checkpoint_error;
  recorder_.write_summary(summary);
  std::string done = !evaluates()        ? std::string("no dev evaluation")
                     : splits_.generation ? "dev EM " + format_accuracy(result_.final_dev_em) + ", F1 " +
                                                format_accuracy(result_.final_dev_f1) + " (best F1 " +
                                                format_accuracy(result_.best_dev_f1) + ")"
                                          : "dev acc " + format_accuracy(result_.final_dev_acc) + " (best " +
                                                format_accuracy(result_.best_dev_acc) + ")";
  if (tests())
    done += splits_.generation ? ", test EM " + format_accuracy(result_.test_em) + ", F1 " + format_accuracy(result_.test_f1)
                               : ", test acc " + format_accuracy(result_.test_acc);
  if (!result_.checkpoint_error.empty())
    done += "; no final checkpoint (see the warning; once fixed, the same command with --resume writes it)";
  recorder_.say("start-up: " + describe_phases(startup_) + "; end: " + describe_phases(finish_));
  recorder_.say("done: " + done + ", " + o_.out_dir + "/summary.json");
}

// summary.json of a completed run, its final checkpoint still being written.
nlohmann::json TrainRun::completed_summary_json(int64_t parameters, int64_t tuned) const {
  nlohmann::json summary;
  summary["status"] = "completed";
  summary["task"] = splits_.name;
  summary["split_note"] = splits_.split_note;
  summary["sizes"] = {{"train", splits_.train.size()}, {"dev", splits_.dev.size()}, {"test", splits_.test.size()}};
  summary["method"] = method_name(o_.spsa.method);
  summary["noise"] = noise_name(optimizer_->options().noise);  // the kind the run used (never "auto")
  summary["probes"] = enum_name(probe_passes_names(), o_.probe_passes);
  summary["fold_update"] = o_.fold_update;  // --fold-update: the same bits either way, not the same time
  for (const char* key : {"linear_path", "weight_block_bytes", "graphs"})  // resolved (run_path.h)
    summary[key] = header_[key];
  summary["pipeline_stages"] = o_.pipeline_stages;  // 1: every rank holds the whole model
  summary["micro_batches"] = topo_.pipelined() ? nlohmann::json(topo_.micro_batches()) : nlohmann::json(nullptr);
  summary["model"] = o_.model_path;
  summary["device"] = lm_.backend->name();
  summary["ranks"] = topo_.world().size();  // MPI ranks: pipeline stages × data-parallel replicas (1: one process)
  summary["hyperparameters"] = header_;
  summary["hyperparameters"]["spsa"].erase("thresholds_f32_bits");  // in the seed log
  summary["parameters"] = parameters;
  // entries of the tensors that are tuned; S-MeZO/R-MeZO masks then pick a subset of the linear ones
  summary["parameters_in_tuned_tensors"] = tuned;
  summary["steps"] = o_.steps;
  summary["resumed_at_step"] = o_.resume ? nlohmann::json(first_step_) : nlohmann::json(nullptr);
  summary["first_loss"] = result_.first_loss;
  summary["final_loss"] = result_.last_loss;
  auto measured = [](double acc) { return acc >= 0 ? nlohmann::json(acc) : nlohmann::json(nullptr); };
  summary["final_dev_acc"] = measured(result_.final_dev_acc);  // null: no dev evaluation
  summary["best_dev_acc"] = measured(result_.best_dev_acc);
  summary["test_acc"] = measured(result_.test_acc);            // null: --skip-test or no test set
  summary["objective"] = enum_name(objective_names(), o_.objective);
  if (splits_.generation) {  // exact match and token F1 of greedy generations (SQuAD v1.1)
    summary["final_dev_em"] = measured(result_.final_dev_em);
    summary["final_dev_f1"] = measured(result_.final_dev_f1);
    summary["best_dev_f1"] = measured(result_.best_dev_f1);
    summary["test_em"] = measured(result_.test_em);
    summary["test_f1"] = measured(result_.test_f1);
  }
  summary["wall_time_s"] = result_.wall_s;
  const int64_t steps_run = o_.steps - first_step_ + 1;
  summary["steps_per_s"] = steps_run > 0 ? nlohmann::json(steps_run / train_wall_) : nlohmann::json(nullptr);
  summary["peak_backend_memory_MB"] = lm_.backend->bytes_allocated() / 1e6;
  summary["estimated_backend_memory_MB"] = lm_.estimate.total / 1e6;
  summary["startup_s"] = startup_;
  summary["finish_s"] = finish_;
  summary["peak_host_memory_MB"] = host_peak_rss_mb();
  summary["checkpoint"] = {{"dir", "checkpoint"}, {"step", o_.steps},
                           {"dtype", dtype_name(checkpoint_dtype(*lm_.model, o_.checkpoint_dtype))},
                           {"status", "writing"}};
  summary_add_standard_fields(&summary);
  return summary;
}

}  // namespace

TrainResult train_on_splits(const TrainOptions& o, const TaskSplits& splits) {
  return TrainRun(o, dist_world(), &splits).run();
}

TrainResult train(const TrainOptions& o) {
  World& world = dist_world();
  world.set_timeout_s(o.mpi_timeout_s);
  if (world.size() == 1) return TrainRun(o, world).run();
  try {
    return TrainRun(o, world).run();
  } catch (const std::exception& e) {  // one rank's error ends the whole job, naming the rank
    world.abort_job(e.what());
  }
}

}  // namespace smezo
