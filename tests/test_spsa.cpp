// The SPSA optimiser on a quadratic objective: convergence for MeZO, S-MeZO and R-MeZO, mask
// semantics, sparsity 0 == MeZO bit for bit, and option validation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "common/check.h"
#include "cpu/cpu_backend.h"
#include "model/model.h"
#include "model_fixture.h"
#include "run/seed_log.h"
#include "test_util.h"
#include "train/spsa.h"

using namespace smezo;

namespace {

ModelConfig micro_config() {
  ModelConfig c = smezo_test::tiny_llama_config();
  c.dim = 8;
  c.hidden_dim = 8;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 4;
  c.vocab_size = 8;
  c.tied_lm_head = true;
  return c;
}

// f(W) = sum over every parameter entry of (w_eff - target)^2, w_eff read under the probe.
struct Quadratic {
  Model& model;
  std::vector<std::vector<float>> target;
  double operator()(const Probe& probe) const {
    double f = 0.0;
    for (size_t t = 0; t < model.params().size(); t++) {
      const Param& p = *model.params()[t];
      std::vector<float> w(p.w.numel());
      cpu_read_param(p, probe, 0, p.w.numel(), w.data());
      for (size_t i = 0; i < w.size(); i++) f += (w[i] - target[t][i]) * (w[i] - target[t][i]);
    }
    return f;
  }
};

std::vector<std::vector<float>> snapshot(Model& m) {
  std::vector<std::vector<float>> out;
  for (const Param* p : m.params()) out.emplace_back(p->w.f32(), p->w.f32() + p->w.numel());
  return out;
}

// One step whose losses are f of each probe in turn (never a pair: + then -).
SpsaStep step_on(SpsaOptimizer& opt, int64_t step, const std::function<double(const Probe&)>& f) {
  std::vector<double> losses;
  for (const Probe& p : opt.probes(step, false)) losses.push_back(f(p));
  return opt.finish(step, losses);
}

struct QuadraticRun {
  double f0, f1;     // objective before and after
  double floor = 0;  // the part no tuned entry can reduce (entries outside the mask)
};

// Runs `steps` SPSA steps on the quadratic with target 0.5·W0 (the optimum of a tuned entry
// stays inside an S-MeZO mask, since |0.5 w| <= |w| <= h).
QuadraticRun run_quadratic(Method method, double sparsity, int steps, Model& model,
                           std::vector<std::vector<float>>* before = nullptr) {
  Quadratic f{model, {}};
  for (const Param* p : model.params()) {
    f.target.emplace_back(p->w.f32(), p->w.f32() + p->w.numel());
    for (float& t : f.target.back()) t *= 0.5f;
  }
  SpsaOptions o;
  o.method = method;
  o.sparsity = sparsity;
  o.eps = 1e-3f;
  o.lr = 8e-4f;  // SPSA's best rate on sum (w-t)^2 is 1/(2(d+2)), about 1e-3 for d = 472
  o.total_steps = steps;
  SpsaOptimizer opt(model, o);
  if (before) *before = snapshot(model);
  QuadraticRun r;
  r.f0 = f(Probe{});
  for (size_t t = 0; t < model.params().size(); t++) {
    const Param& p = *model.params()[t];
    for (int64_t i = 0; i < p.w.numel(); i++) {
      const float w = p.w.f32()[i];
      if (!mask_keep(p.info.mask, w, p.info.threshold, p.info.keep_prob, p.info.mask_seed, p.info.tensor_id, i))
        r.floor += (w - f.target[t][i]) * (w - f.target[t][i]);
    }
  }
  for (int s = 1; s <= steps; s++) step_on(opt, s, [&](const Probe& p) { return f(p); });
  r.f1 = f(Probe{});
  return r;
}

}  // namespace

TEST(Spsa, QuadraticConvergesForEveryMethod) {
  // 3000 steps at d = 472 contract the reducible part by about e^-5: ask for 1/20 (MeZO), and
  // 1/10 with masks, where an S-MeZO entry whose noisy step overshoots past h freezes there.
  for (Method method : {METHOD_MEZO, METHOD_SMEZO, METHOD_RMEZO}) {
    CpuBackend be;
    Model m(smezo_test::random_weight_source(micro_config(), 7), be, DTYPE_F32, 8, 8);
    QuadraticRun r = run_quadratic(method, method == METHOD_MEZO ? 0.0 : 0.5, 3000, m);
    if (method != METHOD_MEZO) {
      EXPECT_GT(r.floor, 0.0);
    }
    EXPECT_LT(r.f1 - r.floor, (method == METHOD_MEZO ? 0.05 : 0.1) * (r.f0 - r.floor))
        << method_name(method) << ": " << r.f0 << " -> " << r.f1 << " (floor " << r.floor << ")";
  }
}

TEST(Spsa, MasksLeaveUntunedEntriesAlone) {
  for (Method method : {METHOD_SMEZO, METHOD_RMEZO}) {
    CpuBackend be;
    Model m(smezo_test::random_weight_source(micro_config(), 8), be, DTYPE_F32, 8, 8);
    std::vector<std::vector<float>> before;
    run_quadratic(method, 0.7, 200, m, &before);
    int64_t linear_total = 0, linear_changed = 0, dense_changed = 0, dense_total = 0;
    for (size_t t = 0; t < m.params().size(); t++) {
      const Param& p = *m.params()[t];
      for (int64_t i = 0; i < p.w.numel(); i++) {
        const bool changed = p.w.f32()[i] != before[t][i];
        if (p.info.is_linear) {
          linear_total++;
          linear_changed += changed;
          // an entry outside the mask never moves
          if (method == METHOD_SMEZO && std::fabs(before[t][i]) > p.info.threshold) {
            EXPECT_FALSE(changed);
          }
          if (method == METHOD_RMEZO &&
              !mask_keep(MASK_RANDOM, 0, 0, p.info.keep_prob, p.info.mask_seed, p.info.tensor_id, i)) {
            EXPECT_FALSE(changed);
          }
        } else {
          dense_total++;
          dense_changed += changed;
        }
      }
    }
    if (method == METHOD_SMEZO) {
      // the quantile mask keeps an exact count: the threshold is the k-th smallest |w| of the
      // tensor (0-based), k = floor(0.3 (n - 1)), so with distinct magnitudes k + 1 entries
      int64_t expected = 0;
      for (size_t t = 0; t < m.params().size(); t++) {
        const Param& p = *m.params()[t];
        if (!p.info.is_linear) continue;
        const int64_t n = p.w.numel(), k = static_cast<int64_t>(std::floor(0.3 * static_cast<double>(n - 1)));
        std::vector<float> mags(n);
        for (int64_t i = 0; i < n; i++) mags[i] = std::fabs(before[t][i]);
        std::sort(mags.begin(), mags.end());
        ASSERT_EQ(std::adjacent_find(mags.begin(), mags.end()), mags.end()) << p.info.name << ": tied magnitudes";
        EXPECT_EQ(p.info.threshold, mags[k]) << p.info.name;
        expected += k + 1;
      }
      EXPECT_EQ(linear_changed, expected) << "every entry inside the mask moves, none outside";
    } else {
      const double frac = double(linear_changed) / linear_total;
      EXPECT_NEAR(frac, 0.3, 0.08) << method_name(method);  // keep probability 1 - sparsity
    }
    EXPECT_EQ(dense_changed, dense_total) << "embeddings and norms are tuned densely";
  }
}

TEST(Spsa, SparsityZeroIsMezoBitForBit) {
  CpuBackend be1, be2;
  Model a(smezo_test::random_weight_source(micro_config(), 9), be1, DTYPE_F32, 8, 8);
  Model b(smezo_test::random_weight_source(micro_config(), 9), be2, DTYPE_F32, 8, 8);
  run_quadratic(METHOD_MEZO, 0.0, 300, a);
  run_quadratic(METHOD_SMEZO, 0.0, 300, b);
  auto wa = snapshot(a), wb = snapshot(b);
  for (size_t t = 0; t < wa.size(); t++)
    ASSERT_EQ(0, std::memcmp(wa[t].data(), wb[t].data(), wa[t].size() * 4)) << a.params()[t]->info.name;
}

TEST(Spsa, ThresholdIsTheExactQuantile) {
  CpuBackend be;
  Model m(smezo_test::random_weight_source(micro_config(), 10), be, DTYPE_F32, 8, 8);
  const Param& p = *m.params()[2];  // a linear weight
  ASSERT_TRUE(p.info.is_linear);
  std::vector<float> a(p.w.f32(), p.w.f32() + p.w.numel());
  for (float& x : a) x = std::fabs(x);
  std::sort(a.begin(), a.end());
  const int64_t n = (int64_t)a.size();
  for (double q : {0.0, 0.25, 0.5, 0.8, 1.0})
    EXPECT_EQ(be.abs_quantile(p, q), a[(int64_t)std::floor(q * (n - 1))]) << q;
}

TEST(Spsa, BadOptionsAreClearErrors) {
  auto msg = [](SpsaOptions o) {
    try {
      spsa_validate(o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  SpsaOptions o;
  o.sparsity = 1.0;
  EXPECT_THAT(msg(o), testing::HasSubstr("--sparsity must be in [0, 1), got 1"));
  o.sparsity = -0.1;
  EXPECT_THAT(msg(o), testing::HasSubstr("--sparsity must be in [0, 1), got -0.1"));
  o = SpsaOptions();
  o.eps = 0.0f;
  EXPECT_THAT(msg(o), testing::HasSubstr("--eps must be >= 1.17549e-38, got 0"));
  o.eps = -1e-3f;
  EXPECT_THAT(msg(o), testing::HasSubstr("eps"));
  o = SpsaOptions();
  o.lr = NAN;
  EXPECT_THAT(msg(o), testing::HasSubstr("--lr must be a finite number >= 0, got nan"));
  o = SpsaOptions();
  o.method = METHOD_MEZO;
  o.sparsity = 0.5;
  EXPECT_THAT(msg(o), testing::HasSubstr("mezo tunes every entry"));
  EXPECT_THAT([] { method_parse("adam"); }, testing::ThrowsMessage<Error>(testing::HasSubstr("unknown method 'adam'")));
}

TEST(Spsa, NonFiniteLossStopsWithoutTouchingWeights) {
  CpuBackend be;
  Model m(smezo_test::random_weight_source(micro_config(), 11), be, DTYPE_F32, 8, 8);
  SpsaOptions o;
  SpsaOptimizer opt(m, o);
  auto before = snapshot(m);
  EXPECT_THAT([&] { step_on(opt, 7, [](const Probe& p) { return p.scale > 0 ? 1.0 : NAN; }); },
              testing::ThrowsMessage<Error>(testing::HasSubstr("NaN at step 7")));
  auto after = snapshot(m);
  for (size_t t = 0; t < before.size(); t++) EXPECT_EQ(before[t], after[t]);
}

// The probes of a step: one pair in one pass, else + then -; finishing a step with another
// count of losses than two is an error, and W stays untouched.
TEST(Spsa, StepProbesAndTheLossCount) {
  CpuBackend be;
  Model m(smezo_test::random_weight_source(micro_config(), 13), be, DTYPE_F32, 8, 8);
  SpsaOptions o;
  o.eps = 2e-3f;
  SpsaOptimizer opt(m, o);
  const uint64_t seed = opt.step_seed(4);
  const std::vector<Probe> pair = opt.step_probes(seed, true), separate = opt.step_probes(seed, false);
  ASSERT_EQ(pair.size(), 1u);
  EXPECT_TRUE(pair[0].pair);
  EXPECT_EQ(pair[0].scale, 2e-3f);
  EXPECT_EQ(pair[0].seed, seed);
  ASSERT_EQ(separate.size(), 2u);
  EXPECT_FALSE(separate[0].pair || separate[1].pair);
  EXPECT_EQ(separate[0].scale, 2e-3f);
  EXPECT_EQ(separate[1].scale, -2e-3f);
  EXPECT_EQ(separate[1].seed, seed);
  auto before = snapshot(m);
  EXPECT_THAT([&] { opt.finish(4, {1.0}); },
              testing::ThrowsMessage<Error>(testing::HasSubstr("step 4: 1 losses for the two probes")));
  EXPECT_THAT([&] { opt.finish(4, {1.0, 1.0, 1.0}); },
              testing::ThrowsMessage<Error>(testing::HasSubstr("step 4: 3 losses for the two probes")));
  auto after = snapshot(m);
  for (size_t t = 0; t < before.size(); t++) EXPECT_EQ(before[t], after[t]);
}

// Finite losses whose difference over 2·eps does not fit a float: stopped before the update.
TEST(Spsa, GradientOverflowStopsWithoutTouchingWeights) {
  CpuBackend be;
  Model m(smezo_test::random_weight_source(micro_config(), 12), be, DTYPE_F32, 8, 8);
  SpsaOptions o;
  SpsaOptimizer opt(m, o);
  auto before = snapshot(m);
  EXPECT_THAT([&] { step_on(opt, 3, [](const Probe& p) { return p.scale > 0 ? 1e36 : -1e36; }); },
              testing::ThrowsMessage<Error>(testing::HasSubstr("the projected gradient overflowed at step 3")));
  auto after = snapshot(m);
  for (size_t t = 0; t < before.size(); t++) EXPECT_EQ(before[t], after[t]);
}

// Weight decay shrinks tuned entries of weights by the documented rule (decay = lr·wd):
// w1 = fma(-coef, z, w), w_new = fma(-decay, w, w1); norms are never decayed. z is the run's
// noise kind (noise_z of src/common/noise_spec.h), for every kind.
TEST(Spsa, WeightDecayFollowsTheUpdateRule) {
  for (NoiseKind kind : {NOISE_GAUSSIAN, NOISE_GAUSSIAN_V1, NOISE_RADEMACHER, NOISE_SIGN}) {
    CpuBackend be;
    Model m(smezo_test::random_weight_source(micro_config(), 12), be, DTYPE_F32, 8, 8);
    SpsaOptions o;
    o.method = METHOD_MEZO;
    o.sparsity = 0.0;
    o.lr = 0.01f;
    o.weight_decay = 0.5f;
    o.noise = kind;
    SpsaOptimizer opt(m, o);
    auto before = snapshot(m);
    const uint64_t seed = 1234;
    const float g = 0.75f;
    opt.apply_update(seed, g, *o.lr);
    for (size_t t = 0; t < before.size(); t++) {
      const Param& p = *m.params()[t];
      ASSERT_EQ(p.info.noise, kind);
      const bool decayed = p.info.name.find("norm") == std::string::npos;
      for (int64_t i = 0; i < p.w.numel(); i++) {
        const float w = before[t][i], z = noise_z(kind, seed, p.info.tensor_id, i);
        const float w1 = fp_fma(-(*o.lr * g), z, w);
        const float expected = decayed ? fp_fma(-(*o.lr * o.weight_decay), w, w1) : w1;
        ASSERT_EQ(p.w.f32()[i], expected) << noise_name(kind) << " " << p.info.name << "[" << i << "]";
      }
    }
  }
}

// Every kind trains: the quadratic falls with both ±1 kinds and both gaussians (SPSA needs only
// zero-mean, unit-variance, independent directions).
TEST(Spsa, QuadraticConvergesForEveryNoiseKind) {
  for (NoiseKind kind : {NOISE_GAUSSIAN, NOISE_GAUSSIAN_V1, NOISE_RADEMACHER, NOISE_SIGN}) {
    CpuBackend be;
    Model m(smezo_test::random_weight_source(micro_config(), 13), be, DTYPE_F32, 8, 8);
    Quadratic f{m, {}};
    for (const Param* p : m.params()) {
      f.target.emplace_back(p->w.f32(), p->w.f32() + p->w.numel());
      for (float& t : f.target.back()) t *= 0.5f;
    }
    SpsaOptions o;
    o.method = METHOD_MEZO;
    o.sparsity = 0.0;
    o.lr = 8e-4f;
    o.total_steps = 2000;
    o.noise = kind;
    SpsaOptimizer opt(m, o);
    const double f0 = f(Probe{});
    for (int s = 1; s <= 2000; s++) step_on(opt, s, [&](const Probe& p) { return f(p); });
    EXPECT_LT(f(Probe{}), 0.1 * f0) << noise_name(kind);
  }
}

// The run header records the noise kind and the spec version that added it (what an older smezo
// needs); headers are read back with the same kind, old headers (no noise field) mean gaussian-v1,
// and unknown kinds, newer spec versions or a kind its version lacks are refused, naming the source.
TEST(Spsa, NoiseKindInTheRunHeader) {
  CpuBackend be;
  Model m(smezo_test::random_weight_source(micro_config(), 14), be, DTYPE_F32, 8, 8);
  SpsaOptions o;  // noise AUTO: a new run is gaussian
  SpsaOptimizer opt(m, o);
  EXPECT_EQ(opt.options().noise, NOISE_GAUSSIAN);
  for (const Param* p : m.params()) EXPECT_EQ(p->info.noise, NOISE_GAUSSIAN);
  nlohmann::json h = opt.describe();
  EXPECT_EQ(h["noise"], "gaussian");
  EXPECT_EQ(h["noise_spec"], 2);  // gaussian's, not the newest (3): a spec-v2 smezo replays it
  EXPECT_EQ(spsa_options_from_json(h, "log").noise, NOISE_GAUSSIAN);
  EXPECT_NO_THROW(opt.check_matches(h, "log"));
  for (NoiseKind kind : {NOISE_GAUSSIAN_V1, NOISE_RADEMACHER, NOISE_SIGN}) {
    SpsaOptions k = o;
    k.noise = kind;
    SpsaOptimizer other(m, k);
    EXPECT_EQ(other.describe()["noise_spec"], noise_spec_version_of(kind));
    EXPECT_EQ(spsa_options_from_json(other.describe(), "log").noise, kind);
    EXPECT_THAT([&] { opt.check_matches(other.describe(), "run/seed_log.txt"); },
                testing::ThrowsMessage<Error>(testing::HasSubstr(
                    std::string("run/seed_log.txt: the run used noise ") + noise_name(kind) +
                    ", this command asks for gaussian")));
  }
  nlohmann::json old = h;
  old.erase("noise");
  old.erase("noise_spec");
  EXPECT_EQ(spsa_options_from_json(old, "log").noise, NOISE_GAUSSIAN_V1);
  EXPECT_EQ(spsa_logged_noise(old, "log"), NOISE_GAUSSIAN_V1);
  auto refused = [&](nlohmann::json j) {
    return smezo_test::error_of([&] { spsa_options_from_json(j, "a/seed_log.txt"); });
  };
  nlohmann::json bad = h;
  bad["noise"] = "cauchy";
  EXPECT_THAT(refused(bad), testing::HasSubstr("a/seed_log.txt: the run used noise 'cauchy', which this "
                                               "smezo does not know"));
  bad = h;
  bad["noise_spec"] = NOISE_SPEC_VERSION + 1;
  EXPECT_THAT(refused(bad), testing::HasSubstr("a/seed_log.txt: the run used noise spec version " +
                                               std::to_string(NOISE_SPEC_VERSION + 1)));
  bad = h;
  bad["noise_spec"] = 1;  // gaussian did not exist in spec 1
  EXPECT_THAT(refused(bad), testing::HasSubstr("does not exist in noise spec version 1"));
  bad["noise"] = "sign";  // nor sign in spec 2
  bad["noise_spec"] = 2;
  EXPECT_THAT(refused(bad), testing::HasSubstr("noise 'sign' does not exist in noise spec version 2 (it was "
                                               "added in version 3)"));
  bad["noise_spec"] = 3;
  EXPECT_EQ(spsa_logged_noise(bad, "log"), NOISE_SIGN);
  bad = h;
  bad.erase("noise_spec");
  EXPECT_THAT(refused(bad), testing::HasSubstr("names its noise incompletely"));
  bad = h;
  bad["noise_spec"] = "2";
  EXPECT_THAT(refused(bad), testing::HasSubstr("names its noise incompletely"));
}

// A number the run header holds is read as its field's type only when it fits: the seed_log fuzzer's
// finding (CI, stop 50) was "seed": 9.22e20, a float cast to uint64 (undefined behaviour under UBSan).
// The input is tests/fuzz/corpus/seed_log/float_seed.txt.
TEST(Spsa, RunHeaderNumbersThatDoNotFitTheirFieldAreErrors) {
  CpuBackend be;
  Model m(smezo_test::random_weight_source(micro_config(), 14), be, DTYPE_F32, 8, 8);
  const nlohmann::json h = SpsaOptimizer(m, SpsaOptions{}).describe();
  const std::pair<const char*, nlohmann::json> cases[] = {
      {"seed", 9.22337e20}, {"seed", -1},          {"seed", 42.0},          {"eps", 1e300},
      {"lr", -1e39},        {"weight_decay", "0"}, {"total_steps", 1e30},   {"total_steps", 18446744073709551615ull},
      {"probes", 2.5e19},   {"probes", 1.5},
  };
  for (const auto& [key, value] : cases) {
    nlohmann::json bad = h;
    bad[key] = value;
    EXPECT_THAT(smezo_test::error_of([&] { spsa_options_from_json(bad, "a/seed_log.txt line 2"); }),
                testing::HasSubstr(std::string("a/seed_log.txt line 2: \"") + key + "\" is " + value.dump() + ", not "))
        << key << " " << value.dump();
  }
  const std::string path = "tests/fuzz/corpus/seed_log/float_seed.txt";
  const SeedLog log = seed_log_read(path);
  EXPECT_THAT(smezo_test::error_of([&] { spsa_options_from_json(log.header["spsa"], seed_log_header_where(log, path)); }),
              testing::HasSubstr("float_seed.txt line 2: \"seed\" is 9.22337e+20, not an integer from 0 to 2^64-1"));
}

TEST(Spsa, NoiseNamesParseBack) {
  for (NoiseKind kind : {NOISE_GAUSSIAN, NOISE_GAUSSIAN_V1, NOISE_RADEMACHER, NOISE_SIGN, NOISE_AUTO})
    EXPECT_EQ(noise_parse(noise_name(kind)), kind);
  EXPECT_THAT([] { noise_parse("uniform"); },
              testing::ThrowsMessage<Error>(testing::HasSubstr(
                  "unknown noise 'uniform' (choose gaussian, gaussian-v1, rademacher or sign)")));
  SpsaOptions o;
  o.noise = static_cast<NoiseKind>(7);
  EXPECT_THAT([&] { spsa_validate(o); }, testing::ThrowsMessage<Error>(testing::HasSubstr("unknown noise kind 7")));
}
