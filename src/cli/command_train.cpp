// smezo train: zeroth-order fine-tuning (MeZO, S-MeZO, R-MeZO) on a task. The options map
// one to one onto smezo::TrainOptions (include/smezo/train.h); train/trainer.h runs it.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "common/assets.h"
#include "common/check.h"
#include "setup/model_setup.h"
#include "tasks/task_data.h"
#include "tasks/task_files.h"
#include "train/trainer.h"

namespace smezo {

namespace {

struct TrainState {
  TrainOptions o;
  ModelOpenOptions model;
  std::string method = "smezo", schedule = "constant", noise = "auto", probes = "pair";
  CLI::Option *sparsity = nullptr, *lr = nullptr, *out = nullptr, *task = nullptr;
  bool check_data = false;
  std::string export_data;  // --export-data DIR
};

// What to do after a write failed: the cause's own advice, then how to go on. The seed log is
// flushed up to the failure (its last line may be cut; --resume trims it), so --resume
// replays what was logged and carries on.
std::string resume_hint(const WriteError& e, const std::string& out_dir) {
  const std::string fix = e.hint().empty() ? "fix the cause" : e.hint();
  std::error_code ec;
  const bool logged = std::filesystem::file_size(out_dir + "/seed_log.txt", ec) > 0 && !ec;
  if (!logged) return fix + ", then run the command again";
  return fix + ", then run the same command with --resume: " + out_dir +
         "/seed_log.txt keeps every step logged so far";
}

// --check-data: every problem of the spec and its files, candidate lengths included (checked
// with the model's tokenizer, its weights not loaded, against --max-len). Exit 0 when clean.
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

// --task-spec with data files, --check-data and --export-data: what they need, and the two
// that stop before training. Returns the exit status when the command is done, else -1.
int run_data_options(TrainState& s) {
  const TrainOptions& o = s.o;
  const bool files = !o.train_file.empty() || !o.dev_file.empty() || !o.test_file.empty();
  SMEZO_REQUIRE(o.task_spec.empty() || s.task->count() == 0,
                "train: give --task (a built-in task) or --task-spec (your own data), not both");
  SMEZO_REQUIRE(!files || !o.task_spec.empty(), "train: --train-file, --dev-file and --test-file need --task-spec "
                "FILE (how a record becomes an example)");
  SMEZO_REQUIRE(o.task_spec.empty() || !o.train_file.empty(), "train: --task-spec needs --train-file");
  SMEZO_REQUIRE(!s.check_data || !o.task_spec.empty(), "train: --check-data checks --task-spec and its data files");
  SMEZO_REQUIRE(s.export_data.empty() || o.task_spec.empty(), "train: --export-data writes a built-in --task");
  if (!s.export_data.empty()) {
    std::printf("%s\n", export_task(o.task, o.data_seed == 0 ? o.spsa.seed : o.data_seed, o.n_train, o.n_dev,
                                    o.n_test, o.data_dir.empty() ? asset_path("data") : o.data_dir,
                                    s.export_data).c_str());
    return 0;
  }
  return s.check_data ? check_data(s) : -1;
}

int run_train(TrainState& s) {
  TrainOptions& o = s.o;
  if (const int done = run_data_options(s); done >= 0) return done;
  o.model_path = s.model.model_path;
  o.tokenizer_path = s.model.tokenizer_path;
  o.device = s.model.device;
  o.dtype = s.model.dtype;
  o.linear_path = s.model.linear_path;
  o.spsa.method = method_parse(s.method);
  o.spsa.schedule = lr_schedule_parse(s.schedule);
  o.spsa.noise = noise_parse(s.noise);  // "auto" when not given: resume takes the run's own
  o.probe_pair = s.probes == "pair";
  // defaults that depend on the method and task
  const bool dense = o.spsa.method == METHOD_MEZO || o.spsa.method == METHOD_FZOO;
  if (s.sparsity->count() == 0) o.spsa.sparsity = dense ? 0.0 : 0.75;
  if (s.lr->count() == 0) o.spsa.lr = dense ? 1e-6f : 2e-6f;
  if (s.out->count() == 0)
    o.out_dir = "runs/" + (o.task_spec.empty() ? o.task : std::filesystem::path(o.task_spec).stem().string()) + "-" +
                method_name(o.spsa.method);
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

}  // namespace

Command register_train(CLI::App& smezo) {
  auto s = std::make_shared<TrainState>();
  TrainOptions& o = s->o;
  CLI::App* cmd = add_command(smezo, "train", "zeroth-order fine-tuning of a model on a task; writes a run "
                                              "folder (seed log, metrics, summary, plot, checkpoint)");
  add_model_options(cmd, &s->model);
  add_linear_path_option(cmd, &s->model.linear_path);
  s->task = cmd->add_option("--task", o.task, "the task (MeZO's templates and sampling)")
                ->type_name("NAME")
                ->check(one_of(task_names(), true));
  add_data_file_options(cmd, s.get());
  cmd->add_option("--data", o.data_dir, "folder holding glue/ and superglue/")
      ->type_name("DIR")
      ->default_str(asset_path("data"));
  cmd->add_option("--train-examples", o.n_train, "training examples sampled")->check(integer_at_least(1));
  cmd->add_option("--dev-examples", o.n_dev, "dev examples sampled (0: no dev evaluation)")
      ->check(integer_at_least(0));
  cmd->add_option("--test-examples", o.n_test, "test examples sampled")->check(integer_at_least(0));
  cmd->add_option("--data-seed", o.data_seed, "seed of the train/dev/test sampling and minibatches")
      ->check(unsigned_integer())
      ->default_str("0 = the value of --seed");
  cmd->add_option("--method", s->method, "mezo: every entry; smezo: small-magnitude entries of linear "
                                         "weights; rmezo: a fixed random mask; fzoo: FZOO's one-sided Rademacher "
                                         "probes (--probes-per-step of them, 2 or more), the step divided by the "
                                         "spread of their losses")
      ->check(one_of({"mezo", "smezo", "rmezo", "fzoo"}));
  s->sparsity = cmd->add_option("--sparsity", o.spsa.sparsity, "fraction of each linear weight NOT tuned")
                    ->check(number_where([](double v) { return v >= 0 && v < 1; }, "in [0, 1)"))
                    ->default_str("0.75; mezo, fzoo: 0");
  s->lr = cmd->add_option("--lr", o.spsa.lr, "learning rate (above 0.1 prints a warning)")
              ->check(number_at_least(0))
              ->default_str("2e-6; mezo, fzoo: 1e-6");
  cmd->add_option("--eps", o.spsa.eps, "perturbation scale")->check(number_above(0));
  cmd->add_option("--noise", s->noise, "the direction z: Gaussian (8 normals per Philox call), gaussian-v1 "
                                       "(the generator of runs logged before noise spec 2) or rademacher (±1)")
      ->check(one_of({"gaussian", "gaussian-v1", "rademacher"}))
      ->default_str("gaussian; --resume: the run's own");
  cmd->add_option("--probes", s->probes, "pair: both probes of a step in one forward pass, side by side; "
                                         "separate: two passes (slower; the same results bit for bit on cpu, within "
                                         "GEMM rounding on cuda)")
      ->check(one_of({"pair", "separate"}));
  cmd->add_option("--objective", o.objective, "what the two probes measure: loss (the task's loss), accuracy "
                                             "(1 - the minibatch's candidate accuracy; classification tasks) or f1 "
                                             "(1 - the token F1 of greedy generations; generation tasks); the loss "
                                             "is logged beside it")
      ->check(one_of({"loss", "accuracy", "f1"}));
  cmd->add_option("--probes-per-step", o.spsa.probes, "probes per step (q): the step averages q SPSA estimates, "
                  "each from its own seed (all logged for replay); q x 2 forward passes per step (fzoo: q + 1)")
      ->check(integer_at_least(1));
  cmd->add_option("--accumulate", o.accumulate, "minibatches per step (K), all under the same probes, their "
                  "losses averaged: an effective batch of K x --batch at the memory of one")
      ->check(integer_at_least(1));
  cmd->add_option("--lr-schedule", s->schedule, "constant, or linear decay to 0 over the run")
      ->check(one_of({"constant", "linear"}));
  cmd->add_option("--weight-decay", o.spsa.weight_decay, "decay of the tuned weight entries")
      ->check(number_at_least(0));
  cmd->add_option("--seed", o.spsa.seed, "run seed: the step seeds and the R-MeZO mask derive from it")
      ->check(unsigned_integer());
  cmd->add_option("--steps", o.steps, "training steps")->check(integer_at_least(1));
  cmd->add_option("--batch", o.batch, "examples per step (and per evaluation forward)")->check(integer_at_least(1));
  cmd->add_option("--max-len", o.max_len, "tokens per candidate: BOS + prompt + option, the prompt cut "
                                          "from the left")
      ->check(integer_at_least(2));
  cmd->add_option("--max-tokens", o.max_tokens, "cap on the workspace tokens per forward, which is --batch x "
                                                  "--max-len (bigger batches are chunked)")
      ->check(integer_at_least(1));
  cmd->add_option("--eval-every", o.eval_every, "dev evaluation interval in steps (0: only at the end)")
      ->check(integer_at_least(0));
  cmd->add_option("--eval-examples", o.eval_examples, "dev examples per periodic evaluation (0: all)")
      ->check(integer_at_least(0));
  cmd->add_option("--checkpoint-every", o.checkpoint_every, "checkpoint interval in steps (0: only at the end)")
      ->check(integer_at_least(0));
  cmd->add_option("--checkpoint-dtype", o.checkpoint_dtype, "dtype of the checkpoint's tensors")
      ->check(one_of({"f32", "f16", "bf16"}))
      ->default_str("the weights' storage dtype (--dtype)");
  cmd->add_option("--flush-every", o.flush_every, "seed-log durability interval in steps")
      ->check(integer_at_least(1));
  cmd->add_option("--progress-every", o.progress_every, "plain progress line interval (0: about 20 lines)")
      ->check(integer_at_least(0));
  s->out = cmd->add_option("--out", o.out_dir, "the run folder")->type_name("DIR")->default_str("runs/TASK-METHOD");
  cmd->add_option("--mpi-timeout", o.mpi_timeout_s, "under mpirun/srun: seconds to wait for the other ranks "
                                                   "in one exchange before ending the job")
      ->check(number_above(0));
  cmd->add_option("--pipeline-stages", o.pipeline_stages, "under mpirun: split the model's layers over this many "
                  "ranks (pipeline parallel); the ranks form ranks/stages data-parallel pipelines")
      ->check(integer_at_least(1));
  cmd->add_option("--micro-batches", o.micro_batches, "pipeline micro-batches in flight; each regenerates the "
                  "noise of the weights it passes (0: the stage count on cuda, 1 on cpu)")
      ->check(integer_at_least(0));
  cmd->add_flag("--resume", o.resume, "continue the run in --out from its seed log");
  cmd->add_flag("--fixed-batch", o.fixed_batch, "reuse the first minibatch every step (overfitting checks)");
  cmd->add_flag("--skip-test", o.skip_test, "no test-set evaluation at the end");
  cmd->add_flag("--freeze-embeddings", o.spsa.freeze_embeddings, "do not tune the embeddings");
  cmd->add_flag("--freeze-norms", o.spsa.freeze_norms, "do not tune the norm weights");
  cmd->add_flag("--freeze-biases", o.spsa.freeze_biases, "do not tune the biases");
  cmd->add_option("--tune", o.tune, "full: tune every parameter (less the freezes); lora: tune only LoRA adapters "
                  "(`smezo merge` folds one into a full model); prefix: tune only --prefix-tokens key/value rows "
                  "per layer that every token attends to (MeZO's prefix mode, started from the model's own "
                  "activations of random tokens). Under lora and prefix the base weights stay as loaded and "
                  "checkpoints are PEFT adapter folders")
      ->check(one_of({"full", "lora", "prefix"}));
  cmd->add_option("--lora-r", o.lora_r, "--tune lora: adapter rank r")->check(integer_at_least(1));
  cmd->add_option("--lora-alpha", o.lora_alpha, "--tune lora: alpha; the adapter's output is scaled by alpha / r")
      ->check(number_above(0));
  cmd->add_option("--lora-targets", o.lora_targets, "--tune lora: the linears adapted in every layer, by role, "
                  "comma-separated (any of q,k,v,o,gate,up,down)")
      ->type_name("LIST");
  cmd->add_option("--prefix-tokens", o.prefix_tokens, "--tune prefix: virtual tokens P per layer; the sequences "
                  "then sit at positions P.. (a sequence may hold max positions - P tokens)")
      ->check(integer_at_least(1));
  cmd->add_flag("--stochastic-rounding", o.spsa.stochastic_rounding,
                "round updates stochastically to bf16 storage (--device cuda --dtype bf16)");
  return {cmd, [s] { return run_train(*s); }};
}

}  // namespace smezo
