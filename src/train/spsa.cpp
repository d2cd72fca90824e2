// SPSA optimiser (see spsa.h).
#include "train/spsa.h"

#include <cmath>
#include <limits>

#include "common/check.h"
#include "formats/json_read.h"
#include "run/number_format.h"  // float_hex_bits
#include "train/train_options.h"  // spsa_resolve_defaults, spsa_option_rules

namespace smezo {

namespace {

bool is_norm(const ParamInfo& p) { return p.role == ROLE_NORM; }  // LayerNorm biases too
bool is_bias(const ParamInfo& p) { return p.is_bias; }
bool is_embedding(const ParamInfo& p) { return role_is_embedding(p.role); }

}  // namespace

NoiseKind spsa_logged_noise(const nlohmann::json& j, const std::string& source) {
  if (!j.contains("noise") && !j.contains("noise_spec")) return NOISE_GAUSSIAN_V1;  // spec v1 log
  SMEZO_REQUIRE(j.contains("noise") && j["noise"].is_string() && j.contains("noise_spec") &&
                    j["noise_spec"].is_number_integer(),
                "%s: the run header names its noise incompletely (noise %s, noise_spec %s): both a "
                "kind and an integer spec version are needed", source.c_str(),
                j.contains("noise") ? j["noise"].dump().c_str() : "missing",
                j.contains("noise_spec") ? j["noise_spec"].dump().c_str() : "missing");
  const int64_t version = j["noise_spec"].get<int64_t>();
  SMEZO_REQUIRE(version >= 1 && version <= NOISE_SPEC_VERSION,
                "%s: the run used noise spec version %lld, this smezo implements versions 1 to %d "
                "---> HINT: replay or resume it with the smezo release that wrote it", source.c_str(),
                (long long)version, NOISE_SPEC_VERSION);
  const std::string name = j["noise"].get<std::string>();
  const NoiseKind kind = enum_find(noise_names(), name).value_or(NOISE_AUTO);
  SMEZO_REQUIRE(kind != NOISE_AUTO,
                "%s: the run used noise '%s', which this smezo does not know (it knows %s) ---> HINT: replay "
                "or resume it with the smezo release that wrote it", source.c_str(), printable(name).c_str(),
                enum_choice_list(enum_choices(noise_names())).c_str());
  SMEZO_REQUIRE(version >= noise_spec_version_of(kind),
                "%s: noise '%s' does not exist in noise spec version %lld (it was added in version %d): "
                "the run header is inconsistent", source.c_str(), name.c_str(), (long long)version,
                noise_spec_version_of(kind));
  return kind;
}

void spsa_validate(const SpsaOptions& options, const ValueOrigin& origin) {
  const SpsaOptions o = spsa_resolve_defaults(options);
  enum_require_known(method_names(), o.method, "--method");
  enum_require_known(lr_schedule_names(), o.schedule, "--lr-schedule");
  enum_require_known(noise_names(), o.noise, "noise kind");
  check_option_rules(spsa_option_rules(), o, origin);
  if (o.method == METHOD_MEZO && *o.sparsity != 0.0)
    origin.fail("--sparsity", format_string("%g: mezo tunes every entry (a sparsity applies to smezo and rmezo only)",
                                            *o.sparsity));
  if (o.total_steps <= 0)
    origin.fail("--steps", format_string("%lld: the number of steps must be positive", (long long)o.total_steps));
  if (o.method != METHOD_FZOO) return;
  if (o.probes < 2)
    origin.fail("--probes-per-step", format_string("%lld: fzoo divides its step by the spread of its probe losses, "
                                                   "so it needs 2 or more (the paper uses 8)", (long long)o.probes));
  if (*o.sparsity != 0.0)
    origin.fail("--sparsity", format_string("%g: fzoo tunes every entry (a sparsity applies to smezo and rmezo only)",
                                            *o.sparsity));
  if (o.weight_decay != 0.0f)
    origin.fail("--weight-decay", format_string("%g: fzoo scales its step by the spread of the losses; weight decay "
                                                "is not defined for it here", o.weight_decay));
  if (o.noise != NOISE_RADEMACHER && o.noise != NOISE_SIGN && o.noise != NOISE_AUTO)
    origin.fail("--noise", format_string("%s: fzoo's probes are Rademacher (±1: --noise rademacher or sign)",
                                         noise_name(o.noise)));
}

SpsaOptimizer::SpsaOptimizer(Model& model, const SpsaOptions& opts)
    : model_(model), opts_(spsa_resolve_defaults(opts)) {
  spsa_validate(opts_);
  if (opts_.noise == NOISE_AUTO) opts_.noise = spsa_default_noise(opts_.method);
  const uint64_t mask_seed = splitmix64(opts_.seed ^ 0x524D455A4FULL);  // "RMEZO"
  for (Param* p : model_.params()) {
    ParamInfo& info = p->info;
    info.trainable = !((opts_.freeze_embeddings && is_embedding(info)) ||
                       (opts_.freeze_norms && is_norm(info)) || (opts_.freeze_biases && is_bias(info)));
    // --tune lora / prefix: only the adapters
    if (model_.has_lora() || model_.has_prefix()) info.trainable = info.adapter != ADAPTER_NONE;
    const bool scales = model_.has_scales() && model_.is_scales(p);  // --tune scales: only the master scales
    if (model_.has_scales()) info.trainable = info.trainable && scales;
    SMEZO_REQUIRE(!(info.trainable && p->w.packed()), "%s is kept in its quantised blocks (--weights packed), "
                  "which holds frozen weights only, but this run tunes it ---> HINT: --tune lora or --tune prefix, "
                  "or --weights dequantized", info.name.c_str());
    // the methods' masks apply to the linear weights, and under --tune prefix to the prefix
    // (and under --tune scales to each weight's scales: |d| per tensor, as |w| per linear weight)
    const bool maskable =
        info.is_linear || scales || info.adapter == ADAPTER_PREFIX_KEY || info.adapter == ADAPTER_PREFIX_VALUE;
    info.stochastic_rounding = opts_.stochastic_rounding;
    info.noise = opts_.noise;
    info.mask = MASK_DENSE;
    info.threshold = 0.0f;
    info.keep_prob = 1.0f;
    if (info.trainable && maskable && opts_.method == METHOD_SMEZO) {  // frozen: no mask to fix
      info.mask = MASK_MAGNITUDE;
      // LoRA's B starts at 0 (h = 0 would keep only unmoved entries): B is dense (h = +inf), A masked.
      info.threshold = *opts_.sparsity == 0.0 || info.adapter == ADAPTER_LORA_B
                           ? std::numeric_limits<float>::infinity()
                           : model_.backend().abs_quantile(*p, 1.0 - *opts_.sparsity);
    } else if (info.trainable && maskable && opts_.method == METHOD_RMEZO && *opts_.sparsity > 0.0) {
      info.mask = MASK_RANDOM;
      info.keep_prob = static_cast<float>(1.0 - *opts_.sparsity);
      info.mask_seed = mask_seed;
    }
    SMEZO_REQUIRE(!(opts_.stochastic_rounding && info.trainable && p->w.dtype != DTYPE_BF16),
                  "stochastic rounding applies to bf16 storage, but %s is stored as %s "
                  "---> HINT: --device cuda --dtype bf16, or drop --stochastic-rounding",
                  info.name.c_str(), dtype_name(p->w.dtype));
    if (info.trainable) tuned_count_ += p->w.numel();
  }
}

uint64_t SpsaOptimizer::step_seed(int64_t step) const {
  return splitmix64(opts_.seed * 0x100000001B3ULL + static_cast<uint64_t>(step));
}

float SpsaOptimizer::lr_at(int64_t step) const {
  if (opts_.schedule == LR_CONSTANT) return *opts_.lr;
  // linear decay to 0 over the run; steps are 1-based
  double frac = 1.0 - static_cast<double>(step - 1) / static_cast<double>(opts_.total_steps);
  return static_cast<float>(*opts_.lr * (frac > 0.0 ? frac : 0.0));
}

std::vector<Probe> SpsaOptimizer::step_probes(uint64_t seed, bool in_one_pass) const {
  if (in_one_pass) return {Probe{opts_.eps, seed, true}};
  return {Probe{opts_.eps, seed}, Probe{-opts_.eps, seed}};
}

uint64_t SpsaOptimizer::probe_seed(int64_t step, int64_t i) const {
  const uint64_t first = step_seed(step);
  return i == 0 ? first : splitmix64(first + static_cast<uint64_t>(i));
}

std::vector<Probe> SpsaOptimizer::probes(int64_t step, bool in_one_pass) const {
  std::vector<Probe> probes;
  if (opts_.method == METHOD_FZOO) probes.push_back(Probe{});  // l_0: the weights themselves
  for (int64_t i = 0; i < opts_.probes; i++) {
    if (opts_.method == METHOD_FZOO) {
      probes.push_back(Probe{opts_.eps, probe_seed(step, i)});
      continue;
    }
    for (const Probe& p : step_probes(probe_seed(step, i), in_one_pass)) probes.push_back(p);
  }
  return probes;
}

SeedRecord SpsaStep::record() const {
  SeedRecord r{step, seed, g, lr, {}};
  if (probes.size() > 1) r.more_probes.assign(probes.begin() + 1, probes.end());
  return r;
}

SpsaStep SpsaOptimizer::finish(int64_t step, std::vector<double> losses) {
  SpsaStep r;
  r.step = step;
  r.seed = step_seed(step);
  r.lr = lr_at(step);
  r.losses = std::move(losses);
  const size_t want = opts_.method == METHOD_FZOO ? opts_.probes + 1 : 2 * opts_.probes;
  SMEZO_REQUIRE(r.losses.size() == want, "step %lld: %zu losses for the %s", (long long)step, r.losses.size(),
                want == 2 ? "two probes" : (std::to_string(want) + " probe halves").c_str());
  if (opts_.method == METHOD_FZOO) {
    finish_fzoo(&r);
    return r;
  }
  r.loss_plus = r.losses[0];
  r.loss_minus = r.losses[1];
  finish_spsa(&r);
  return r;
}

namespace {

// The non-finite loss stop: W untouched, the log so far good.
void require_finite_losses(const std::vector<double>& losses, int64_t step) {
  for (size_t i = 0; i < losses.size(); i++)
    SMEZO_REQUIRE(std::isfinite(losses[i]),
                  "the loss became %s at step %lld (probe loss %zu of %zu = %g); the weights are those after "
                  "step %lld ---> HINT: lower the learning rate or eps", std::isnan(losses[i]) ? "NaN" : "infinite",
                  (long long)step, i + 1, losses.size(), losses[i], (long long)(step - 1));
}

}  // namespace

void SpsaOptimizer::finish_spsa(SpsaStep* r) {
  const int64_t step = r->step;
  if (opts_.probes == 1)  // one probe: the l+/l- message
    SMEZO_REQUIRE(std::isfinite(r->loss_plus) && std::isfinite(r->loss_minus),
                  "the loss became %s at step %lld (l+ = %g, l- = %g); the weights are those after "
                  "step %lld ---> HINT: lower the learning rate or eps",
                  std::isnan(r->loss_plus) || std::isnan(r->loss_minus) ? "NaN" : "infinite",
                  (long long)step, r->loss_plus, r->loss_minus, (long long)(step - 1));
  require_finite_losses(r->losses, step);
  double sum = 0.0;
  for (double l : r->losses) sum += l;
  r->loss = sum / static_cast<double>(r->losses.size());  // q = 1: 0.5·(l+ + l-) exactly
  for (int64_t i = 0; i < opts_.probes; i++) {
    const double lp = r->losses[2 * i], lm = r->losses[2 * i + 1];
    const float g = static_cast<float>((lp - lm) / (2.0 * static_cast<double>(opts_.eps)));
    SMEZO_REQUIRE(std::isfinite(g), "the projected gradient overflowed at step %lld (l+ = %g, l- = %g, eps = %g) "
                  "---> HINT: use a larger eps", (long long)step, lp, lm, opts_.eps);
    r->probes.push_back(SeedProbe{probe_seed(step, i), g});
  }
  r->g = r->probes[0].g;
  update_weights(r->probes, r->lr, fold_);
}

void SpsaOptimizer::finish_fzoo(SpsaStep* r) {
  const int64_t step = r->step;
  require_finite_losses(r->losses, step);
  const double l0 = r->losses[0];
  const int64_t n = opts_.probes;
  double mean = 0.0;
  for (int64_t i = 1; i <= n; i++) mean += r->losses[i];
  mean /= static_cast<double>(n);
  double var = 0.0;
  for (int64_t i = 1; i <= n; i++) var += (r->losses[i] - mean) * (r->losses[i] - mean);
  r->sigma = std::sqrt(var / static_cast<double>(n - 1));
  for (int64_t i = 1; i <= n; i++) {
    const float g = static_cast<float>((r->losses[i] - l0) / static_cast<double>(opts_.eps));
    SMEZO_REQUIRE(std::isfinite(g), "the projected gradient overflowed at step %lld (l_%lld = %g, l_0 = %g, eps = %g) "
                  "---> HINT: use a larger eps", (long long)step, (long long)i, r->losses[i], l0, opts_.eps);
    r->probes.push_back(SeedProbe{probe_seed(step, i - 1), g});
  }
  // every perturbed loss equal: no spread to scale by, and no step
  r->lr = r->sigma > 0.0 ? static_cast<float>(static_cast<double>(r->lr) / r->sigma) : 0.0f;
  SMEZO_REQUIRE(std::isfinite(r->lr), "step %lld: the step size lr / sigma overflowed (sigma = %g) ---> HINT: "
                "use a larger eps or a smaller learning rate", (long long)step, r->sigma);
  r->loss = l0;
  r->loss_plus = r->losses[1];
  r->loss_minus = l0;
  r->g = r->probes[0].g;
  update_weights(r->probes, r->lr, fold_);
}

void SpsaOptimizer::apply_update(uint64_t seed, float g, float lr) { apply_update({SeedProbe{seed, g}}, lr); }

void SpsaOptimizer::apply_update(const std::vector<SeedProbe>& probes, float lr) { update_weights(probes, lr, false); }

void SpsaOptimizer::update_weights(const std::vector<SeedProbe>& probes, float lr, bool fold) {
  // q = 1: coef = lr·g / 1 = lr·g, the one-probe update bit for bit
  const float q = static_cast<float>(probes.size());
  const float decay = lr * opts_.weight_decay;
  Backend& backend = model_.backend();
  std::vector<UpdateArgs> updates(probes.size());
  for (Param* p : model_.params()) {
    const bool decayed = !is_norm(p->info) && !is_bias(p->info);
    for (size_t i = 0; i < probes.size(); i++)
      updates[i] = UpdateArgs{lr * probes[i].g / q, decayed && i == 0 ? decay : 0.0f, probes[i].seed};
    if (fold && update_foldable(p->info)) {
      backend.defer_updates(*p, updates);  // applied by the next step's first W' pass of p
      continue;
    }
    for (const UpdateArgs& u : updates) backend.update(*p, u.coef, u.decay, u.seed);
  }
}

void SpsaOptimizer::apply_record(const SeedRecord& r, const std::string& path) {
  seed_record_require_loggable(r, path);
  const std::vector<SeedProbe> probes = seed_record_probes(r);
  SMEZO_REQUIRE(static_cast<int64_t>(probes.size()) == opts_.probes,
                "%s: step %lld logs %zu probes, the run takes %lld per step", path.c_str(), (long long)r.step,
                probes.size(), (long long)opts_.probes);
  for (size_t i = 0; i < probes.size(); i++)
    SMEZO_REQUIRE(probes[i].seed == probe_seed(r.step, static_cast<int64_t>(i)),
                  "%s: step %lld has seed %llu, expected %llu", path.c_str(), (long long)r.step,
                  (unsigned long long)probes[i].seed, (unsigned long long)probe_seed(r.step, static_cast<int64_t>(i)));
  apply_update(probes, r.lr);
}

void SpsaOptimizer::apply_seed_log(const SeedLog& log, const std::string& path) {
  for (const SeedRecord& r : log.records) apply_record(r, path);
}

nlohmann::json SpsaOptimizer::describe() const {
  nlohmann::json j;
  j["method"] = method_name(opts_.method);
  j["sparsity"] = *opts_.sparsity;
  j["eps"] = opts_.eps;
  j["lr"] = *opts_.lr;
  j["lr_schedule"] = lr_schedule_name(opts_.schedule);
  j["total_steps"] = opts_.total_steps;
  j["weight_decay"] = opts_.weight_decay;
  j["seed"] = opts_.seed;
  j["freeze"] = {{"embeddings", opts_.freeze_embeddings}, {"norms", opts_.freeze_norms},
                 {"biases", opts_.freeze_biases}};
  j["stochastic_rounding"] = opts_.stochastic_rounding;
  j["noise"] = noise_name(opts_.noise);
  j["noise_spec"] = noise_spec_version_of(opts_.noise);  // the version an older smezo needs to replay it
  if (opts_.probes != 1) j["probes"] = opts_.probes;  // absent: one
  nlohmann::json thresholds = nlohmann::json::object();
  for (Param* p : model_.params())
    if (p->info.mask == MASK_MAGNITUDE) thresholds[p->info.name] = float_hex_bits(p->info.threshold);
  j["thresholds_f32_bits"] = thresholds;
  return j;
}

SpsaOptions spsa_options_from_json(const nlohmann::json& j, const std::string& source) {
  SpsaOptions o;
  auto logged_enum = [&](const auto& names, const char* key) {
    const std::string name = j.at(key).get<std::string>();
    const auto value = enum_find(names, name);
    SMEZO_REQUIRE(value.has_value(), "%s: the run header's %s '%s' is not one this smezo knows (%s) ---> HINT: replay "
                  "or resume it with the smezo release that wrote it", source.c_str(), key, printable(name).c_str(),
                  enum_choice_list(enum_choices(names)).c_str());
    return *value;
  };
  try {
    o.method = logged_enum(method_names(), "method");
    o.sparsity = j.at("sparsity").get<double>();
    o.eps = json_number_at<float>(j, "eps", source);
    o.lr = json_number_at<float>(j, "lr", source);
    o.schedule = logged_enum(lr_schedule_names(), "lr_schedule");
    o.total_steps = json_number_at<int64_t>(j, "total_steps", source);
    o.weight_decay = json_number_at<float>(j, "weight_decay", source);
    o.seed = json_number_at<uint64_t>(j, "seed", source);
    o.freeze_embeddings = j.at("freeze").at("embeddings").get<bool>();
    o.freeze_norms = j.at("freeze").at("norms").get<bool>();
    o.freeze_biases = j.at("freeze").at("biases").get<bool>();
    o.stochastic_rounding = j.value("stochastic_rounding", false);
    o.noise = spsa_logged_noise(j, source);
    o.probes = j.contains("probes") ? json_number_at<int64_t>(j, "probes", source) : 1;
  } catch (const nlohmann::json::exception& e) {
    throw_error("%s: the run header is incomplete or malformed: %s", source.c_str(), e.what());
  }
  // the checks of a run's options, said of the header's fields: no run can log values outside them
  spsa_validate(o, ValueOrigin{source, {{"--probes-per-step", "probes"}, {"--steps", "total_steps"}},
                               "the seed log was edited or damaged: use the run's own copy"});
  return o;
}

std::vector<std::string> SpsaOptimizer::differences(const nlohmann::json& header, const std::string& path) const {
  // Compare as the optimiser reads them (floats as float), so 0.001 written by hand matches.
  const SpsaOptions t = spsa_options_from_json(header, path);
  const SpsaOptions& m = opts_;
  const nlohmann::json mine = describe();
  std::vector<std::string> out;
  auto compare = [&](bool same, const char* key) {
    if (!same)
      out.push_back(format_string("%s = %s in the run, %s here", key,
                                  header.contains(key) ? header[key].dump().c_str() : "(missing)",
                                  mine.contains(key) ? mine[key].dump().c_str() : "(missing)"));
  };
  compare(t.method == m.method, "method");
  compare(t.sparsity == m.sparsity, "sparsity");
  compare(t.eps == m.eps, "eps");
  compare(t.lr == m.lr, "lr");
  compare(t.schedule == m.schedule, "lr_schedule");
  compare(t.total_steps == m.total_steps, "total_steps");
  compare(t.weight_decay == m.weight_decay, "weight_decay");
  compare(t.seed == m.seed, "seed");
  compare(t.freeze_embeddings == m.freeze_embeddings, "freeze_embeddings");
  compare(t.freeze_norms == m.freeze_norms, "freeze_norms");
  compare(t.freeze_biases == m.freeze_biases, "freeze_biases");
  compare(t.stochastic_rounding == m.stochastic_rounding, "stochastic_rounding");
  if (t.probes != m.probes)
    out.push_back(format_string("probes per step = %lld in the run, %lld here", (long long)t.probes,
                                (long long)m.probes));
  if (t.noise != m.noise)
    out.push_back(format_string("the run used noise %s, this command asks for %s (leave the noise option out to "
                                "continue with the run's own noise)", noise_name(t.noise), noise_name(m.noise)));
  return out;
}

void SpsaOptimizer::check_matches(const nlohmann::json& header, const std::string& path) const {
  std::string listed;
  for (const std::string& d : differences(header, path)) listed += (listed.empty() ? "" : "; ") + d;
  SMEZO_REQUIRE(listed.empty(), "%s: %s ---> HINT: use the options of the original run", path.c_str(),
                listed.c_str());
  nlohmann::json mine = describe();
  const nlohmann::json& theirs = header.value("thresholds_f32_bits", nlohmann::json::object());
  for (auto& kv : mine["thresholds_f32_bits"].items()) {
    SMEZO_REQUIRE(theirs.contains(kv.key()) && theirs[kv.key()] == kv.value(),
                  "%s: the S-MeZO threshold of %s differs from the logged one: this is not the base "
                  "model the run started from", path.c_str(), kv.key().c_str());
  }
}

}  // namespace smezo
