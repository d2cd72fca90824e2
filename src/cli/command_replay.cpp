// smezo replay BASE SEEDLOG --out DIR: rebuilds a run's weights bit-exactly from the base model and
// its seed log (one update per logged step) as a Hugging Face checkpoint (--tune lora/prefix: its PEFT
// adapter folder; a prefix is first rebuilt from its P init tokens' activations, one short forward).
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "common/check.h"
#include "model/model_fingerprint.h"
#include "run/seed_log.h"
#include "setup/run_path.h"
#include "train/checkpoint.h"
#include "train/checkpoint_lora.h"
#include "train/checkpoint_prefix.h"
#include "train/spsa.h"

namespace smezo {

namespace {

struct ReplayState {
  std::string base, log_path, out, tokenizer, device, dtype, checkpoint_dtype;
};

// What the run header says of the run, read and checked before the model is opened.
struct LoggedRun {
  std::string where;  // "SEEDLOG line N": the header, for messages about its fields
  std::string dtype, dtype_arg, device, model;  // storage dtype ("F32"), as an option ("f32"), device, model path
  SpsaOptions opts;
  bool lora = false, prefix = false;
  LoraOptions lora_options;
  PrefixOptions prefix_options;
};

// A string field of the header, or `fallback` when absent.
std::string header_string(const SeedLog& log, const std::string& where, const char* key, const char* fallback) {
  if (!log.header.contains(key)) return fallback;
  SMEZO_REQUIRE(log.header[key].is_string(), "%s: the run header's %s %s is not a string", where.c_str(), key,
                printable(log.header[key].dump(), 80).c_str());
  return log.header[key].get<std::string>();
}

LoggedRun read_logged_run(const SeedLog& log, const ReplayState& s) {
  LoggedRun r;
  r.where = seed_log_header_where(log, s.log_path);
  SMEZO_REQUIRE(log.header.contains("spsa"), "%s: not a smezo training log (no 'spsa' in the header)",
                r.where.c_str());
  // Updates round to the storage dtype, so the logged device and dtype are the defaults.
  r.dtype = header_string(log, r.where, "storage_dtype", "F32");
  r.dtype_arg = r.dtype == "BF16" ? "bf16" : r.dtype == "F16" ? "f16" : "f32";
  r.device = s.device.empty() ? header_string(log, r.where, "device", "cpu") : s.device;
  r.model = header_string(log, r.where, "model", "");
  r.opts = spsa_options_from_json(log.header["spsa"], r.where);
  const nlohmann::json tune = log.header.value("tune", nlohmann::json());  // absent: full
  const std::optional<Tune> tune_mode =
      tune.is_object() && tune.value("mode", nlohmann::json()).is_string()
          ? enum_find(tune_names(), tune["mode"].get<std::string>())
          : tune.is_null() ? std::optional<Tune>(TUNE_FULL) : std::nullopt;
  SMEZO_REQUIRE(tune_mode.has_value(), "%s: tune mode %s is not one this build replays (lora, prefix, or none for "
                "full)", r.where.c_str(), printable(tune.dump(), 80).c_str());
  r.lora = tune_mode == TUNE_LORA;
  r.prefix = tune_mode == TUNE_PREFIX;
  if (r.prefix) r.prefix_options = prefix_options_from_json(tune, r.where);
  if (r.lora) r.lora_options = lora_options_from_json(tune, r.where);
  return r;
}

// The base model in the run's storage dtype, refused unless it is the run's own (its fingerprint).
LoadedModel open_replay_model(const LoggedRun& run, const SeedLog& log, const ReplayState& s) {
  ModelOpenOptions mo;
  mo.model_path = s.base;
  mo.tokenizer_path = s.tokenizer;
  mo.device = run.device;
  mo.dtype = !s.dtype.empty() ? s.dtype : run.device == "cpu" ? "" : run.dtype_arg;
  // the updates need no activations; a prefix is made from the model's activations of P tokens
  mo.max_tokens = run.prefix ? run.prefix_options.tokens : 1;
  mo.max_logit_rows = 1;
  mo.adapters.prefix_tokens = run.prefix ? run.prefix_options.tokens : 0;
  mo.adapters.lora_rank = run.lora ? run.lora_options.rank : 0;
  if (run.lora) mo.adapters.lora_targets = run.lora_options.targets;
  mo.tokenizer_optional = true;  // the updates need none; one found is copied into the checkpoint
  LoadedModel lm = open_model(mo);
  checkpoint_dtype(*lm.model, s.checkpoint_dtype);  // a bad name fails before the updates
  const std::string replay_dtype = dtype_name(lm.model->params().front()->w.dtype);
  SMEZO_REQUIRE(replay_dtype == run.dtype,
                "%s: the run stored weights as %s, this replay as %s: the updates would round differently "
                "---> HINT: replay with %s", s.log_path.c_str(), printable(run.dtype, 40).c_str(), replay_dtype.c_str(),
                run.dtype == "F32" ? "--dtype f32 (or no --dtype) on either device"
                                   : ("--device cuda --dtype " + run.dtype_arg).c_str());
  // MeZO and R-MeZO logs have no thresholds to tell another model by: the header's fingerprint does
  const std::string other_model = model_fingerprint_difference(
      log.header.value("model_fingerprint", nlohmann::json()),
      model_fingerprint(model_fingerprint_parts(*lm.model), lm.model->config()), s.base);
  SMEZO_REQUIRE(other_model.empty(), "%s: %s ---> HINT: replay onto the model the run started from (the log names "
                "%s)", s.log_path.c_str(), other_model.c_str(),
                run.model.empty() ? "none" : printable(run.model, 200).c_str());
  return lm;
}

int run_replay(const ReplayState& s) {
  SeedLog log = seed_log_read(s.log_path);
  const LoggedRun run = read_logged_run(log, s);
  LoadedModel lm = open_replay_model(run, log, s);
  const bool lora = run.lora, prefix = run.prefix;
  // --tune lora/prefix: the run's adapters or prefix, from its seed
  if (lora) lm.model->add_lora(run.lora_options, run.opts.seed);
  if (prefix) lm.model->add_prefix(run.prefix_options, run.opts.seed);
  SpsaOptimizer optimizer(*lm.model, run.opts);
  optimizer.check_matches(log.header["spsa"], run.where);
  for (const SeedRecord& r : log.records) optimizer.apply_record(r, s.log_path);
  if (lora)
    save_lora_adapter(*lm.model, s.out, run.model.empty() ? s.base : run.model);
  else if (prefix)
    save_prefix_adapter(*lm.model, s.out, run.model.empty() ? s.base : run.model);
  else
    save_hf_checkpoint(*lm.model, s.out, lm.tokenizer_path, nullptr, s.checkpoint_dtype);
  std::printf("replayed %zu steps of %s onto %s -> %s%s\n", log.records.size(), s.log_path.c_str(), s.base.c_str(),
              s.out.c_str(), log.partial_tail ? " (a partial last line was ignored)" : "");
  std::printf("the run's forward passes took: %s (a replay runs the updates only, on any path)\n",
              run_path_describe(log.header).c_str());
  if (lora) {  // an adapter folder holds no tokenizer
    std::printf("%s is a LoRA adapter (PEFT layout): smezo merge --model %s --adapter %s --out DIR makes a full "
                "model of it\n", s.out.c_str(), s.base.c_str(), s.out.c_str());
    return 0;
  }
  if (prefix) {
    std::printf("%s is a prefix adapter (PEFT's PREFIX_TUNING layout) for %s\n", s.out.c_str(), s.base.c_str());
    return 0;
  }
  if (lm.tokenizer_path.empty())
    std::printf("no tokenizer beside %s and no --tokenizer: %s holds none (copy the model's tokenizer there to use "
                "it for text)\n", s.base.c_str(), s.out.c_str());
  else
    std::printf("tokenizer %s copied into %s\n", lm.tokenizer_path.c_str(), s.out.c_str());
  return 0;
}

}  // namespace

Command register_replay(CLI::App& smezo) {
  auto s = std::make_shared<ReplayState>();
  CLI::App* cmd = add_command(smezo, "replay", "rebuild a run's fine-tuned weights from the base model and its "
                                               "seed log, bit for bit, as a Hugging Face checkpoint");
  cmd->add_option("BASE", s->base, "the base model the run started from")->type_name("PATH")->required();
  cmd->add_option("SEEDLOG", s->log_path, "the run's seed_log.txt")->type_name("PATH")->required();
  cmd->add_option("--out", s->out, "the checkpoint folder to write")->type_name("DIR")->required();
  cmd->add_option("--tokenizer", s->tokenizer, "copied into the checkpoint (replay itself needs none)")
      ->type_name("PATH")
      ->default_str("tokenizer.model beside the base model, the bundled one for stories260K, else none");
  cmd->add_option("--checkpoint-dtype", s->checkpoint_dtype, "dtype of the checkpoint's tensors")
      ->check(one_of({"f32", "f16", "bf16"}))
      ->default_str("the run's storage dtype");
  cmd->add_option("--device", s->device, "where the updates run")
      ->check(one_of({"cpu", "cuda"}))
      ->default_str("the run's, from the seed log");
  cmd->add_option("--dtype", s->dtype, "weight storage; must be the run's, since updates round to it")
      ->check(one_of({"f32", "f16", "bf16"}))
      ->default_str("the run's, from the seed log");
  return {cmd, [s] { return run_replay(*s); }};
}

}  // namespace smezo
