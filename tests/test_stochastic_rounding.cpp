// Stochastic rounding of updates to bf16 (src/common/noise_spec.h): what it changes. An update
// smaller than half a bf16 ulp is lost entirely by round-to-nearest; stochastic rounding keeps
// it in expectation. Host emulation of the rule the CUDA update kernel applies.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "common/check.h"
#include "common/half.h"
#include "common/noise_spec.h"
#include "cpu/cpu_backend.h"
#include "model/model.h"
#include "model_fixture.h"
#include "train/spsa.h"

using namespace smezo;

TEST(StochasticRounding, RepresentableValuesAndSpecialsAreKept) {
  for (float x : {1.0f, -2.5f, 0.0f, -0.0f, 3.0e38f, 1e-40f, INFINITY, -INFINITY}) {
    const uint16_t exact = static_cast<uint16_t>(fp_bits(x) >> 16);
    if ((fp_bits(x) & 0xffffu) != 0) continue;  // only exactly representable values
    for (uint32_t r : {0u, 1u, 0x8000u, 0xffffu}) EXPECT_EQ(bf16_round_stochastic(x, r), exact) << x;
  }
  const uint16_t nan = bf16_round_stochastic(std::nanf(""), 0x1234u);
  EXPECT_TRUE(std::isnan(bf16_to_float(nan)));
}

TEST(StochasticRounding, RoundsToANeighbourWithTheRightProbability) {
  // x = 1 + 0.3 ulp (bf16 ulp at 1 is 2^-7): rounds up with probability 0.3
  const float x = 1.0f + 0.3f * 0.0078125f;
  int64_t up = 0, n = 200000;
  for (int64_t i = 0; i < n; i++) {
    const float v = bf16_to_float(bf16_round_stochastic(x, noise_rounding_bits(99, 3, i)));
    ASSERT_TRUE(v == 1.0f || v == 1.0078125f) << v;
    up += v > 1.0f;
  }
  EXPECT_NEAR(double(up) / n, 0.3, 0.005);  // 5 sigma of a binomial(2e5, 0.3) mean
}

// The update of a bf16 weight w = 1 by -1e-4 (1/39 of a bf16 ulp): round-to-nearest stores
// 1.0 every time, so training never moves; stochastic rounding moves it by -1e-4 on average.
TEST(StochasticRounding, KeepsUpdatesSmallerThanHalfAnUlpInExpectation) {
  const int64_t n = 100000;
  const uint64_t seed = 7;
  double sum_nearest = 0.0, sum_stochastic = 0.0;
  for (int64_t i = 0; i < n; i++) {
    const float w = 1.0f;
    const float w1 = updated_value(w, /*z=*/1.0f, /*coef=*/1e-4f, /*keep=*/true);
    sum_nearest += bf16_to_float(float_to_bf16(w1));
    sum_stochastic += bf16_to_float(bf16_round_stochastic(w1, noise_rounding_bits(seed, 0, i)));
  }
  EXPECT_EQ(sum_nearest / n, 1.0);                       // the update is lost
  EXPECT_NEAR(sum_stochastic / n, 1.0 - 1e-4, 1e-5);    // kept on average (std of mean ~2e-6)
}

TEST(StochasticRounding, RefusedForFp32Storage) {
  CpuBackend be;
  Model m(smezo_test::random_weight_source(smezo_test::tiny_llama_config(), 1), be, DTYPE_F32, 8, 8);
  SpsaOptions o;
  o.stochastic_rounding = true;
  EXPECT_THAT([&] { SpsaOptimizer opt(m, o); },
              testing::ThrowsMessage<Error>(testing::HasSubstr("stochastic rounding applies to bf16 storage")));
}
