// smezo replay BASE SEEDLOG --out DIR: rebuilds fine-tuned weights from the base model and a
// run's seed log (no forward passes: one update per logged step), bit-exactly, and writes
// them as a Hugging Face checkpoint.
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/model_setup.h"
#include "common/check.h"
#include "run/seed_log.h"
#include "train/checkpoint.h"
#include "train/spsa.h"

namespace smezo {

int command_replay(int argc, char** argv) {
  Args args(argc, argv, 2);
  SMEZO_REQUIRE(args.positional().size() == 2, "usage: smezo replay BASE_MODEL SEED_LOG --out DIR");
  const std::string base = args.positional()[0], log_path = args.positional()[1];
  const std::string out = args.str("out", "");
  SMEZO_REQUIRE(!out.empty(), "replay: --out DIR is required");
  const std::string tokenizer = args.str("tokenizer", "");
  SeedLog log = seed_log_read(log_path);
  // Replay stores weights as training did (updates round to the storage dtype); the logged
  // device and dtype are the defaults.
  const std::string logged_dtype = log.header.value("storage_dtype", std::string("F32"));
  const std::string dtype_arg = logged_dtype == "BF16" ? "bf16" : logged_dtype == "F16" ? "f16" : "f32";
  const std::string device = args.str("device", log.header.value("device", std::string("cpu")));
  const std::string dtype = args.str("dtype", device == "cpu" ? "" : dtype_arg);
  args.require_all_used();
  SMEZO_REQUIRE(log.header.contains("spsa"), "%s: not a smezo training log (no 'spsa' in the header)",
                log_path.c_str());
  SpsaOptions opts = spsa_options_from_json(log.header["spsa"], log_path);
  LoadedModel lm = open_model_paths(base, tokenizer, device, 1, 1, dtype);
  const std::string replay_dtype = dtype_name(lm.model->params().front()->w.dtype);
  SMEZO_REQUIRE(replay_dtype == logged_dtype,
                "%s: the run stored weights as %s, this replay as %s: the updates would round "
                "differently ---> HINT: replay with --device cuda --dtype %s", log_path.c_str(),
                logged_dtype.c_str(), replay_dtype.c_str(), dtype_arg.c_str());
  SpsaOptimizer optimizer(*lm.model, opts);
  optimizer.check_matches(log.header["spsa"], log_path);
  for (const SeedRecord& r : log.records) optimizer.apply_update(r.seed, r.g, r.lr);
  save_hf_checkpoint(*lm.model, out, lm.tokenizer_path);
  std::printf("replayed %zu steps of %s onto %s -> %s%s\n", log.records.size(), log_path.c_str(), base.c_str(),
              out.c_str(), log.partial_tail ? " (a partial last line was ignored)" : "");
  return 0;
}

}  // namespace smezo
