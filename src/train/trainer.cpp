// The training driver (see trainer.h).
#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>

#include "setup/model_setup.h"
#include "common/assets.h"
#include "common/check.h"
#include "common/file_util.h"
#include "common/stopwatch.h"
#include "dist/device.h"
#include "dist/world.h"
#include "run/metrics_log.h"
#include "run/number_format.h"
#include "run/progress_bar.h"
#include "run/run_dir.h"
#include "run/seed_log.h"
#include "run/summary.h"
#include "run/svg_plot.h"
#include "tasks/task_data.h"
#include "tasks/task_encode.h"
#include "train/checkpoint.h"
#include "train/data_parallel.h"
#include "train/objective.h"
#include "train/pipeline.h"

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

nlohmann::json run_header(const TrainOptions& o, const SpsaOptimizer& opt, Model& model) {
  nlohmann::json h;
  // Updates round to the storage dtype, so replay and resume must store weights the same way.
  h["storage_dtype"] = dtype_name(model.params().front()->w.dtype);
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
  return h;
}

// Refuses a resume whose options differ from the run's, listing every differing option at once.
void check_resume_header(const nlohmann::json& logged, const nlohmann::json& mine, const SpsaOptimizer& opt,
                         const std::string& path) {
  std::vector<std::string> diffs = opt.differences(logged.value("spsa", nlohmann::json::object()), path);
  for (const char* key : {"task", "data_seed", "n_train", "n_dev", "data_dir", "batch", "max_len",
                          "fixed_batch", "storage_dtype", "device"}) {
    if (!logged.contains(key) || logged[key] != mine[key])
      diffs.push_back(format_string("%s = %s in the run, %s here", key,
                                    logged.contains(key) ? logged[key].dump().c_str() : "(missing)",
                                    mine[key].dump().c_str()));
  }
  std::string listed;
  for (const std::string& d : diffs) listed += (listed.empty() ? "" : "; ") + d;
  SMEZO_REQUIRE(diffs.empty(), "%s: this command differs from the run in %zu option%s: %s ---> HINT: resume with "
                "the options of the original run", path.c_str(), diffs.size(), diffs.size() == 1 ? "" : "s",
                listed.c_str());
  opt.check_matches(logged.value("spsa", nlohmann::json::object()), path);  // the thresholds
}

using Clock = SteadyClock;

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
  std::ifstream in(out_dir + "/summary.json", std::ios::binary);
  if (!in.good()) return nullptr;
  const nlohmann::json s = nlohmann::json::parse(in, nullptr, false);
  if (s.is_discarded() || !s.is_object() || s.value("status", std::string()) != "completed" ||
      !s.contains("steps") || s["steps"] != steps)
    return nullptr;
  return s;
}

// The training step the weights in out_dir/checkpoint are from; -1 when there is none.
int64_t checkpoint_step(const std::string& out_dir) {
  const std::string dir = out_dir + "/checkpoint";
  if (!path_exists(dir + "/model.safetensors")) return -1;
  const nlohmann::json run = checkpoint_read_run_settings(dir);
  return run.is_object() && run.contains("step") && run["step"].is_number_integer() ? run["step"].get<int64_t>() : -1;
}

double json_number(const nlohmann::json& j, const char* key, double none) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : none;
}

double host_peak_rss_mb() {
  nlohmann::json j = nlohmann::json::object();
  summary_add_standard_fields(&j);
  return j.value("peak_host_rss_bytes", 0.0) / 1e6;
}

}  // namespace

// The run on every rank of `world` (one process: the world of one). Every rank computes;
// rank 0 alone writes (seed log, metrics, plot, checkpoints, summary, progress).
static TrainResult train_on_ranks(const TrainOptions& in, World& world) {
  const bool root = world.is_root();
  TrainOptions o = in;
  SMEZO_REQUIRE(!o.out_dir.empty(), "train: an output directory is required (--out DIR)");
  SMEZO_REQUIRE(o.batch > 0 && o.steps > 0, "train: --batch %lld and --steps %lld must be positive", (long long)o.batch,
                (long long)o.steps);
  SMEZO_REQUIRE(o.max_len >= 2, "train: --max-len %lld is too small: at least 2 (BOS and one option token)",
                (long long)o.max_len);
  SMEZO_REQUIRE(o.flush_every > 0, "train: --flush-every must be positive");
  SMEZO_REQUIRE(std::isfinite(o.spsa.lr) && std::isfinite(o.spsa.eps) && std::isfinite(o.spsa.weight_decay),
                "train: --lr %g, --eps %g and --weight-decay %g must be finite numbers", o.spsa.lr, o.spsa.eps,
                o.spsa.weight_decay);
  if (o.spsa.lr > kLrWarnAbove && root)
    std::fprintf(stderr, "smezo: warning: --lr %g is above %g, where zeroth-order updates usually blow the "
                 "weights up (MeZO uses 1e-7 to 1e-5 on LLMs, stories260K about 1e-3); training anyway\n",
                 o.spsa.lr, kLrWarnAbove);
  SMEZO_REQUIRE(o.pipeline_stages >= 1 && o.micro_batches >= 0, "train: --pipeline-stages %d must be at least 1 "
                "and --micro-batches %lld at least 0", o.pipeline_stages, (long long)o.micro_batches);
  const bool pipelined = o.pipeline_stages > 1;
  SMEZO_REQUIRE(!pipelined || world.size() > 1, "--pipeline-stages %d splits the model over %d MPI ranks, but this is "
                "one process ---> HINT: mpirun -np %d smezo train ... (a build with MPI: make info shows ✓ MPI)",
                o.pipeline_stages, o.pipeline_stages, o.pipeline_stages);
  const PipelineLayout layout = pipelined ? pipeline_layout(world, o.pipeline_stages) : PipelineLayout{};
  // Micro-batches in flight (per probe with --probes separate): a bubble of (K-1)/(m+K-1) of the
  // step, but each one regenerates the noise of every weight it passes. Default: K on cuda
  // (compute-bound GEMMs: the overlap wins), 1 on cpu (noise-bound: measured in RESULTS.md).
  const int64_t micro_batches =
      o.micro_batches > 0 ? o.micro_batches : o.device == "cuda" ? int64_t{o.pipeline_stages} : 1;
  // the later stages of the first pipeline hand their tensors to rank 0 for checkpoints
  const bool serves_checkpoint = pipelined && layout.replica == 0 && !layout.first_stage();
  o.spsa.total_steps = o.steps;
  if (o.data_seed == 0) o.data_seed = o.spsa.seed;
  spsa_validate(o.spsa);
  const auto t_start = std::chrono::steady_clock::now();
  // Start-up and end phases, wall seconds, in the order they run (summary.json "startup_s",
  // "finish_s", and one line on screen).
  nlohmann::ordered_json startup, finish;
  auto t_phase = Clock::now();

  TaskSplits splits = load_task(o.task, o.data_seed, o.n_train, o.n_dev, o.n_test,
                                o.data_dir.empty() ? asset_path("data") : o.data_dir);
  SMEZO_REQUIRE(!splits.train.empty(), "task %s has no training examples", o.task.c_str());
  ModelOpenOptions mo;
  mo.model_path = o.model_path;
  mo.tokenizer_path = o.tokenizer_path;
  mo.device = o.device;
  mo.dtype = o.dtype;
  // The workspace is sized from the run's batch and length (memory_estimate.h), not a fixed
  // token count: device memory = weights + what this batch needs. A probe pair runs two copies
  // of a chunk side by side: room for two longest candidates (on every rank: data-parallel
  // shards and pipeline micro-batches run the pair too).
  const bool probe_pair = o.probe_pair;
  const int64_t copies = probe_pair ? 2 : 1;
  const WorkspaceRows ws = workspace_for_batch(o.batch, o.max_len, o.max_tokens);
  mo.max_tokens = std::max(ws.tokens, copies * o.max_len);
  mo.max_logit_rows = std::max(ws.logit_rows, copies * o.max_len);
  if (pipelined) {  // this rank's stage: only its layers are loaded
    mo.stage_index = layout.stage;
    mo.stage_count = layout.stages;
  }
  dist_select_device(world, o.device);
  startup["data"] = seconds_since(t_phase);
  LoadedModel lm = open_model(mo);
  startup["open"] = lm.open_s;
  startup["load"] = lm.load_s;
  t_phase = Clock::now();
  o.model_path = lm.model_path;
  Model& model = *lm.model;
  checkpoint_dtype(model, o.checkpoint_dtype);  // a bad name fails now, not after training
  const int64_t max_len = std::min(o.max_len, model.config().max_seq_len);
  EncodedSplits data;
  data.train = encode_all(*lm.tokenizer, splits.train, max_len);
  data.dev = encode_all(*lm.tokenizer, splits.dev, max_len);
  if (!o.skip_test) data.test = encode_all(*lm.tokenizer, splits.test, max_len);
  startup["tokenize"] = seconds_since(t_phase);

  const std::string seed_log_path = o.out_dir + "/seed_log.txt", metrics_path = o.out_dir + "/metrics.jsonl";
  // A resumed run continues with its own noise unless the options name one (then it must match).
  if (o.resume && o.spsa.noise == NOISE_AUTO && path_exists(seed_log_path))
    o.spsa.noise = spsa_logged_noise(seed_log_read(seed_log_path).header.value("spsa", nlohmann::json::object()),
                                     seed_log_path);
  t_phase = Clock::now();
  SpsaOptimizer optimizer(model, o.spsa);  // S-MeZO: the per-tensor thresholds
  startup["thresholds"] = seconds_since(t_phase);
  nlohmann::json header = run_header(o, optimizer, model);
  // The run folder: what it holds decides between a fresh start and a resume, before any write
  // (every rank reads it: ranks share the file system; the agreement below orders it before
  // rank 0 writes anything).
  std::string foreign;
  const RunDirKind kind = run_dir_kind(o.out_dir, &foreign);
  // one exchange for both (tests/test_mpi.cpp counts the exchanges): a rank that saw the folder
  // differently is reported with the run options
  // (pipeline stages hold the thresholds of their own tensors: compared once merged)
  nlohmann::json compared = header;
  if (pipelined) compared["spsa"].erase("thresholds_f32_bits");
  require_same_on_all_ranks(world, compared.dump() + "\nrun folder kind " + std::to_string(kind) +
                                       (pipelined ? "\npipeline stages " + std::to_string(o.pipeline_stages) +
                                                        ", micro-batches " + std::to_string(micro_batches)
                                                  : ""),
                            "run options (model, data, method)");
  if (pipelined)  // the seed log header names every tensor's threshold, as one process's does
    header["spsa"]["thresholds_f32_bits"] =
        pipeline_merge_objects(world, header["spsa"]["thresholds_f32_bits"], "the S-MeZO thresholds");
  SMEZO_REQUIRE(!o.resume || kind != RUN_DIR_OTHER, "--resume: %s is not a smezo run folder: it holds %s and no "
                "seed_log.txt ---> HINT: check --out, or start the run without --resume", o.out_dir.c_str(),
                foreign.c_str());
  SMEZO_REQUIRE(o.resume || kind != RUN_DIR_RUN, "%s already holds a run ---> HINT: pass --resume to continue it, "
                "or choose another --out", o.out_dir.c_str());
  if (o.resume && kind == RUN_DIR_NOTHING) {
    if (root)
      std::fprintf(stderr, "resume: nothing is logged in %s yet (the run stopped before its seed log was written): "
                   "starting it at step 1\n", o.out_dir.c_str());
    o.resume = false;
  }
  std::error_code mkdir_error;
  if (root) std::filesystem::create_directories(o.out_dir, mkdir_error);
  if (mkdir_error) throw_write_error("create the run folder", o.out_dir, mkdir_error.value());
  std::optional<RunDirLock> lock;
  if (root) {
    lock.emplace(run_dir_lock(o.out_dir));
    std::string cleaned;
    for (const std::string& name : run_dir_clean(o.out_dir)) cleaned += (cleaned.empty() ? "" : ", ") + name;
    if (!cleaned.empty())
      std::fprintf(stderr, "removed what an interrupted write left in %s: %s\n", o.out_dir.c_str(), cleaned.c_str());
  }

  // Start fresh, or rebuild the weights of a killed run from its seed log.
  int64_t first_step = 1;
  std::unique_ptr<SeedLogWriter> seed_log;
  TrainResult result;
  // What `smezo eval` needs to measure this run's checkpoint as the run did (checkpoint.h).
  const nlohmann::json run_settings = {{"written_by", "smezo train"}, {"task", splits.name}, {"max_len", o.max_len},
                                       {"data_seed", o.data_seed}, {"n_train", o.n_train}, {"n_dev", o.n_dev},
                                       {"n_test", o.n_test}, {"data_dir", o.data_dir}};
  // A failed checkpoint is a warning: the seed log holds the run, and smezo replay rebuilds it.
  auto save_checkpoint = [&](int64_t step) -> std::string {
    if (serves_checkpoint) {
      pipeline_serve_checkpoint(world, layout, model);
      return "";
    }
    if (!root) return "";
    nlohmann::json settings = run_settings;
    settings["step"] = step;
    try {
      if (pipelined)
        save_hf_checkpoint(pipeline_checkpoint_source(world, layout, model), o.out_dir + "/checkpoint",
                           lm.tokenizer_path, settings, o.checkpoint_dtype);
      else
        save_hf_checkpoint(model, o.out_dir + "/checkpoint", lm.tokenizer_path, settings, o.checkpoint_dtype);
      return "";
    } catch (const PeerTimeout&) {
      throw;  // a pipeline stage is gone: the job cannot go on
    } catch (const Error& e) {
      std::fprintf(stderr, "smezo: warning: the checkpoint of step %lld was not written: %s\n", (long long)step,
                   e.what());
      return e.message();
    }
  };
  if (o.resume) {
    t_phase = Clock::now();
    SeedLog log = seed_log_read(seed_log_path);
    check_resume_header(log.header, header, optimizer, seed_log_path);
    auto replay_log = [&] {
      for (const SeedRecord& r : log.records) {
        SMEZO_REQUIRE(r.seed == optimizer.step_seed(r.step), "%s: step %lld has seed %llu, expected %llu",
                      seed_log_path.c_str(), (long long)r.step, (unsigned long long)r.seed,
                      (unsigned long long)optimizer.step_seed(r.step));
        optimizer.apply_update(r.seed, r.g, r.lr);
      }
    };
    const int64_t last = log.records.empty() ? 0 : log.records.back().step;
    // every rank sees the same summary: rank 0 has written nothing since the agreement above
    const nlohmann::json done = last == o.steps ? completed_summary(o.out_dir, o.steps) : nlohmann::json(nullptr);
    if (done.is_object()) {
      // A finished run: its files stay as they are, unless its final checkpoint is missing.
      result.steps_done = o.steps;
      result.first_loss = json_number(done, "first_loss", 0);
      result.last_loss = json_number(done, "final_loss", 0);
      result.final_dev_acc = json_number(done, "final_dev_acc", -1);
      result.best_dev_acc = json_number(done, "best_dev_acc", -1);
      result.test_acc = json_number(done, "test_acc", -1);
      result.wall_s = json_number(done, "wall_time_s", 0);
      // Rank 0 decides whether the checkpoint is there (its clean-up may just have restored
      // checkpoint.old); a pipeline's stages follow its answer, as they must serve it tensors.
      int64_t have_checkpoint = checkpoint_step(o.out_dir);
      if (pipelined) have_checkpoint = value_of_rank0(world, have_checkpoint, "the final checkpoint's step");
      if (!root && !serves_checkpoint) return result;
      if (have_checkpoint == o.steps) {
        if (root)
          std::fprintf(stderr, "run already finished at step %lld (%s/summary.json); nothing to do\n",
                       (long long)o.steps, o.out_dir.c_str());
        return result;
      }
      if (root)
        std::fprintf(stderr, "run already finished at step %lld, but its final checkpoint is missing: rebuilding "
                     "it from the seed log\n", (long long)o.steps);
      replay_log();
      if (!root) {  // a later pipeline stage: its tensors go to rank 0
        save_checkpoint(o.steps);
        return result;
      }
      nlohmann::json summary = done;
      result.checkpoint_error = save_checkpoint(o.steps);
      summary["checkpoint"]["status"] = result.checkpoint_error.empty() ? "written (rebuilt from the seed log)"
                                                                        : "failed: " + result.checkpoint_error;
      summary_write(o.out_dir + "/summary.json", summary);
      return result;
    }
    replay_log();
    first_step = log.records.empty() ? 1 : log.records.back().step + 1;
    startup["replay"] = seconds_since(t_phase);
    // every rank has read the log (and replayed the same updates) before rank 0 touches it
    require_same_on_all_ranks(world, log.records.empty() ? "" : seed_log_format_record(log.records.back()),
                              "last step in " + seed_log_path);
    if (root) {
      metrics_log_truncate_after(metrics_path, first_step - 1);
      seed_log = std::make_unique<SeedLogWriter>(SeedLogWriter::open_append(seed_log_path, o.flush_every));
      std::fprintf(stderr, "resuming %s at step %lld (replayed %zu logged updates)\n", o.out_dir.c_str(),
                   (long long)first_step, log.records.size());
    }
  } else if (root) {
    seed_log = std::make_unique<SeedLogWriter>(SeedLogWriter::create(seed_log_path, header, o.flush_every));
  }
  std::unique_ptr<MetricsLog> metrics;
  if (root) metrics = std::make_unique<MetricsLog>(metrics_path, o.resume);

  // Loss and accuracy history for the plot (from the metrics file when resuming).
  PlotSeries loss_series, dev_series;
  bool final_dev_logged = false;  // a resumed, already finished run: its final evaluation too
  for (const nlohmann::json& rec : root ? metrics_log_read(metrics_path) : std::vector<nlohmann::json>()) {
    if (rec.contains("loss") && rec["loss"].is_number()) {
      loss_series.push_back({rec["step"], rec["loss"]});
      if (rec["step"] == 1) result.first_loss = rec["loss"].get<double>();
    }
    if (rec.contains("dev_acc") && rec["step"] == o.steps && rec.value("dev_examples", 0) == (int64_t)data.dev.size())
      final_dev_logged = true;
    if (rec.contains("dev_acc") && rec["dev_acc"].is_number()) {
      dev_series.push_back({rec["step"], rec["dev_acc"]});
      result.best_dev_acc = std::max(result.best_dev_acc, rec["dev_acc"].get<double>());
    }
  }
  if (!loss_series.empty()) result.last_loss = loss_series.back().second;  // a resume with no step left to run
  const std::vector<EncodedExample> dev_subset =
      o.eval_examples > 0 && o.eval_examples < (int64_t)data.dev.size()
          ? std::vector<EncodedExample>(data.dev.begin(), data.dev.begin() + o.eval_examples)
          : data.dev;
  const bool evaluate = !data.dev.empty();  // --dev-examples 0: no dev evaluation at all
  auto measure_accuracy = [&](const std::vector<EncodedExample>& set) {
    return pipelined ? pipeline_accuracy(world, layout, model, set, micro_batches)
                     : accuracy_ranks(world, model, set, o.batch);
  };
  auto evaluate_dev = [&](int64_t step, const std::vector<EncodedExample>& set) {
    double acc = measure_accuracy(set);
    if (root) metrics->write({{"step", step}, {"dev_acc", acc}, {"dev_examples", set.size()}});
    dev_series.push_back({static_cast<double>(step), acc});
    result.best_dev_acc = std::max(result.best_dev_acc, acc);
    return acc;
  };
  const std::string title = splits.name + " · " + method_name(o.spsa.method) + " · " + o.model_path;

  ProgressOptions po;
  po.total_steps = o.steps;
  po.start_step = first_step - 1;
  po.plain_every = o.progress_every > 0 ? o.progress_every : std::max<int64_t>(1, o.steps / 20);
  std::optional<ProgressBar> bar;
  if (root) bar.emplace(po);
  // One SPSA step: the losses of the probes over a pipeline or over the ranks' shards.
  const bool as_classification = splits.train_as_classification;
  auto train_step = [&](int64_t step, const std::vector<const EncodedExample*>& batch) {
    return optimizer.step(step, probe_pair, [&](const std::vector<Probe>& probes) {
      return pipelined ? pipeline_loss(world, layout, model, batch, probes, as_classification, micro_batches)
                       : batch_loss_ranks(world, model, batch, probes, as_classification);
    });
  };
  const std::vector<const EncodedExample*> fixed = minibatch(data.train, o.batch, o.data_seed, 1);
  std::string status = "completed";
  int64_t step = first_step;
  const auto t_loop = std::chrono::steady_clock::now();
  try {
    for (; step <= o.steps; step++) {
      if (step == first_step) t_phase = Clock::now();
      const auto batch = o.fixed_batch ? fixed : minibatch(data.train, o.batch, o.data_seed, step);
      const SpsaStep s = train_step(step, batch);
      const double loss = 0.5 * (s.loss_plus + s.loss_minus);
      if (step == first_step) startup["first_step"] = seconds_since(t_phase);
      if (step == 1) result.first_loss = loss;
      result.last_loss = loss;
      loss_series.push_back({static_cast<double>(step), loss});
      // Metrics (and this step's evaluation) first, then the seed log: a kill in between leaves
      // lines that resume drops (it keeps steps <= the last durable seed-log step), never a gap.
      if (root) {
        metrics->write({{"step", step}, {"loss", loss}, {"loss_plus", s.loss_plus}, {"loss_minus", s.loss_minus},
                        {"g", s.g}, {"lr", s.lr}});
        bar->update(step, loss);
      }
      if (evaluate && o.eval_every > 0 && step % o.eval_every == 0 && step < o.steps) {
        const double acc = evaluate_dev(step, dev_subset);
        if (root) bar->set_dev_accuracy(acc, step);
        if (root) write_training_plot_svg(o.out_dir + "/plot.svg", title, loss_series, dev_series);
      }
      if (root) seed_log->append(SeedRecord{s.step, s.seed, s.g, s.lr});
      if (o.checkpoint_every > 0 && step % o.checkpoint_every == 0 && step < o.steps && (root || serves_checkpoint)) {
        if (root) seed_log->flush();
        save_checkpoint(step);  // a failure warns; training goes on
      }
    }
  } catch (const Error& e) {
    // A non-finite loss: W is untouched, so the log so far and any checkpoint stay good.
    if (!root) throw;
    seed_log->flush();
    bar->finish();
    status = "stopped: " + e.message();  // the hint goes to the terminal, not into the record
    nlohmann::json summary = {{"status", status}, {"task", splits.name}, {"steps_done", step - 1},
                              {"hyperparameters", header}, {"startup_s", startup}};
    summary_add_standard_fields(&summary);
    summary_write(o.out_dir + "/summary.json", summary);
    throw;
  }
  if (root) seed_log->flush();
  if (root) bar->finish();
  result.steps_done = o.steps;
  const double train_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_loop).count();
  const int64_t steps_run = o.steps - first_step + 1;

  const bool test = !o.skip_test && !data.test.empty();
  t_phase = Clock::now();
  if ((evaluate || test) && root)
    std::fprintf(stderr, "evaluating on %s%s%s examples...\n", evaluate ? (std::to_string(data.dev.size()) + " dev").c_str() : "",
                 evaluate && test ? " and " : "", test ? (std::to_string(data.test.size()) + " test").c_str() : "");
  if (!evaluate) {
    result.final_dev_acc = -1;
  } else if (final_dev_logged) {  // resumed after the end: measure again, do not log it twice
    result.final_dev_acc = measure_accuracy(data.dev);
  } else {
    result.final_dev_acc = evaluate_dev(o.steps, data.dev);
  }
  if (test) result.test_acc = measure_accuracy(data.test);
  finish["evaluation"] = seconds_since(t_phase);
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  // a pipeline stage holds part of the model: the counts are added over the stages
  const int64_t parameters = pipelined ? pipeline_sum_owned(world, layout, model, [](const Param& p) {
    return p.w.numel();
  }) : model.parameter_count();
  const int64_t tuned = pipelined ? pipeline_sum_owned(world, layout, model, [](const Param& p) {
    return p.info.trainable ? p.w.numel() : int64_t{0};
  }) : optimizer.tuned_parameter_count();
  if (!root) {
    if (serves_checkpoint) save_checkpoint(o.steps);
    return result;
  }
  write_training_plot_svg(o.out_dir + "/plot.svg", title, loss_series, dev_series);

  nlohmann::json summary;
  summary["status"] = status;
  summary["task"] = splits.name;
  summary["split_note"] = splits.split_note;
  summary["sizes"] = {{"train", splits.train.size()}, {"dev", splits.dev.size()}, {"test", splits.test.size()}};
  summary["method"] = method_name(o.spsa.method);
  summary["noise"] = noise_name(optimizer.options().noise);  // the kind the run used (never "auto")
  summary["probes"] = probe_pair ? "pair" : "separate";
  summary["pipeline_stages"] = o.pipeline_stages;  // 1: every rank holds the whole model
  summary["micro_batches"] = pipelined ? nlohmann::json(micro_batches) : nlohmann::json(nullptr);
  summary["model"] = o.model_path;
  summary["device"] = lm.backend->name();
  summary["ranks"] = world.size();  // MPI ranks: pipeline stages × data-parallel replicas (1: one process)
  summary["hyperparameters"] = header;
  summary["hyperparameters"]["spsa"].erase("thresholds_f32_bits");  // in the seed log
  summary["parameters"] = parameters;
  // entries of the tensors that are tuned; S-MeZO/R-MeZO masks then pick a subset of the linear ones
  summary["parameters_in_tuned_tensors"] = tuned;
  summary["steps"] = o.steps;
  summary["resumed_at_step"] = o.resume ? nlohmann::json(first_step) : nlohmann::json(nullptr);
  summary["first_loss"] = result.first_loss;
  summary["final_loss"] = result.last_loss;
  auto measured = [](double acc) { return acc >= 0 ? nlohmann::json(acc) : nlohmann::json(nullptr); };
  summary["final_dev_acc"] = measured(result.final_dev_acc);  // null: no dev evaluation
  summary["best_dev_acc"] = measured(result.best_dev_acc);
  summary["test_acc"] = measured(result.test_acc);            // null: --skip-test or no test set
  summary["wall_time_s"] = result.wall_s;
  summary["steps_per_s"] = steps_run > 0 ? nlohmann::json(steps_run / train_wall) : nlohmann::json(nullptr);
  summary["peak_backend_memory_MB"] = lm.backend->bytes_allocated() / 1e6;
  summary["estimated_backend_memory_MB"] = lm.estimate.total / 1e6;
  summary["startup_s"] = startup;
  summary["finish_s"] = finish;
  summary["peak_host_memory_MB"] = host_peak_rss_mb();
  // The summary (the run's result) is durable before the final checkpoint is tried, and
  // says how the checkpoint went once it has been.
  summary["checkpoint"] = {{"dir", "checkpoint"}, {"step", o.steps},
                           {"dtype", dtype_name(checkpoint_dtype(model, o.checkpoint_dtype))}, {"status", "writing"}};
  summary_add_standard_fields(&summary);
  summary_write(o.out_dir + "/summary.json", summary);
  t_phase = Clock::now();
  result.checkpoint_error = save_checkpoint(o.steps);
  finish["checkpoint"] = seconds_since(t_phase);
  summary["finish_s"] = finish;
  summary["checkpoint"]["status"] = result.checkpoint_error.empty() ? "written" : "failed: " + result.checkpoint_error;
  summary_write(o.out_dir + "/summary.json", summary);
  std::string done = evaluate ? "dev acc " + format_accuracy(result.final_dev_acc) + " (best " +
                                     format_accuracy(result.best_dev_acc) + ")"
                               : std::string("no dev evaluation");
  if (test) done += ", test acc " + format_accuracy(result.test_acc);
  if (!result.checkpoint_error.empty())
    done += "; no final checkpoint (see the warning; once fixed, the same command with --resume writes it)";
  std::fprintf(stderr, "start-up: %s; end: %s\n", describe_phases(startup).c_str(), describe_phases(finish).c_str());
  std::fprintf(stderr, "done: %s, %s\n", done.c_str(), (o.out_dir + "/summary.json").c_str());
  return result;
}

TrainResult train(const TrainOptions& o) {
  World& world = dist_world();
  world.set_timeout_s(o.mpi_timeout_s);
  if (world.size() == 1) return train_on_ranks(o, world);
  try {
    return train_on_ranks(o, world);
  } catch (const std::exception& e) {  // one rank's error ends the whole job, naming the rank
    world.abort_job(e.what());
  }
}

}  // namespace smezo
