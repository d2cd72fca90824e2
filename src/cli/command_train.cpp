// smezo train: zeroth-order fine-tuning (MeZO, S-MeZO, R-MeZO) on a task. The options map
// one to one onto smezo::TrainOptions (include/smezo/train.h); train/trainer.h runs it.
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "common/assets.h"
#include "common/check.h"
#include "tasks/task_data.h"
#include "train/trainer.h"

namespace smezo {

namespace {

struct TrainState {
  TrainOptions o;
  ModelOpenOptions model;
  std::string method = "smezo", schedule = "constant", noise = "auto", probes = "pair";
  CLI::Option *sparsity = nullptr, *lr = nullptr, *out = nullptr;
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

int run_train(TrainState& s) {
  TrainOptions& o = s.o;
  o.model_path = s.model.model_path;
  o.tokenizer_path = s.model.tokenizer_path;
  o.device = s.model.device;
  o.dtype = s.model.dtype;
  o.spsa.method = method_parse(s.method);
  o.spsa.schedule = lr_schedule_parse(s.schedule);
  o.spsa.noise = noise_parse(s.noise);  // "auto" when not given: resume takes the run's own
  o.probe_pair = s.probes == "pair";
  // defaults that depend on the method and task
  if (s.sparsity->count() == 0) o.spsa.sparsity = o.spsa.method == METHOD_MEZO ? 0.0 : 0.75;
  if (s.lr->count() == 0) o.spsa.lr = o.spsa.method == METHOD_MEZO ? 1e-6f : 2e-6f;
  if (s.out->count() == 0) o.out_dir = "runs/" + o.task + "-" + method_name(o.spsa.method);
  // 3: the run finished (summary.json, seed log) but its final checkpoint could not be written
  try {
    return train(o).checkpoint_error.empty() ? 0 : 3;
  } catch (const WriteError& e) {
    throw Error(e.message(), resume_hint(e, o.out_dir));
  }
}

}  // namespace

Command register_train(CLI::App& smezo) {
  auto s = std::make_shared<TrainState>();
  TrainOptions& o = s->o;
  CLI::App* cmd = add_command(smezo, "train", "zeroth-order fine-tuning of a model on a task; writes a run "
                                              "folder (seed log, metrics, summary, plot, checkpoint)");
  add_model_options(cmd, &s->model);
  cmd->add_option("--task", o.task, "the task (MeZO's templates and sampling)")
      ->type_name("NAME")
      ->check(one_of(task_names(), true));
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
                                         "weights; rmezo: a fixed random mask")
      ->check(one_of({"mezo", "smezo", "rmezo"}));
  s->sparsity = cmd->add_option("--sparsity", o.spsa.sparsity, "fraction of each linear weight NOT tuned")
                    ->check(number_where([](double v) { return v >= 0 && v < 1; }, "in [0, 1)"))
                    ->default_str("0.75; mezo: 0");
  s->lr = cmd->add_option("--lr", o.spsa.lr, "learning rate (above 0.1 prints a warning)")
              ->check(number_at_least(0))
              ->default_str("2e-6; mezo: 1e-6");
  cmd->add_option("--eps", o.spsa.eps, "perturbation scale")->check(number_above(0));
  cmd->add_option("--noise", s->noise, "the direction z: Gaussian (8 normals per Philox call), gaussian-v1 "
                                       "(the generator of runs logged before noise spec 2) or rademacher (±1)")
      ->check(one_of({"gaussian", "gaussian-v1", "rademacher"}))
      ->default_str("gaussian; --resume: the run's own");
  cmd->add_option("--probes", s->probes, "pair: both probes of a step in one forward pass, side by side; "
                                         "separate: two passes (slower; the same results bit for bit on cpu, within "
                                         "GEMM rounding on cuda)")
      ->check(one_of({"pair", "separate"}));
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
                  "(the base weights stay as loaded; checkpoints are PEFT adapter folders, `smezo merge` folds "
                  "one into a full model)")
      ->check(one_of({"full", "lora"}));
  cmd->add_option("--lora-r", o.lora_r, "--tune lora: adapter rank r")->check(integer_at_least(1));
  cmd->add_option("--lora-alpha", o.lora_alpha, "--tune lora: alpha; the adapter's output is scaled by alpha / r")
      ->check(number_above(0));
  cmd->add_option("--lora-targets", o.lora_targets, "--tune lora: the linears adapted in every layer, by role, "
                  "comma-separated (any of q,k,v,o,gate,up,down)")
      ->type_name("LIST");
  cmd->add_flag("--stochastic-rounding", o.spsa.stochastic_rounding,
                "round updates stochastically to bf16 storage (--device cuda --dtype bf16)");
  return {cmd, [s] { return run_train(*s); }};
}

}  // namespace smezo
