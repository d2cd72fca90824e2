// smezo::replay(): the log's header checked, the base model opened as the run stored it (refused unless
// the run's own), every logged update applied, a checkpoint saved, or for --tune lora/prefix a PEFT
// adapter folder (a prefix first rebuilt from its P init tokens' activations, one short forward).
#include "smezo/replay.h"

#include "common/check.h"
#include "common/device_names.h"
#include "common/file_util.h"
#include "model/model_fingerprint.h"
#include "setup/model_setup.h"
#include "setup/run_path.h"
#include "train/checkpoint.h"
#include "train/checkpoint_lora.h"
#include "train/checkpoint_prefix.h"
#include "train/checkpoint_scales.h"
#include "train/spsa.h"

namespace smezo {

namespace {

// What the run header says of the run, read and checked before the model is opened.
struct LoggedRun {
  std::string where;  // "SEEDLOG line N": the header, for messages about its fields
  std::string dtype, model;  // storage dtype as files spell it ("F32"), model path
  DType storage = DTYPE_F32;
  Device device = DEVICE_CPU;
  SpsaOptions opts;
  Tune tune = TUNE_FULL;
  LoraOptions lora_options;
  PrefixOptions prefix_options;
  bool scales_with_m = false;  // --tune scales
};

// A string field of the header, or `fallback` when absent.
std::string header_string(const SeedLog& log, const std::string& where, const char* key, const char* fallback) {
  if (!log.header.contains(key)) return fallback;
  SMEZO_REQUIRE(log.header[key].is_string(), "%s: the run header's %s %s is not a string", where.c_str(), key,
                printable(log.header[key].dump(), 80).c_str());
  return log.header[key].get<std::string>();
}

LoggedRun read_logged_run(const SeedLog& log, const ReplayOptions& s) {
  LoggedRun r;
  r.where = seed_log_header_where(log, s.seed_log);
  SMEZO_REQUIRE(log.header.contains("spsa"), "%s: not a smezo training log (no 'spsa' in the header)",
                r.where.c_str());
  // Updates round to the storage dtype, so the logged device and dtype are the defaults.
  r.dtype = header_string(log, r.where, "storage_dtype", "F32");
  r.storage = r.dtype == "BF16" ? DTYPE_BF16 : r.dtype == "F16" ? DTYPE_F16 : DTYPE_F32;
  r.device = s.device ? *s.device : enum_parse(device_names(), header_string(log, r.where, "device", "cpu"), "device");
  r.model = header_string(log, r.where, "model", "");
  r.opts = spsa_options_from_json(log.header["spsa"], r.where);
  const nlohmann::json tune = log.header.value("tune", nlohmann::json());  // absent: full
  const std::optional<Tune> tune_mode =
      tune.is_object() && tune.value("mode", nlohmann::json()).is_string()
          ? enum_find(tune_names(), tune["mode"].get<std::string>())
          : tune.is_null() ? std::optional<Tune>(TUNE_FULL) : std::nullopt;
  SMEZO_REQUIRE(tune_mode.has_value(), "%s: tune mode %s is not one this build replays (lora, prefix, scales, or "
                "none for full)", r.where.c_str(), printable(tune.dump(), 80).c_str());
  r.tune = *tune_mode;
  if (r.tune == TUNE_PREFIX) r.prefix_options = prefix_options_from_json(tune, r.where);
  if (r.tune == TUNE_LORA) r.lora_options = lora_options_from_json(tune, r.where);
  if (r.tune == TUNE_SCALES) r.scales_with_m = scales_with_m_from_json(tune, r.where);
  return r;
}

// The base model in the run's storage dtype, refused unless it is the run's own (its fingerprint).
LoadedModel open_replay_model(const LoggedRun& run, const SeedLog& log, const ReplayOptions& s) {
  ModelOpenOptions mo;
  mo.model_path = s.base;
  mo.tokenizer_path = s.tokenizer;
  mo.device = run.device;
  mo.dtype = s.dtype ? s.dtype : run.device == DEVICE_CPU ? std::nullopt : std::optional<DType>(run.storage);
  // the updates need no activations; a prefix is made from the model's activations of P tokens
  mo.max_tokens = run.tune == TUNE_PREFIX ? run.prefix_options.tokens : 1;
  mo.max_logit_rows = 1;
  mo.adapters.prefix_tokens = run.tune == TUNE_PREFIX ? run.prefix_options.tokens : 0;
  mo.adapters.lora_rank = run.tune == TUNE_LORA ? run.lora_options.rank : 0;
  if (run.tune == TUNE_LORA) mo.adapters.lora_targets = run.lora_options.targets;
  if (run.tune == TUNE_SCALES) {  // the run's base GGUF, kept in its blocks as the run kept it
    scales_require_base(log.header["tune"], s.base, s.seed_log);
    mo.weights = WEIGHTS_PACKED;
  }
  mo.tokenizer_optional = true;  // the updates need none; one found is copied into the checkpoint
  LoadedModel lm = open_model(mo);
  checkpoint_dtype(*lm.model, s.checkpoint_dtype);  // a bad name fails before the updates
  const std::string replay_dtype = dtype_name(lm.model->storage_dtype());
  SMEZO_REQUIRE(replay_dtype == run.dtype,
                "%s: the run stored weights as %s, this replay as %s: the updates would round differently "
                "---> HINT: replay with %s", s.seed_log.c_str(), printable(run.dtype, 40).c_str(), replay_dtype.c_str(),
                run.dtype == "F32" ? "--dtype f32 (or no --dtype) on either device"
                                   : ("--device cuda --dtype " + std::string(dtype_option_name(run.storage))).c_str());
  // MeZO and R-MeZO logs have no thresholds to tell another model by: the header's fingerprint does
  const std::string other_model = model_fingerprint_difference(
      log.header.value("model_fingerprint", nlohmann::json()),
      model_fingerprint(model_fingerprint_parts(*lm.model), lm.model->config()), s.base);
  SMEZO_REQUIRE(other_model.empty(), "%s: %s ---> HINT: replay onto the model the run started from (the log names "
                "%s)", s.seed_log.c_str(), other_model.c_str(),
                run.model.empty() ? "none" : printable(run.model, 200).c_str());
  return lm;
}

}  // namespace

ReplayResult replay(const ReplayOptions& options) {
  ReplayOptions s = options;
  s.base = resolve_model_path(options.base);
  SeedLog log = seed_log_read(s.seed_log);
  const LoggedRun run = read_logged_run(log, s);
  LoadedModel lm = open_replay_model(run, log, s);
  // --tune lora/prefix: the run's adapters or prefix, from its seed
  if (run.tune == TUNE_LORA) lm.model->add_lora(run.lora_options, run.opts.seed);
  if (run.tune == TUNE_PREFIX) lm.model->add_prefix(run.prefix_options, run.opts.seed);
  if (run.tune == TUNE_SCALES) lm.model->add_scales(run.scales_with_m);
  SpsaOptimizer optimizer(*lm.model, run.opts);
  optimizer.check_matches(log.header["spsa"], run.where);
  optimizer.apply_seed_log(log, s.seed_log);
  if (run.tune == TUNE_LORA)
    save_lora_adapter(*lm.model, s.out, run.model.empty() ? s.base : run.model);
  else if (run.tune == TUNE_PREFIX)
    save_prefix_adapter(*lm.model, s.out, run.model.empty() ? s.base : run.model);
  else if (run.tune == TUNE_SCALES)
    save_scales_checkpoint(*lm.model, s.out, s.base,
                           scales_provenance(log.header, s.base, log.records.empty() ? 0 : log.records.back().step,
                                             absolute_path(s.seed_log), "smezo replay"));
  else
    save_hf_checkpoint(*lm.model, s.out, lm.tokenizer_path, nullptr, s.checkpoint_dtype);
  return ReplayResult{static_cast<int64_t>(log.records.size()), log.partial_tail, run.tune, s.base,
                      run.tune == TUNE_FULL ? lm.tokenizer_path : "", run_path_describe(log.header)};
}

}  // namespace smezo
