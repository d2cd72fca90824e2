// The noise spec (src/common/noise_spec.h) on the host: Philox known answers, the
// counter/key layout, and the spec-v1 generator gaussian-v1 (regeneration, statistics,
// accuracy of the hand-written log/sin/cos against double-precision libm), masks and element
// rules. Spec v2 (gaussian, rademacher, the dispatch) is in tests/test_noise_v2.cpp. The GPU
// side is checked bit for bit against these functions in tests/test_noise_cuda.cu.
//
// Statistical tolerances: n = 1e6 samples, bounds at about 5 standard errors of the
// statistic (mean: 1/sqrt(n) = 1e-3 -> 5e-3; variance: sqrt(2/n) = 1.4e-3 -> 7e-3;
// correlation: 1/sqrt(n) -> 5e-3; keep fraction: sqrt(p(1-p)/n) <= 5e-4 -> 3e-3). The
// streams are fixed, so a pass is deterministic; the bounds say what a healthy stream meets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "common/noise_spec.h"
#include "test_util.h"

using namespace smezo;
using smezo_test::correlation;

namespace {

struct Kat {
  uint32_t ctr[4];
  uint32_t key[2];
  uint32_t expect[4];
};

// Salmon et al. / Random123 kat_vectors, philox4x32 10 rounds.
const Kat kPhiloxKats[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

std::vector<float> normals(uint64_t seed, uint32_t tensor, uint32_t stream, int64_t n) {
  std::vector<float> z(n);
  for (int64_t g = 0; 4 * g < n; ++g) {
    float v[4];
    noise_normal4(seed, tensor, g, stream, v);
    for (int l = 0; l < 4 && 4 * g + l < n; ++l) z[4 * g + l] = v[l];
  }
  return z;
}

}  // namespace

// ---------------------------------------------------------------- Philox

TEST(NoisePhilox, KnownAnswerVectors) {
  for (const Kat& k : kPhiloxKats) {
    uint32_t out[4];
    philox4x32_10(k.ctr, k.key, out);
    for (int l = 0; l < 4; ++l)
      EXPECT_EQ(out[l], k.expect[l]) << "ctr[0]=" << std::hex << k.ctr[0] << " lane " << l;
  }
}

// counter = (group lo, group hi, tensor_id, stream), key = (seed lo, seed hi): the cuRAND
// word order (uint4 {x,y,z,w} = ctr[0..3], uint2 {x,y} = key[0..1]).
TEST(NoisePhilox, CounterAndKeyLayout) {
  const uint64_t seed = 0x0123456789abcdefull;
  const int64_t group = (int64_t(5) << 32) | 7;
  const uint32_t ctr[4] = {7, 5, 11, NOISE_STREAM_ROUNDING};
  const uint32_t key[2] = {0x89abcdef, 0x01234567};
  uint32_t want[4], got[4];
  philox4x32_10(ctr, key, want);
  noise_philox4(seed, 11, group, NOISE_STREAM_ROUNDING, got);
  for (int l = 0; l < 4; ++l) EXPECT_EQ(got[l], want[l]);
  // The KAT with all-ones counter and key through the mapping.
  noise_philox4(~0ull, 0xffffffffu, -1, 0xffffffffu, got);  // group -1 = all ones as 64 bits
  for (int l = 0; l < 4; ++l) EXPECT_EQ(got[l], kPhiloxKats[1].expect[l]);
  // Element i takes lane i % 4 of group i / 4.
  for (int64_t i : {int64_t(0), int64_t(3), int64_t(4), int64_t(1) << 40, (int64_t(1) << 40) + 2}) {
    uint32_t x[4];
    noise_philox4(seed, 3, i / 4, NOISE_STREAM_GAUSS, x);
    EXPECT_EQ(fp_bits(noise_uniform01(seed, 3, i, NOISE_STREAM_GAUSS)),
              fp_bits(uniform01_from_bits(x[i % 4])));
  }
}

// ---------------------------------------------------------------- uniforms

TEST(NoiseUniform, ExactAndInRange) {
  EXPECT_EQ(uniform_open_from_bits(0), 0x1p-24f);
  EXPECT_EQ(uniform_open_from_bits(0xffffffffu), 1.0f - 0x1p-24f);
  EXPECT_EQ(uniform01_from_bits(0), 0.0f);
  EXPECT_EQ(uniform01_from_bits(0xffffffffu), 1.0f - 0x1p-24f);
  std::mt19937 gen(1);
  for (int i = 0; i < 100000; ++i) {
    const uint32_t x = gen();
    // exact: equals the real-number formula evaluated in double
    EXPECT_EQ(double(uniform_open_from_bits(x)), double((x >> 8) | 1u) * 0x1p-24);
    EXPECT_EQ(double(uniform01_from_bits(x)), double(x >> 8) * 0x1p-24);
    if (HasFailure()) break;
  }
}

// ---------------------------------------------------------------- accuracy

// Every input noise_log sees in Box-Muller (all 2^23 open uniforms), against double log.
TEST(NoiseMath, LogAccuracyAllUniforms) {
  double max_rel = 0, max_ulp = 0, worst_u = 0;
  for (uint32_t j = 1; j < (1u << 24); j += 2) {
    const float u = float(j) * 0x1p-24f;
    const double ref = std::log(double(u));
    const double err = std::fabs(double(noise_log(u)) - ref);
    const float rf = std::fabs(float(ref));
    const double ulp = double(std::nextafter(rf, 1e30f)) - double(rf);
    max_rel = std::max(max_rel, err / std::fabs(ref));
    if (err / ulp > max_ulp) max_ulp = err / ulp, worst_u = u;
  }
  std::printf("  noise_log: max relative error %.3g, max %.3f ulp (at u = %.9g)\n", max_rel,
              max_ulp, worst_u);
  EXPECT_LT(max_rel, 1.5e-7);
  EXPECT_LT(max_ulp, 2.0);
  // Also correct outside (0, 1): the function is a general ln for positive normal floats.
  std::mt19937 gen(2);
  std::uniform_real_distribution<float> expo(-120.0f, 120.0f);
  for (int i = 0; i < 200000; ++i) {
    const float x = std::exp2(expo(gen));
    const double ref = std::log(double(x));
    const double err = std::fabs(double(noise_log(x)) - ref);
    EXPECT_LE(err, 2.5e-7 * std::max(1.0, std::fabs(ref))) << "x = " << x;
    if (HasFailure()) break;
  }
  EXPECT_EQ(noise_log(1.0f), 0.0f);
}

// All 2^24 angles of the grid, against double sin/cos.
TEST(NoiseMath, SinCosAccuracyAllAngles) {
  const double two_pi = 6.283185307179586476925286766559;
  double max_err = 0;
  uint32_t worst = 0;
  for (uint32_t j = 0; j < (1u << 24); ++j) {
    float s, c;
    noise_sincos_2pi(j, &s, &c);
    const double a = two_pi * double(j) * 0x1p-24;
    const double e = std::max(std::fabs(s - std::sin(a)), std::fabs(c - std::cos(a)));
    if (e > max_err) max_err = e, worst = j;
  }
  std::printf("  noise_sincos_2pi: max abs error %.3g at j = %u\n", max_err, worst);
  EXPECT_LT(max_err, 2.5e-7);
  float s, c;
  noise_sincos_2pi(0, &s, &c);
  EXPECT_EQ(s, 0.0f);
  EXPECT_EQ(c, 1.0f);
  noise_sincos_2pi(1u << 22, &s, &c);  // a quarter turn
  EXPECT_EQ(s, 1.0f);
  EXPECT_EQ(c, 0.0f);
}

// Box-Muller against a double-precision Box-Muller on the same uniforms, over random word
// pairs and the extremes (smallest/largest u_a, every quadrant of u_b).
TEST(NoiseMath, BoxMullerAccuracy) {
  const double two_pi = 6.283185307179586476925286766559;
  std::mt19937 gen(3);
  double max_err = 0;
  auto check = [&](uint32_t xa, uint32_t xb) {
    float na, nb;
    noise_box_muller(xa, xb, &na, &nb);
    const double ua = double((xa >> 8) | 1u) * 0x1p-24, ub = double((xb >> 8) | 1u) * 0x1p-24;
    const double r = std::sqrt(-2.0 * std::log(ua));
    max_err = std::max(max_err, std::fabs(na - r * std::cos(two_pi * ub)));
    max_err = std::max(max_err, std::fabs(nb - r * std::sin(two_pi * ub)));
  };
  for (int i = 0; i < 2000000; ++i) check(gen(), gen());
  for (uint32_t xa : {0u, 0x1ffu, 0x200u, 0x12345678u, 0x80000000u, 0xfffffe00u, 0xffffffffu})
    for (uint32_t k = 0; k < 4096; ++k) check(xa, k << 20 | (gen() & 0xfffff));
  std::printf("  noise_box_muller: max abs error %.3g vs double\n", max_err);
  EXPECT_LE(max_err, 2e-6);
  // The largest possible |z|: r at u_a = 2^-24, sqrt(48 ln 2).
  float na, nb;
  noise_box_muller(0, 0, &na, &nb);
  EXPECT_NEAR(na, std::sqrt(48.0 * std::log(2.0)), 2e-6);
}

// ---------------------------------------------------------------- regeneration

TEST(NoiseNormal, RegenerationIsOrderIndependent) {
  const uint64_t seed = 0x5eed5eed12345678ull;
  const int64_t n = 100003;
  const std::vector<float> z = normals(seed, 42, NOISE_STREAM_GAUSS, n);
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(4));
  for (int64_t i : order) {
    ASSERT_EQ(fp_bits(noise_normal(seed, 42, i, NOISE_STREAM_GAUSS)), fp_bits(z[i])) << "index " << i;
  }
  // Same again from a fresh call, backwards.
  for (int64_t i = n - 1; i >= 0; --i)
    ASSERT_EQ(fp_bits(noise_normal(seed, 42, i, NOISE_STREAM_GAUSS)), fp_bits(z[i]));
  // Indices beyond 2^32 groups use the high counter word.
  const int64_t big = (int64_t(1) << 36) + 5;
  float v[4];
  noise_normal4(seed, 42, big / 4, NOISE_STREAM_GAUSS, v);
  EXPECT_EQ(fp_bits(noise_normal(seed, 42, big, NOISE_STREAM_GAUSS)), fp_bits(v[big % 4]));
  EXPECT_NE(fp_bits(v[0]), fp_bits(noise_normal(seed, 42, big % (int64_t(1) << 34), NOISE_STREAM_GAUSS)));
}

TEST(NoiseNormal, SeedsTensorsAndStreamsDiffer) {
  const int64_t n = 200000;
  const std::vector<float> base = normals(7, 1, NOISE_STREAM_GAUSS, n);
  const std::vector<std::vector<float>> others = {
      normals(8, 1, NOISE_STREAM_GAUSS, n),                 // next seed
      normals(7ull | (1ull << 32), 1, NOISE_STREAM_GAUSS, n),  // seed differs in the high word
      normals(7, 2, NOISE_STREAM_GAUSS, n),                 // next tensor
      normals(7, 1, NOISE_STREAM_RMEZO_MASK, n),            // other streams
      normals(7, 1, NOISE_STREAM_ROUNDING, n),
  };
  for (size_t k = 0; k < others.size(); ++k) {
    int64_t equal = 0;
    for (int64_t i = 0; i < n; ++i) equal += fp_bits(base[i]) == fp_bits(others[k][i]);
    EXPECT_LT(equal, 10) << "variant " << k;
    EXPECT_LT(std::fabs(correlation(base.data(), others[k].data(), n)), 5e-3 * std::sqrt(5.0))
        << "variant " << k;  // n = 2e5: 1/sqrt(n) = 2.2e-3
  }
}

// ---------------------------------------------------------------- statistics

TEST(NoiseNormal, MomentsAndDistribution) {
  const int64_t n = 1000000;
  std::vector<float> z = normals(2024, 0, NOISE_STREAM_GAUSS, n);
  double s1 = 0, s2 = 0, s4 = 0;
  int64_t beyond3 = 0;
  for (float v : z) {
    s1 += v; s2 += double(v) * v; s4 += double(v) * v * v * v;
    beyond3 += std::fabs(v) > 3.0f;
  }
  const double mean = s1 / n, var = s2 / n - mean * mean, kurt = s4 / n;
  std::printf("  normals: mean %.2e var %.5f E[z^4] %.4f P(|z|>3) %.5f\n", mean, var, kurt,
              double(beyond3) / n);
  EXPECT_LT(std::fabs(mean), 5e-3);             // se 1e-3
  EXPECT_LT(std::fabs(var - 1.0), 7e-3);        // se 1.4e-3
  EXPECT_LT(std::fabs(kurt - 3.0), 0.05);       // se sqrt(96/n) = 9.8e-3
  EXPECT_NEAR(double(beyond3) / n, 0.0026998, 3e-4);  // se 5.2e-5
  // Kolmogorov-Smirnov distance to the standard normal CDF (1% critical value 1.63e-3).
  std::sort(z.begin(), z.end());
  double d = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double cdf = 0.5 * std::erfc(-double(z[i]) / std::sqrt(2.0));
    d = std::max(d, std::max(std::fabs(cdf - double(i) / n), std::fabs(double(i + 1) / n - cdf)));
  }
  std::printf("  normals: Kolmogorov-Smirnov D = %.3g\n", d);
  EXPECT_LT(d, 2e-3);
}

TEST(NoiseNormal, NoCorrelationAcrossElementsLanesTensors) {
  const int64_t n = 1000000;
  const std::vector<float> z = normals(99, 5, NOISE_STREAM_GAUSS, n + 4);
  const std::vector<float> other_tensor = normals(99, 6, NOISE_STREAM_GAUSS, n);
  const double tol = 5e-3;  // 5 / sqrt(1e6)
  EXPECT_LT(std::fabs(correlation(z.data(), z.data() + 1, n)), tol) << "adjacent elements";
  EXPECT_LT(std::fabs(correlation(z.data(), z.data() + 4, n)), tol) << "adjacent groups";
  EXPECT_LT(std::fabs(correlation(z.data(), other_tensor.data(), n)), tol) << "tensors";
  const int64_t groups = n / 4;
  const double tol_g = 5.0 / std::sqrt(double(groups));
  for (int a = 0; a < 4; ++a)
    for (int b = a + 1; b < 4; ++b)
      EXPECT_LT(std::fabs(correlation(z.data() + a, z.data() + b, groups, 4, 4)), tol_g)
          << "lanes " << a << "," << b;
  // The squares of a Box-Muller pair are uncorrelated too (they are independent normals).
  std::vector<float> sq(n);
  for (int64_t i = 0; i < n; ++i) sq[i] = z[i] * z[i];
  EXPECT_LT(std::fabs(correlation(sq.data(), sq.data() + 1, groups, 4, 4)), tol_g);
}

// ---------------------------------------------------------------- masks

TEST(NoiseMask, DenseKeepsEverything) {
  for (float w : {0.0f, -3.0f, 1e30f, std::numeric_limits<float>::quiet_NaN()})
    EXPECT_TRUE(mask_keep(MASK_DENSE, w, 0.0f, 0.0f, 1, 2, 3));
}

TEST(NoiseMask, MagnitudeKeepsSmallWeights) {
  EXPECT_TRUE(mask_keep(MASK_MAGNITUDE, 0.5f, 0.5f, 0.0f, 0, 0, 0));   // boundary is kept
  EXPECT_TRUE(mask_keep(MASK_MAGNITUDE, -0.5f, 0.5f, 0.0f, 0, 0, 0));  // |w|
  EXPECT_FALSE(mask_keep(MASK_MAGNITUDE, std::nextafter(0.5f, 1.0f), 0.5f, 0.0f, 0, 0, 0));
  EXPECT_FALSE(mask_keep(MASK_MAGNITUDE, -0.51f, 0.5f, 0.0f, 0, 0, 0));
  EXPECT_TRUE(mask_keep(MASK_MAGNITUDE, -0.0f, 0.0f, 0.0f, 0, 0, 0));
  EXPECT_FALSE(mask_keep(MASK_MAGNITUDE, std::numeric_limits<float>::quiet_NaN(), 1e30f, 1, 0,
                         0, 0));
  // threshold = max |w| keeps everything (sparsity 0 is dense MeZO).
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(mask_keep(MASK_MAGNITUDE, 3e38f, inf, 0.0f, 0, 0, 0));
}

TEST(NoiseMask, RandomKeepFractionAndRegeneration) {
  const int64_t n = 1000000;
  for (float p : {0.0f, 0.2f, 0.3f, 0.5f, 0.8f, 1.0f}) {
    int64_t kept = 0;
    for (int64_t i = 0; i < n; ++i) kept += mask_keep(MASK_RANDOM, 123.0f, 0.0f, p, 555, 9, i);
    const double frac = double(kept) / n;
    if (p == 0.0f || p == 1.0f) {
      EXPECT_EQ(frac, double(p));
    } else {
      EXPECT_NEAR(frac, p, 3e-3) << "keep_prob " << p;  // se <= 5e-4
    }
  }
  // The mask is the uniform01 of the mask stream, independent of w and of the noise stream.
  int64_t agree = 0, n_small = 200000;
  for (int64_t i = 0; i < n_small; ++i) {
    const bool k = mask_keep(MASK_RANDOM, float(i), 0.0f, 0.5f, 555, 9, i);
    ASSERT_EQ(k, noise_uniform01(555, 9, i, NOISE_STREAM_RMEZO_MASK) < 0.5f);
    ASSERT_EQ(k, mask_keep(MASK_RANDOM, -1.0f, 0.0f, 0.5f, 555, 9, i));
    agree += k == mask_keep(MASK_RANDOM, 0.0f, 0.0f, 0.5f, 556, 9, i);
  }
  EXPECT_NEAR(double(agree) / n_small, 0.5, 6e-3) << "another mask seed, another mask";
}

// ---------------------------------------------------------------- element rules

TEST(NoiseElement, PerturbAndUpdateAreOneFma) {
  std::mt19937 gen(6);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int i = 0; i < 100000; ++i) {
    const float w = dist(gen), z = noise_normal(11, 0, i, NOISE_STREAM_GAUSS);
    const float scale = 1e-3f, coef = 3.7e-7f;
    EXPECT_EQ(fp_bits(perturbed_value(w, z, scale, true)), fp_bits(std::fma(scale, z, w)));
    EXPECT_EQ(fp_bits(perturbed_value(w, z, -scale, true)), fp_bits(std::fma(-scale, z, w)));
    EXPECT_EQ(fp_bits(perturbed_value(w, z, scale, false)), fp_bits(w));
    EXPECT_EQ(fp_bits(updated_value(w, z, coef, true)), fp_bits(std::fma(-coef, z, w)));
    EXPECT_EQ(fp_bits(updated_value(w, z, coef, false)), fp_bits(w));
    // One rounding: the result is the double-exact value rounded once.
    EXPECT_EQ(perturbed_value(w, z, scale, true), float(double(scale) * z + w));
    if (HasFailure()) break;
  }
  // scale 0 (sigma = 0) leaves w unchanged, also for -0.0.
  EXPECT_EQ(fp_bits(perturbed_value(0.25f, 1.5f, 0.0f, true)), fp_bits(0.25f));
}
