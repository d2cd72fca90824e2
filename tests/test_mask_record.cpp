// mask.json (src/train/mask_record.h): the masks a run's first step applies, per tensor, on the
// bundled stories260K through `smezo train`, and on the real SmolLM2-135M, where each S-MeZO
// threshold h is compared with numpy's default ('linear') quantile of |W|.
//
// Our h is the order statistic a_k of the sorted |W| (a_0 <= ... <= a_{n-1}) with
// k = floor(q (n - 1)), q = 1 - sparsity (Backend::abs_quantile, CPU and CUDA alike). numpy's
// np.quantile(|W|, q) interpolates: a_k + g (a_{k+1} - a_k), g = q (n - 1) - k. The two agree
// exactly when g = 0 or a_k = a_{k+1}; otherwise numpy's h lies strictly between a_k and a_{k+1}
// and the mask [|w| <= h] is the same for both, since no entry lies strictly between two
// neighbouring order statistics. numpy is not installed here (nor in CI): its definition is
// computed below, in double.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "setup/model_setup.h"
#include "test_util.h"
#include "train/mask_record.h"
#include "train/spsa.h"

using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::run_command;

namespace {

nlohmann::json train_and_read_mask(const std::string& method, const std::string& dir, std::string* out) {
  const std::string cmd = smezo_test::smezo_binary() + " train --method " + method +
                          (method == "mezo" ? "" : " --sparsity 0.75") +
                          " --steps 2 --eval-every 0 --dev-examples 4 --test-examples 4 --out " + dir + " 2>&1";
  EXPECT_EQ(run_command(cmd, out), 0) << *out;
  std::string text;
  if (run_command("cat " + dir + "/mask.json 2>/dev/null", &text) != 0) return nullptr;
  return nlohmann::json::parse(text);
}

// numpy's 'linear' quantile of |w| at q, in double, and our lower order statistic a_k with its
// neighbour a_{k+1} (a_k when k is the last).
struct Quantiles {
  double numpy_linear = 0, lower = 0, next = 0;
};

Quantiles abs_quantiles(std::vector<float> a, double q) {
  for (float& x : a) x = std::fabs(x);
  const int64_t n = static_cast<int64_t>(a.size());
  const double position = q * static_cast<double>(n - 1);
  const int64_t k = static_cast<int64_t>(std::floor(position));
  std::nth_element(a.begin(), a.begin() + k, a.end());
  Quantiles r;
  r.lower = a[k];
  r.next = k + 1 < n ? *std::min_element(a.begin() + k + 1, a.end()) : a[k];
  r.numpy_linear = r.lower + (position - static_cast<double>(k)) * (r.next - r.lower);
  return r;
}

}  // namespace

// Every run folder of S-MeZO and R-MeZO records its masks; MeZO, which masks nothing, none. The
// fraction perturbed is 1 - sparsity: exactly for S-MeZO's quantile on stories260K (its tensors'
// sizes make k + 1 = n / 4), within the binomial spread for R-MeZO's random mask.
TEST(MaskRecord, RunFolderRecordsTheFirstStepsMasks) {
  std::string out;
  const nlohmann::json smezo = train_and_read_mask("smezo", make_temp_dir("mask_smezo") + "/run", &out);
  ASSERT_TRUE(smezo.is_object()) << out;
  EXPECT_EQ(smezo["method"], "smezo");
  EXPECT_EQ(smezo["sparsity"].get<double>(), 0.75);
  ASSERT_FALSE(smezo["tensors"].empty());
  for (const auto& [name, t] : smezo["tensors"].items()) {
    EXPECT_EQ(t["mask"], "magnitude") << name;
    EXPECT_NEAR(t["fraction_perturbed"].get<double>(), 0.25, 1e-3) << name;
    EXPECT_GT(t["threshold"].get<double>(), 0.0) << name;
    EXPECT_EQ(t["threshold_f32_bits"].get<std::string>().size(), 8u) << name;
  }
  EXPECT_NEAR(smezo["fraction_perturbed"].get<double>(), 0.25, 1e-3);
  const nlohmann::json rmezo = train_and_read_mask("rmezo", make_temp_dir("mask_rmezo") + "/run", &out);
  ASSERT_TRUE(rmezo.is_object()) << out;
  EXPECT_NEAR(rmezo["fraction_perturbed"].get<double>(), 0.25, 0.005);  // 4 sd of 226,560 draws
  EXPECT_EQ(rmezo["tensors"].begin().value()["mask"], "random");
  EXPECT_TRUE(train_and_read_mask("mezo", make_temp_dir("mask_mezo") + "/run", &out).is_null()) << out;
}

// On SmolLM2-135M (Q4_1 weights, dequantized to f32, so equal values are common) at the claim
// grid's sparsities: every masked tensor perturbs 1 - sparsity of its entries within 1e-3, h is
// the order statistic a_k, numpy's h lies in [a_k, a_{k+1}), and both give the same mask. The
// largest gap between the two definitions is printed.
TEST(MaskRecord, SmolLM2ThresholdsAgreeWithNumpysQuantile) {
  const std::string path = smezo_test::smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  smezo::LoadedModel lm = smezo::open_model_paths(path, "", smezo::DEVICE_CPU, 64, 8);
  smezo::Model& model = *lm.model;
  for (const double sparsity : {0.5, 0.75, 0.9}) {
    smezo::SpsaOptions o;
    o.method = smezo::METHOD_SMEZO;
    o.sparsity = sparsity;
    smezo::SpsaOptimizer opt(model, o);
    const nlohmann::json record = smezo::spsa_mask_record(model, o);
    ASSERT_TRUE(record.is_object());
    double worst_gap = 0, worst_relative = 0;
    int64_t tensors = 0, identical = 0;
    for (smezo::Param* p : model.params()) {
      if (p->info.mask != smezo::MASK_MAGNITUDE) continue;
      const nlohmann::json& t = record["tensors"][p->info.name];
      const double fraction = t["fraction_perturbed"].get<double>();
      EXPECT_NEAR(fraction, 1.0 - sparsity, 1e-3) << p->info.name;
      std::vector<float> w(p->w.f32(), p->w.f32() + p->w.numel());
      const Quantiles qs = abs_quantiles(w, 1.0 - sparsity);
      const double h = p->info.threshold;
      EXPECT_EQ(h, qs.lower) << p->info.name;
      EXPECT_GE(qs.numpy_linear, h) << p->info.name;
      EXPECT_TRUE(qs.numpy_linear < qs.next || qs.next == qs.lower) << p->info.name;
      int64_t under_numpy = 0;
      for (float x : w) under_numpy += std::fabs(x) <= qs.numpy_linear;
      EXPECT_EQ(under_numpy, t["perturbed"].get<int64_t>()) << p->info.name << ": numpy's h gives another mask";
      worst_gap = std::max(worst_gap, qs.numpy_linear - h);
      worst_relative = std::max(worst_relative, (qs.numpy_linear - h) / h);
      identical += qs.numpy_linear == h;
      tensors++;
    }
    EXPECT_EQ(tensors, 210);  // 30 layers x 7 linear weights (the tied head is the embedding: dense)
    std::printf("[ smollm2  ] sparsity %.2f: %lld masked tensors, fraction perturbed %.6f overall; h = numpy's "
                "quantile exactly in %lld; largest gap %.3g (%.3g of h); same mask in all\n",
                sparsity, (long long)tensors, record["fraction_perturbed"].get<double>(), (long long)identical,
                worst_gap, worst_relative);
  }
}
