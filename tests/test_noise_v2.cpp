// Noise spec v2 (src/common/noise_spec.h sections 8-10) on the host: the gaussian generator's
// accuracy over EVERY input it can see, the exact moments and Kolmogorov-Smirnov distance of
// its distribution (computed from all 2^16 radii and 2^16 angles, not sampled), statistics of
// the Philox-fed stream, the rademacher kind, and the dispatch every reader of z uses. The GPU
// side is checked bit for bit against these functions in tests/test_noise_cuda.cu.
//
// Tolerances. Accuracy bounds are the measured maxima with a ~1.3x margin (they are exhaustive,
// so they cannot be lucky): radius relative 8.3e-6, direction 4.9e-7. Sampled statistics use
// n = 2^20 (or 2^20 pairs) and bounds at ~5 standard errors (mean 5/sqrt(n) = 4.9e-3, variance
// 5 sqrt(2/n) = 6.9e-3, E[z^4] 5 sqrt(96/n) = 4.8e-2, correlations 5/sqrt(n)); the sampled
// KS bound is the 1% critical value 1.63/sqrt(n) = 1.6e-3 plus the exact distance (< 2e-5).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "common/noise_spec.h"
#include "test_util.h"

using namespace smezo;
using smezo_test::correlation;

namespace {

constexpr double kPi = 3.14159265358979323846;

// z of elements [0, n) of (seed, tensor) for `kind`, through noise_z8.
std::vector<float> z_stream(NoiseKind kind, uint64_t seed, uint32_t tensor, int64_t n) {
  std::vector<float> z(n);
  for (int64_t g = 0; 8 * g < n; ++g) {
    float v[8];
    noise_z8(kind, seed, tensor, g, v);
    for (int j = 0; j < 8 && 8 * g + j < n; ++j) z[8 * g + j] = v[j];
  }
  return z;
}

// The exact radius and direction of the generator's grid (double references).
double exact_radius(uint32_t a) { return std::sqrt(-2.0 * std::log((a + 0.5) / 65536.0)); }
double exact_alpha(uint32_t k) { return (k + 0.5) * (kPi / 2) / 16384.0; }

}  // namespace

// ---------------------------------------------------------------- accuracy (exhaustive)

TEST(NoiseGaussian, RadiusAccuracyEveryInput) {
  double max_rel = 0, max_abs = 0;
  for (uint32_t a = 0; a < 65536; ++a) {
    // only the top half of the word reaches the radius
    const float r = noise_v2_radius(a << 16 | (a * 2654435761u >> 16));
    ASSERT_EQ(fp_bits(r), fp_bits(noise_v2_radius(a << 16))) << a;
    const double ref = exact_radius(a), err = std::fabs(r - ref);
    max_rel = std::max(max_rel, err / ref);
    max_abs = std::max(max_abs, err);
  }
  std::printf("  gaussian radius: max relative error %.3g, max abs %.3g\n", max_rel, max_abs);
  EXPECT_LT(max_rel, 1.1e-5);
  EXPECT_LT(max_abs, 2.5e-5);
  EXPECT_NEAR(noise_v2_radius(0), std::sqrt(34 * std::log(2.0)), 2.5e-5);  // the largest
  EXPECT_GT(noise_v2_radius(0xffff0000u), 0.0f);                           // the smallest
}

TEST(NoiseGaussian, DirectionAccuracyEveryAngle) {
  double max_err = 0;
  for (uint32_t k = 0; k < 16384; ++k) {
    float c, s;
    noise_v2_direction(k | 0xffffc000u, &c, &s);  // the bits above 13 never reach alpha
    float c0, s0;
    noise_v2_direction(k, &c0, &s0);
    ASSERT_EQ(fp_bits(c), fp_bits(c0));
    ASSERT_EQ(fp_bits(s), fp_bits(s0));
    ASSERT_GT(c, 0.0f);
    ASSERT_GT(s, 0.0f);
    const double a = exact_alpha(k);
    max_err = std::max({max_err, std::fabs(c - std::cos(a)), std::fabs(s - std::sin(a))});
  }
  std::printf("  gaussian direction: max abs error %.3g\n", max_err);
  EXPECT_LT(max_err, 6.5e-7);
}

// A pair is (±r cos alpha, ±r sin alpha) with the signs from bits 15 and 14.
TEST(NoiseGaussian, PairIsSignedRadiusTimesDirection) {
  std::mt19937 gen(21);
  double max_err = 0;
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t x = gen();
    float na, nb, c, s;
    noise_v2_pair(x, &na, &nb);
    noise_v2_direction(x, &c, &s);
    const float r = noise_v2_radius(x);
    ASSERT_EQ(fp_bits(na), fp_bits(fp_mul(r, c)) ^ ((x & 0x8000u) << 16)) << std::hex << x;
    ASSERT_EQ(fp_bits(nb), fp_bits(fp_mul(r, s)) ^ ((x & 0x4000u) << 17)) << std::hex << x;
    const double za = exact_radius(x >> 16) * std::cos(exact_alpha(x & 0x3fff)) * ((x & 0x8000u) ? -1 : 1);
    const double zb = exact_radius(x >> 16) * std::sin(exact_alpha(x & 0x3fff)) * ((x & 0x4000u) ? -1 : 1);
    max_err = std::max({max_err, std::fabs(na - za), std::fabs(nb - zb)});
  }
  std::printf("  gaussian pair: max abs error %.3g vs double over 1e6 words\n", max_err);
  EXPECT_LT(max_err, 3e-5);
}

// ---------------------------------------------------------------- the exact distribution

// Radius (top half) and direction (bits 0..13) and the two signs are functions of disjoint
// bits of a uniform word, so they are independent and every moment of the generator's z is
// a product of averages over all 2^16 radii and all 2^14 angles: computed exactly here.
TEST(NoiseGaussian, ExactMomentsOfTheDistribution) {
  double r2 = 0, r4 = 0;
  for (uint32_t a = 0; a < 65536; ++a) {
    const double r = noise_v2_radius(a << 16);
    r2 += r * r / 65536;
    r4 += r * r * r * r / 65536;
  }
  double c2 = 0, c4 = 0, s2 = 0, s4 = 0, c2s2 = 0;
  for (uint32_t k = 0; k < 16384; ++k) {
    float c, s;
    noise_v2_direction(k, &c, &s);
    c2 += double(c) * c / 16384;
    s2 += double(s) * s / 16384;
    c4 += std::pow(double(c), 4) / 16384;
    s4 += std::pow(double(s), 4) / 16384;
    c2s2 += double(c) * c * s * s / 16384;
  }
  // E[z] = 0 exactly (the sign bit is independent of |z|); E[z_a z_b] = 0 likewise.
  std::printf("  gaussian exact: var %.7f / %.7f, E[z^4] %.5f / %.5f, E[za^2 zb^2] %.5f\n",
              r2 * c2, r2 * s2, r4 * c4, r4 * s4, r4 * c2s2);
  EXPECT_NEAR(r2 * c2, 1.0, 2e-5);  // the grid's truncation at |r| <= 4.85 loses ~9e-6
  EXPECT_NEAR(r2 * s2, 1.0, 2e-5);
  EXPECT_NEAR(r4 * c4, 3.0, 1e-3);
  EXPECT_NEAR(r4 * s4, 3.0, 1e-3);
  EXPECT_NEAR(r4 * c2s2, 1.0, 1e-3);  // squares of a pair uncorrelated, as for true normals
}

// Kolmogorov-Smirnov distance of the exact distribution of z to N(0,1) at 401 points of
// [-5, 5]: P(z <= t) counted over all 2^16 x 2^14 x 2 (radius, angle, sign) cells. Bound: the
// radius grid has cells of probability 2^-16 (1.5e-5) and z is off by < 2.5e-5 (a CDF shift
// of < 1e-5), so a generator doing what the spec says is below 2.5e-5 (measured: ~1e-6).
TEST(NoiseGaussian, ExactKolmogorovSmirnovDistance) {
  std::vector<double> r(65536);
  for (uint32_t a = 0; a < 65536; ++a) r[a] = noise_v2_radius(a << 16);
  std::sort(r.begin(), r.end());
  std::vector<double> c(16384);
  for (uint32_t k = 0; k < 16384; ++k) {
    float cf, sf, cr, sr;
    noise_v2_direction(k, &cf, &sf);
    noise_v2_direction(16383 - k, &cr, &sr);
    ASSERT_EQ(fp_bits(sf), fp_bits(cr)) << "sin alpha_k == cos alpha_(16383-k), bit for bit";
    c[k] = cf;
  }
  // So the second (sin) element of a pair has exactly the distribution of the first (cos).
  double d = 0, worst_t = 0;
  for (int it = -200; it <= 200; ++it) {
    const double t = it * 0.025;
    double below = 0;  // cells with z <= t, of 2^31
    for (uint32_t k = 0; k < 16384; ++k) {
      const double thr = t / c[k];  // +r c <= t  <=>  r <= t/c ;  -r c <= t  <=>  r >= -t/c
      below += double(std::upper_bound(r.begin(), r.end(), thr) - r.begin());
      below += double(r.end() - std::lower_bound(r.begin(), r.end(), -thr));
    }
    const double cdf = below / (2.0 * 16384 * 65536);
    const double phi = 0.5 * std::erfc(-t / std::sqrt(2.0));
    if (std::fabs(cdf - phi) > d) d = std::fabs(cdf - phi), worst_t = t;
  }
  std::printf("  gaussian exact Kolmogorov-Smirnov distance %.3g (at t = %.3f)\n", d, worst_t);
  EXPECT_LT(d, 2.5e-5);
}

// ---------------------------------------------------------------- layout and dispatch

TEST(NoiseDispatch, ElementLayoutOfEveryKind) {
  const uint64_t seed = 0x0123456789abcdefull;
  std::mt19937_64 gen(22);
  std::vector<int64_t> idx = {0, 1, 7, 8, 9, (int64_t(1) << 35) + 3, (int64_t(1) << 40) + 6};
  for (int i = 0; i < 20000; ++i) idx.push_back(static_cast<int64_t>(gen() >> 20));
  for (int64_t i : idx) {
    uint32_t x[4];
    noise_philox4(seed, 9, i / 8, NOISE_STREAM_GAUSS, x);
    const uint32_t w = x[(i % 8) / 2];
    float na, nb;
    noise_v2_pair(w, &na, &nb);
    const float g = noise_z(NOISE_GAUSSIAN, seed, 9, i);
    ASSERT_EQ(fp_bits(g), fp_bits(i % 2 ? nb : na)) << i;
    const float rad = noise_z(NOISE_RADEMACHER, seed, 9, i);
    ASSERT_EQ(rad, ((i % 2 ? w << 16 : w) & 0x80000000u) ? -1.0f : 1.0f) << i;
    ASSERT_EQ(fp_bits(noise_z(NOISE_GAUSSIAN_V1, seed, 9, i)),
              fp_bits(noise_normal(seed, 9, i, NOISE_STREAM_GAUSS))) << i;
    for (NoiseKind kind : {NOISE_GAUSSIAN_V1, NOISE_GAUSSIAN, NOISE_RADEMACHER, NOISE_SIGN}) {
      float z8[8];
      noise_z8(kind, seed, 9, i / 8, z8);
      ASSERT_EQ(fp_bits(z8[i % 8]), fp_bits(noise_z(kind, seed, 9, i))) << "kind " << kind << " index " << i;
    }
  }
  // gaussian-v1 through noise_z8 is the spec-v1 stream: groups 2g and 2g+1 of noise_normal4.
  float z8[8], a[4], b[4];
  noise_z8(NOISE_GAUSSIAN_V1, seed, 9, 12345, z8);
  noise_normal4(seed, 9, 24690, NOISE_STREAM_GAUSS, a);
  noise_normal4(seed, 9, 24691, NOISE_STREAM_GAUSS, b);
  for (int l = 0; l < 4; ++l) {
    EXPECT_EQ(fp_bits(z8[l]), fp_bits(a[l]));
    EXPECT_EQ(fp_bits(z8[4 + l]), fp_bits(b[l]));
  }
}

TEST(NoiseDispatch, KindsAreDifferentStreams) {
  const int64_t n = 1 << 16;
  const auto v1 = z_stream(NOISE_GAUSSIAN_V1, 5, 1, n), v2 = z_stream(NOISE_GAUSSIAN, 5, 1, n);
  int64_t equal = 0;
  for (int64_t i = 0; i < n; ++i) equal += fp_bits(v1[i]) == fp_bits(v2[i]);
  EXPECT_LT(equal, 5);
  EXPECT_LT(std::fabs(correlation(v1.data(), v2.data(), n)), 5.0 / std::sqrt(double(n)));
}

TEST(NoiseMask, GroupOfFourEqualsFourCalls) {
  std::mt19937 gen(23);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (MaskKind kind : {MASK_DENSE, MASK_MAGNITUDE, MASK_RANDOM}) {
    for (int64_t g : {int64_t(0), int64_t(7), int64_t(1) << 33}) {
      for (int rep = 0; rep < 2000; ++rep) {
        const float w[4] = {dist(gen), dist(gen), dist(gen), dist(gen)};
        bool keep[4];
        mask_keep_group4(kind, w, 0.5f, 0.3f, 777, 4, g + rep, keep);
        for (int l = 0; l < 4; ++l)
          ASSERT_EQ(keep[l], mask_keep(kind, w[l], 0.5f, 0.3f, 777, 4, 4 * (g + rep) + l));
      }
    }
  }
}

// ---------------------------------------------------------------- statistics of the stream

TEST(NoiseGaussian, SampledMomentsAndDistribution) {
  const int64_t n = int64_t(1) << 20;
  std::vector<float> z = z_stream(NOISE_GAUSSIAN, 2024, 0, n);
  double s1 = 0, s2 = 0, s4 = 0;
  int64_t beyond3 = 0, negative = 0;
  for (float v : z) {
    s1 += v; s2 += double(v) * v; s4 += double(v) * v * v * v;
    beyond3 += std::fabs(v) > 3.0f;
    negative += v < 0;
  }
  const double mean = s1 / n, var = s2 / n - mean * mean, kurt = s4 / n;
  std::printf("  gaussian sampled: mean %.2e var %.5f E[z^4] %.4f P(|z|>3) %.5f\n", mean, var,
              kurt, double(beyond3) / n);
  EXPECT_LT(std::fabs(mean), 4.9e-3);
  EXPECT_LT(std::fabs(var - 1.0), 6.9e-3);
  EXPECT_LT(std::fabs(kurt - 3.0), 4.8e-2);
  EXPECT_NEAR(double(beyond3) / n, 0.0026998, 2.6e-4);          // se 5.1e-5
  EXPECT_NEAR(double(negative) / n, 0.5, 5 * 0.5 / std::sqrt(double(n)));  // symmetry
  std::sort(z.begin(), z.end());
  double d = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double cdf = 0.5 * std::erfc(-double(z[i]) / std::sqrt(2.0));
    d = std::max(d, std::max(std::fabs(cdf - double(i) / n), std::fabs(double(i + 1) / n - cdf)));
  }
  std::printf("  gaussian sampled: Kolmogorov-Smirnov D = %.3g\n", d);
  EXPECT_LT(d, 1.63 / std::sqrt(double(n)) + 2.5e-5);
}

// No correlation between neighbours, pair partners (and their squares), words of a call,
// groups, tensors, step seeds (including seeds differing in the high word) and streams.
TEST(NoiseGaussian, NoCorrelationAcrossElementsLanesTensorsSteps) {
  const int64_t n = int64_t(1) << 20;
  const std::vector<float> z = z_stream(NOISE_GAUSSIAN, 99, 5, n + 8);
  const double tol = 5.0 / std::sqrt(double(n));
  EXPECT_LT(std::fabs(correlation(z.data(), z.data() + 1, n)), tol) << "adjacent elements";
  EXPECT_LT(std::fabs(correlation(z.data(), z.data() + 8, n)), tol) << "adjacent groups";
  const int64_t groups = n / 8;
  const double tol_g = 5.0 / std::sqrt(double(groups));
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b)
      EXPECT_LT(std::fabs(correlation(z.data() + a, z.data() + b, groups, 8, 8)), tol_g)
          << "elements " << a << "," << b << " of a group";
  std::vector<float> sq(n);
  for (int64_t i = 0; i < n; ++i) sq[i] = z[i] * z[i];
  for (int l = 0; l < 4; ++l)  // the two normals of one word share the radius: still uncorrelated
    EXPECT_LT(std::fabs(correlation(sq.data() + 2 * l, sq.data() + 2 * l + 1, groups, 8, 8)), tol_g)
        << "squares of the pair in word " << l;
  const std::vector<std::vector<float>> others = {
      z_stream(NOISE_GAUSSIAN, 99, 6, n),                    // next tensor
      z_stream(NOISE_GAUSSIAN, 100, 5, n),                   // next step seed
      z_stream(NOISE_GAUSSIAN, 99 | (1ull << 32), 5, n),     // seed differing in the high word
  };
  for (size_t k = 0; k < others.size(); ++k) {
    int64_t equal = 0;
    for (int64_t i = 0; i < n; ++i) equal += fp_bits(z[i]) == fp_bits(others[k][i]);
    EXPECT_LT(equal, 64) << "variant " << k;  // equal values need equal 32-bit words: ~n/2^32
    EXPECT_LT(std::fabs(correlation(z.data(), others[k].data(), n)), tol) << "variant " << k;
  }
  // z against the R-MeZO mask and rounding streams of the same (seed, tensor).
  std::vector<float> mask_u(n), round_u(n);
  for (int64_t i = 0; i < n; ++i) {
    mask_u[i] = noise_uniform01(99, 5, i, NOISE_STREAM_RMEZO_MASK);
    round_u[i] = noise_uniform01(99, 5, i, NOISE_STREAM_ROUNDING);
  }
  EXPECT_LT(std::fabs(correlation(z.data(), mask_u.data(), n)), tol);
  EXPECT_LT(std::fabs(correlation(z.data(), round_u.data(), n)), tol);
}

// ---------------------------------------------------------------- rademacher

TEST(NoiseRademacher, BalancedUncorrelatedSigns) {
  const int64_t n = int64_t(1) << 20;
  const std::vector<float> z = z_stream(NOISE_RADEMACHER, 77, 3, n + 8);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(z[i] == 1.0f || z[i] == -1.0f) << i;
    sum += z[i];
  }
  const double tol = 5.0 / std::sqrt(double(n));
  EXPECT_LT(std::fabs(sum / n), tol);
  EXPECT_LT(std::fabs(correlation(z.data(), z.data() + 1, n)), tol);
  EXPECT_LT(std::fabs(correlation(z.data(), z.data() + 8, n)), tol);
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b)
      EXPECT_LT(std::fabs(correlation(z.data() + a, z.data() + b, n / 8, 8, 8)),
                5.0 / std::sqrt(double(n / 8))) << a << "," << b;
  const std::vector<float> other = z_stream(NOISE_RADEMACHER, 78, 3, n);
  EXPECT_LT(std::fabs(correlation(z.data(), other.data(), n)), tol) << "next step seed";
}
