// smezo train: zeroth-order fine-tuning on a task; the options map one to one onto TrainOptions.
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <memory>

#include "cli/commands.h"
#include "common/assets.h"
#include "common/check.h"
#include "setup/model_setup.h"
#include "tasks/task_data.h"
#include "tasks/task_files.h"
#include "train/option_names.h"
#include "train/train_options.h"
#include "train/trainer.h"

namespace smezo {

namespace {

struct TrainState {
  TrainOptions o;
  ModelOpenOptions model;
  CLI::Option* task = nullptr;
  CLI::Option* eps = nullptr;      // --tune scales: kScalesDefaultEps unless --eps is given
  bool check_data = false;
  std::string export_data;  // --export-data DIR
};

// After a failed write: the cause's advice, then how to go on (--resume replays the flushed log).
std::string resume_hint(const WriteError& e, const std::string& out_dir) {
  const std::string fix = e.hint().empty() ? "fix the cause" : e.hint();
  std::error_code ec;
  const bool logged = std::filesystem::file_size(out_dir + "/seed_log.txt", ec) > 0 && !ec;
  if (!logged) return fix + ", then run the command again";
  return fix + ", then run the same command with --resume: " + out_dir +
         "/seed_log.txt keeps every step logged so far";
}

// --check-data: every problem of the spec and files, candidate lengths (vs --max-len) included.
int check_data(const TrainState& s) {
  const TrainOptions& o = s.o;
  const OpenedTokenizer tok = open_model_tokenizer(resolve_model_path(s.model.model_path), s.model.tokenizer_path);
  const std::vector<std::string> problems =
      check_task_files({o.task_spec, o.train_file, o.dev_file, o.test_file}, {tok.tokenizer.get(), o.max_len});
  for (const std::string& p : problems) std::printf("%s\n", p.c_str());
  std::printf("check-data: %zu problem%s in %s and its data files (lengths: --max-len %lld, tokenizer %s)\n",
              problems.size(), problems.size() == 1 ? "" : "s", o.task_spec.c_str(), (long long)o.max_len,
              tok.path.c_str());
  return problems.empty() ? 0 : 1;
}

// What --task, --task-spec, --check-data and --export-data need of each other (train() checks the rest).
void check_data_options(const TrainState& s) {
  const TrainOptions& o = s.o;
  SMEZO_REQUIRE(o.task_spec.empty() || s.task->count() == 0,
                "train: give --task (a built-in task) or --task-spec (your own data), not both");
  validate_data_options(o);
  SMEZO_REQUIRE(!s.check_data || !o.task_spec.empty(), "train: --check-data checks --task-spec and its data files");
  SMEZO_REQUIRE(s.export_data.empty() || o.task_spec.empty(), "train: --export-data writes a built-in --task");
}

int run_train(TrainState& s) {
  check_data_options(s);
  TrainOptions& o = s.o;
  o.model_path = s.model.model_path;
  o.tokenizer_path = s.model.tokenizer_path;
  o.device = s.model.device;
  o.dtype = s.model.dtype;
  o.linear_path = s.model.linear_path;
  o.graphs = s.model.graphs;
  o.weights = s.model.weights;
  if (o.tune == TUNE_SCALES && s.eps->count() == 0) o.spsa.eps = kScalesDefaultEps;  // scale space
  o = resolve_defaults(o);  // what train() uses: the method's lr and sparsity, runs/TASK-METHOD ...
  if (!s.export_data.empty()) {
    std::printf("%s\n", export_task(o.task, o.data_seed, o.n_train, o.n_dev, o.n_test,
                                    o.data_dir.empty() ? asset_path("data") : o.data_dir, s.export_data).c_str());
    return 0;
  }
  if (s.check_data) return check_data(s);
  // 3: the run finished (summary.json, seed log) but its final checkpoint could not be written
  try {
    return train(o).checkpoint_error.empty() ? 0 : 3;
  } catch (const WriteError& e) {
    throw Error(e.message(), resume_hint(e, o.out_dir));
  }
}

// Your own data (--task-spec and its files), --check-data and --export-data.
void add_data_file_options(CLI::App* cmd, TrainState* s) {
  cmd->add_option("--task-spec", s->o.task_spec, "your own data instead of --task: a JSON task spec saying how a "
                  "record becomes an example (docs/own-data.md; the built-in ones: src/tasks/specs/)")
      ->type_name("FILE")
      ->default_str("none: the built-in --task");
  cmd->add_option("--train-file", s->o.train_file, "with --task-spec: training records, JSON Lines (.jsonl) or CSV/TSV "
                  "with a header (.csv, .tsv), UTF-8; the first --train-examples rows, in order")
      ->type_name("FILE")
      ->default_str("none; required with --task-spec");
  cmd->add_option("--dev-file", s->o.dev_file, "with --task-spec: dev records, the first --dev-examples rows")
      ->type_name("FILE")
      ->default_str("none: no dev evaluation");
  cmd->add_option("--test-file", s->o.test_file, "with --task-spec: test records, the first --test-examples rows")
      ->type_name("FILE")
      ->default_str("none: no test evaluation");
  cmd->add_flag("--check-data", s->check_data, "with --task-spec: report every problem of the spec and the data "
                "files (file:line: field), candidates too long for --max-len with the model's tokenizer included, "
                "then exit (0: clean, 1: problems) without loading the model's weights");
  cmd->add_option("--export-data", s->export_data, "write --task's sampled splits (--data-seed, --train-examples, "
                  "--dev-examples, --test-examples) as DIR/train.jsonl, dev.jsonl, test.jsonl with its spec "
                  "DIR/spec.json, then exit; training from them equals training on --task")
      ->type_name("DIR")
      ->default_str("none: train");
}

// A numeric option with the range the library checks (train/train_options.h).
template <typename T>
CLI::Option* add_ranged_option(CLI::App* cmd, const std::string& name, T& field, const std::string& description) {
  return cmd->add_option(name, field, description)->check(in_range(train_option_range(name)));
}

void add_task_options(CLI::App* cmd, TrainState* s) {
  TrainOptions& o = s->o;
  s->task = cmd->add_option("--task", o.task, "the task (MeZO's templates and sampling)")
                ->type_name("NAME")
                ->check(one_of(task_names(), true));
  add_data_file_options(cmd, s);
  cmd->add_option("--data", o.data_dir, "folder holding glue/ and superglue/")
      ->type_name("DIR")
      ->default_str(asset_path("data"));
  add_ranged_option(cmd, "--train-examples", o.n_train, "training examples sampled");
  add_ranged_option(cmd, "--dev-examples", o.n_dev, "dev examples sampled (0: no dev evaluation)");
  add_ranged_option(cmd, "--test-examples", o.n_test, "test examples sampled");
  cmd->add_option("--data-seed", o.data_seed, "seed of the train/dev/test sampling and minibatches")
      ->check(unsigned_integer())
      ->default_str("0 = the value of --seed");
}

// A default by method as the library resolves it (train_options.h): the default method's, then the
// others' where they differ ("0.75; mezo, fzoo: 0").
std::string default_by_method(std::string (*text)(const SpsaOptions&)) {
  const std::string mine = text(spsa_resolve_defaults(SpsaOptions()));
  std::map<std::string, std::string> others;  // a value -> the methods that resolve to it
  for (const EnumName<Method>& m : method_names()) {
    SpsaOptions o;
    o.method = m.value;
    const std::string v = text(spsa_resolve_defaults(o));
    if (m.listed && v != mine) others[v] += (others[v].empty() ? "" : ", ") + std::string(m.name);
  }
  std::string out = mine;
  for (const auto& [v, methods] : others) out += "; " + methods + ": " + v;
  return out;
}

std::string short_number(double v) {  // as the help writes numbers: 2e-6, not 2e-06
  return std::regex_replace(CLI::detail::to_string(v), std::regex("e-0"), "e-");
}

void add_method_options(CLI::App* cmd, TrainOptions* o) {
  add_enum_option(cmd, "--method", &o->spsa.method, method_names(), "mezo: every entry; smezo: small-magnitude "
                  "entries of linear weights; rmezo: a fixed random mask; fzoo: FZOO's one-sided Rademacher "
                  "probes (--probes-per-step of them, 2 or more), the step divided by the spread of their losses");
  add_ranged_option(cmd, "--sparsity", o->spsa.sparsity, "fraction of each linear weight NOT tuned")
      ->default_str(default_by_method([](const SpsaOptions& d) { return short_number(*d.sparsity); }));
  add_ranged_option(cmd, "--lr", o->spsa.lr, "learning rate (above 0.1 prints a warning)")
      ->default_str(default_by_method([](const SpsaOptions& d) { return short_number(*d.lr); }) +
                    "; --tune scales: " + short_number(kScalesDefaultLr));
  add_ranged_option(cmd, "--eps", o->spsa.eps, "perturbation scale (absolute; --tune scales: in scale space)")
      ->default_str(short_number(SpsaOptions{}.eps) + "; --tune scales: " + short_number(kScalesDefaultEps));
  add_enum_option(cmd, "--noise", &o->spsa.noise, noise_names(), "the direction z: Gaussian (8 normals per Philox "
                  "call), gaussian-v1 (the generator of runs logged before noise spec 2), rademacher (±1, 8 per "
                  "call) or sign (±1, 128 per call, applied as a sign flip: the cheapest)")
      ->default_str(default_by_method([](const SpsaOptions& d) -> std::string {
        return noise_name(spsa_default_noise(d.method));
      }) + "; --resume: the run's own");
  add_enum_option(cmd, "--probes", &o->probe_passes, probe_passes_names(), "pair: both probes of a step in one "
                  "forward pass, side by side; separate: two passes (slower; the same results bit for bit on cpu, "
                  "within GEMM rounding on cuda)");
  add_enum_option(cmd, "--objective", &o->objective, objective_names(), "what the two probes measure: loss (the "
                  "task's loss), accuracy (1 - the minibatch's candidate accuracy; classification tasks) or f1 (1 - "
                  "the token F1 of greedy generations; generation tasks); the loss is logged beside it");
  add_ranged_option(cmd, "--probes-per-step", o->spsa.probes, "probes per step (q): the step averages q SPSA "
                    "estimates, each from its own seed (all logged for replay); q x 2 forward passes per step "
                    "(fzoo: q + 1)");
  add_ranged_option(cmd, "--accumulate", o->accumulate, "minibatches per step (K), all under the same probes, their "
                    "losses averaged: an effective batch of K x --batch at the memory of one");
  add_enum_option(cmd, "--lr-schedule", &o->spsa.schedule, lr_schedule_names(), "constant, or linear decay to 0 "
                  "over the run");
  add_ranged_option(cmd, "--weight-decay", o->spsa.weight_decay, "decay of the tuned weight entries");
  cmd->add_option("--seed", o->spsa.seed, "run seed: the step seeds and the R-MeZO mask derive from it")
      ->check(unsigned_integer());
}

void add_run_options(CLI::App* cmd, TrainOptions* o) {
  add_ranged_option(cmd, "--steps", o->steps, "training steps");
  add_ranged_option(cmd, "--batch", o->batch, "examples per step (and per evaluation forward)");
  add_ranged_option(cmd, "--max-len", o->max_len, "tokens per candidate: BOS + prompt + option, the prompt cut "
                    "from the left");
  add_ranged_option(cmd, "--max-tokens", o->max_tokens, "cap on the workspace tokens per forward, which is --batch "
                    "x --max-len (bigger batches are chunked)");
  add_ranged_option(cmd, "--eval-every", o->eval_every, "dev evaluation interval in steps (0: only at the end)");
  add_ranged_option(cmd, "--eval-examples", o->eval_examples, "dev examples per periodic evaluation (0: all)");
  add_ranged_option(cmd, "--checkpoint-every", o->checkpoint_every, "checkpoint interval in steps (0: only at the "
                    "end)");
  add_optional_enum_option(cmd, "--checkpoint-dtype", &o->checkpoint_dtype, dtype_option_names(),
                           "dtype of the checkpoint's tensors")
      ->default_str("the weights' storage dtype (--dtype)");
  add_ranged_option(cmd, "--flush-every", o->flush_every, "seed-log durability interval in steps");
  add_ranged_option(cmd, "--progress-every", o->progress_every, "plain progress line interval (0: about " +
                    std::to_string(kProgressLinesPerRun) + " lines)");
  cmd->add_option("--out", o->out_dir, "the run folder")->type_name("DIR")->default_str("runs/TASK-METHOD");
  add_ranged_option(cmd, "--mpi-timeout", o->mpi_timeout_s, "under mpirun/srun: seconds to wait for the other ranks "
                    "in one exchange before ending the job");
  add_ranged_option(cmd, "--pipeline-stages", o->pipeline_stages, "under mpirun: split the model's layers over this "
                    "many ranks (pipeline parallel); the ranks form ranks/stages data-parallel pipelines");
  add_ranged_option(cmd, "--micro-batches", o->micro_batches, "pipeline micro-batches in flight; each regenerates "
                    "the noise of the weights it passes (0: the stage count on cuda, 1 on cpu)");
  cmd->add_option_function<std::string>("--fold-update", [o](const std::string& v) { o->fold_update = v == "on"; },
                                        "on: a linear weight's update is applied inside the next step's first "
                                        "perturbed pass over it (W read once: updated, written back, W+ and W- "
                                        "formed), one pass over the weights per step; off: a separate update pass "
                                        "after each step. The same results bit for bit")
      ->check(one_of({"on", "off"}))
      ->default_str(TrainOptions().fold_update ? "on" : "off");
  cmd->add_flag("--resume", o->resume, "continue the run in --out from its seed log");
  cmd->add_flag("--fixed-batch", o->fixed_batch, "reuse the first minibatch every step (overfitting checks)");
  cmd->add_flag("--skip-test", o->skip_test, "no test-set evaluation at the end");
}

void add_tuning_options(CLI::App* cmd, TrainOptions* o) {
  cmd->add_flag("--freeze-embeddings", o->spsa.freeze_embeddings, "do not tune the embeddings");
  cmd->add_flag("--freeze-norms", o->spsa.freeze_norms, "do not tune the norm weights");
  cmd->add_flag("--freeze-biases", o->spsa.freeze_biases, "do not tune the biases");
  add_enum_option(cmd, "--tune", &o->tune, tune_names(), "full: tune every parameter (less the freezes); lora: tune "
                  "only LoRA adapters (`smezo merge` folds one into a full model); prefix: tune only --prefix-tokens "
                  "key/value rows per layer that every token attends to (MeZO's prefix mode, started from the "
                  "model's own activations of random tokens). Under lora and prefix the base weights stay as loaded "
                  "and checkpoints are PEFT adapter folders. scales: a block-quantised GGUF stays in its blocks "
                  "(implies --weights packed) and only its block scales are tuned, as f32 masters (d per block, "
                  "K-quants per super-block; with --scales-m also Q4_1/Q5_1 m and K-quant dmin), the integer codes, "
                  "the F32 norms and unquantised tensors frozen; the Q8_0 tied embedding/head has its scales tuned "
                  "too (--freeze-embeddings: not); mezo tunes every scale, smezo the small-|d| ones; the "
                  "checkpoint is a GGUF of the base's types and size (checkpoint/model.gguf, llama.cpp loads it)");
  cmd->add_flag("--scales-m", o->scales_m, "--tune scales: tune Q4_1/Q5_1's m and K-quants' dmin too (default: d "
                "alone)");
  add_ranged_option(cmd, "--lora-r", o->lora_r, "--tune lora: adapter rank r");
  add_ranged_option(cmd, "--lora-alpha", o->lora_alpha, "--tune lora: alpha; the adapter's output is scaled by "
                    "alpha / r");
  cmd->add_option("--lora-targets", o->lora_targets, "--tune lora: the linears adapted in every layer, by role, "
                  "comma-separated (any of q,k,v,o,gate,up,down)")
      ->type_name("LIST");
  add_ranged_option(cmd, "--prefix-tokens", o->prefix_tokens, "--tune prefix: virtual tokens P per layer; the "
                    "sequences then sit at positions P.. (a sequence may hold max positions - P tokens)");
  cmd->add_flag("--stochastic-rounding", o->spsa.stochastic_rounding,
                "round updates stochastically to bf16 storage (--device cuda --dtype bf16)");
}

}  // namespace

Command register_train(CLI::App& smezo) {
  auto s = std::make_shared<TrainState>();
  CLI::App* cmd = add_command(smezo, "train", "zeroth-order fine-tuning of a model on a task; writes a run "
                                              "folder (seed log, metrics, summary, plot, checkpoint)");
  add_model_options(cmd, &s->model);
  add_linear_path_option(cmd, &s->model.linear_path);
  add_graphs_option(cmd, &s->model.graphs);
  s->model.weights = WEIGHTS_AUTO;  // packed over a frozen base (resolve_defaults)
  add_weights_option(cmd, &s->model.weights);
  add_task_options(cmd, s.get());
  add_method_options(cmd, &s->o);
  s->eps = cmd->get_option("--eps");
  add_run_options(cmd, &s->o);
  add_tuning_options(cmd, &s->o);
  return {cmd, [s] { return run_train(*s); }};
}

}  // namespace smezo
