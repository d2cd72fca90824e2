// The training options' defaults and checks (see train_options.h).
#include "train/train_options.h"

#include <cfloat>
#include <filesystem>

#include "common/check.h"
#include "common/device_names.h"
#include "model/lora.h"
#include "model/prefix.h"
#include "train/option_names.h"
#include "train/spsa.h"  // spsa_validate

namespace smezo {

SpsaOptions spsa_resolve_defaults(SpsaOptions o) {
  const bool dense = o.method == METHOD_MEZO || o.method == METHOD_FZOO;  // they tune every entry
  if (!o.sparsity) o.sparsity = dense ? 0.0 : 0.75;
  if (!o.lr) o.lr = dense ? 1e-6f : 2e-6f;
  return o;
}

NoiseKind spsa_default_noise(Method method) { return method == METHOD_FZOO ? NOISE_RADEMACHER : NOISE_GAUSSIAN; }

TrainOptions resolve_defaults(TrainOptions o) {
  if (o.tune == TUNE_SCALES && !o.spsa.lr) o.spsa.lr = kScalesDefaultLr;  // scale space
  o.spsa = spsa_resolve_defaults(o.spsa);
  o.spsa.total_steps = o.steps;
  if (o.weights == WEIGHTS_AUTO) o.weights = o.tune == TUNE_FULL ? WEIGHTS_DEQUANTIZED : WEIGHTS_PACKED;
  if (o.data_seed == 0) o.data_seed = o.spsa.seed;
  if (o.out_dir.empty())
    o.out_dir = "runs/" + (o.task_spec.empty() ? o.task : std::filesystem::path(o.task_spec).stem().string()) + "-" +
                method_name(o.spsa.method);
  return o;
}

const std::vector<OptionRule<SpsaOptions>>& spsa_option_rules() {
  using O = SpsaOptions;
  static const std::vector<OptionRule<O>> rules = {
      {"--sparsity", {false, 0, 1, false, true}, [](const O& o) { return *o.sparsity; }},
      {"--lr", ValueRange::at_least(0), [](const O& o) { return static_cast<double>(*o.lr); }},
      // a subnormal eps is below any weight's precision: every probe would give g = 0 (or an Inf)
      {"--eps", ValueRange::at_least(FLT_MIN), [](const O& o) { return static_cast<double>(o.eps); }},
      {"--weight-decay", ValueRange::at_least(0), [](const O& o) { return static_cast<double>(o.weight_decay); }},
      {"--probes-per-step", {true, 1, kMaxProbesPerStep}, [](const O& o) { return static_cast<double>(o.probes); }},
  };
  return rules;
}

const std::vector<OptionRule<TrainOptions>>& train_option_rules() {
  using O = TrainOptions;
  auto from = ValueRange::integers_from;
  static const std::vector<OptionRule<O>> rules = {
      {"--train-examples", from(1), [](const O& o) { return static_cast<double>(o.n_train); }},
      {"--dev-examples", from(0), [](const O& o) { return static_cast<double>(o.n_dev); }},
      {"--test-examples", from(0), [](const O& o) { return static_cast<double>(o.n_test); }},
      {"--accumulate", {true, 1, kMaxAccumulate}, [](const O& o) { return static_cast<double>(o.accumulate); }},
      {"--steps", from(1), [](const O& o) { return static_cast<double>(o.steps); }},
      {"--batch", from(1), [](const O& o) { return static_cast<double>(o.batch); }},
      {"--max-len", from(2), [](const O& o) { return static_cast<double>(o.max_len); }},  // BOS and one token
      {"--max-tokens", from(1), [](const O& o) { return static_cast<double>(o.max_tokens); }},
      {"--eval-every", from(0), [](const O& o) { return static_cast<double>(o.eval_every); }},
      {"--eval-examples", from(0), [](const O& o) { return static_cast<double>(o.eval_examples); }},
      {"--checkpoint-every", from(0), [](const O& o) { return static_cast<double>(o.checkpoint_every); }},
      {"--flush-every", from(1), [](const O& o) { return static_cast<double>(o.flush_every); }},
      {"--progress-every", from(0), [](const O& o) { return static_cast<double>(o.progress_every); }},
      {"--mpi-timeout", ValueRange::above(0), [](const O& o) { return o.mpi_timeout_s; }},
      {"--pipeline-stages", from(1), [](const O& o) { return static_cast<double>(o.pipeline_stages); }},
      {"--micro-batches", from(0), [](const O& o) { return static_cast<double>(o.micro_batches); }},
      {"--lora-r", {true, 1, kLoraMaxRank}, [](const O& o) { return static_cast<double>(o.lora_r); }},
      {"--lora-alpha", ValueRange::above(0), [](const O& o) { return static_cast<double>(o.lora_alpha); }},
      {"--prefix-tokens", {true, 1, kPrefixMaxTokens}, [](const O& o) { return static_cast<double>(o.prefix_tokens); }},
  };
  return rules;
}

const ValueRange& train_option_range(const std::string& option) {
  for (const auto& r : spsa_option_rules())
    if (option == r.option) return r.range;
  for (const auto& r : train_option_rules())
    if (option == r.option) return r.range;
  throw_error("train_option_range: no rule for %s", option.c_str());
}

void validate_data_options(const TrainOptions& o) {
  const bool files = !o.train_file.empty() || !o.dev_file.empty() || !o.test_file.empty();
  SMEZO_REQUIRE(!files || !o.task_spec.empty(), "train: --train-file, --dev-file and --test-file need --task-spec "
                "FILE (how a record becomes an example)");
  SMEZO_REQUIRE(o.task_spec.empty() || !o.train_file.empty(), "train: --task-spec needs --train-file");
}

void validate_train_options(const TrainOptions& o) {
  check_option_rules(train_option_rules(), o);
  enum_require_known(objective_names(), o.objective, "--objective");
  enum_require_known(tune_names(), o.tune, "--tune");
  enum_require_known(probe_passes_names(), o.probe_passes, "--probes");
  spsa_validate(o.spsa);
  validate_data_options(o);
  if (o.tune == TUNE_LORA) lora_validate(LoraOptions{o.lora_r, o.lora_alpha, lora_targets_parse(o.lora_targets)});
  if (o.tune == TUNE_PREFIX) prefix_validate(PrefixOptions{o.prefix_tokens});
  enum_require_known(weight_storage_names(), o.weights, "--weights");
  SMEZO_REQUIRE(o.tune != TUNE_SCALES || o.weights != WEIGHTS_DEQUANTIZED, "--tune scales tunes the block scales of "
                "a GGUF kept in its blocks, but --weights dequantized dequantizes them at load ---> HINT: drop --weights "
                "(--tune scales keeps them packed)");
  SMEZO_REQUIRE(o.weights != WEIGHTS_PACKED || o.tune != TUNE_FULL, "--weights packed keeps the base frozen in its "
                "quantised blocks, but --tune full (MeZO/S-MeZO) updates every weight ---> HINT: use --tune lora "
                "or --tune prefix over the packed base, or --weights dequantized to tune every weight");
}

}  // namespace smezo
