// smezo train: zeroth-order fine-tuning (MeZO, S-MeZO, R-MeZO) on a task. See train/trainer.h.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/model_setup.h"
#include "common/check.h"
#include "train/trainer.h"

namespace smezo {

int command_train(int argc, char** argv) {
  Args args(argc, argv, 2, {"resume", "fixed-batch", "skip-test", "freeze-embeddings", "freeze-norms", "freeze-biases",
                                 "stochastic-rounding"});
  TrainOptions o;
  o.model_path = args.str("model", default_model_path());
  o.tokenizer_path = args.str("tokenizer", "");
  o.device = args.str("device", "cpu");
  o.dtype = args.str("dtype", "");
  o.task = args.str("task", "sst2");
  o.data_dir = args.str("data", "");
  o.n_train = args.integer("train-examples", 1000);
  o.n_dev = args.integer("dev-examples", 500);
  o.n_test = args.integer("test-examples", 1000);
  o.max_len = args.integer("max-len", 256);
  o.batch = args.integer("batch", 16);
  o.steps = args.integer("steps", 20000);
  o.eval_every = args.integer("eval-every", 500);
  o.eval_examples = args.integer("eval-examples", 0);
  o.checkpoint_every = args.integer("checkpoint-every", 0);
  o.flush_every = args.integer("flush-every", 10);
  o.max_tokens = args.integer("max-tokens", 8192);
  o.progress_every = args.integer("progress-every", 0);
  o.fixed_batch = args.flag("fixed-batch");
  o.skip_test = args.flag("skip-test");
  o.resume = args.flag("resume");
  o.spsa.method = method_parse(args.str("method", "smezo"));
  o.spsa.sparsity = args.number("sparsity", o.spsa.method == METHOD_MEZO ? 0.0 : 0.75);
  o.spsa.eps = static_cast<float>(args.number("eps", 1e-3));
  o.spsa.lr = static_cast<float>(args.number("lr", o.spsa.method == METHOD_MEZO ? 1e-6 : 2e-6));
  o.spsa.schedule = lr_schedule_parse(args.str("lr-schedule", "constant"));
  o.spsa.weight_decay = static_cast<float>(args.number("weight-decay", 0.0));
  o.spsa.seed = static_cast<uint64_t>(args.integer("seed", 42));
  o.data_seed = static_cast<uint64_t>(args.integer("data-seed", 0));
  o.spsa.freeze_embeddings = args.flag("freeze-embeddings");
  o.spsa.freeze_norms = args.flag("freeze-norms");
  o.spsa.freeze_biases = args.flag("freeze-biases");
  o.spsa.stochastic_rounding = args.flag("stochastic-rounding");
  o.out_dir = args.str("out", "runs/" + o.task + "-" + method_name(o.spsa.method));
  args.require_all_used();
  SMEZO_REQUIRE(args.positional().empty(), "%s: unexpected argument '%s' (options are --name value)",
                "train", args.positional().empty() ? "" : args.positional()[0].c_str());
  train(o);
  return 0;
}

}  // namespace smezo
