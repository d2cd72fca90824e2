// The sign noise kind (src/common/noise_spec.h section 12, spec v3) on the host: known answers
// computed independently, the element -> (call, word, bit) mapping through every reader of the
// spec, the sign flip the GPU's kernels apply instead of the fma, and the distribution. The CPU's
// vector paths are checked against these functions in tests/test_noise_simd.cpp, the GPU's in
// tests/test_noise_cuda.cu.
//
// Known answers: a separately written Python Philox4x32-10 (checked against Random123's vectors)
// and the mapping as the spec states it, not this code:
//   M = 0xffffffff
//   def philox(c, k):
//       k0, k1 = k
//       for r in range(10):
//           if r: k0, k1 = (k0 + 0x9E3779B9) & M, (k1 + 0xBB67AE85) & M
//           p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
//           c = [(p1 >> 32) ^ c[1] ^ k0, p1 & M, (p0 >> 32) ^ c[3] ^ k1, p0 & M]
//       return c
//   def sign(seed, tensor, i):
//       g = i // 128
//       x = philox([g & M, g >> 32, tensor, 0], [seed & M, seed >> 32])
//       return -1 if (x[(i % 128) // 32] >> (i % 32)) & 1 else 1
//
// Tolerances: the statistics use n = 2^22 signs per stream and bounds of 5 standard errors
// (mean 5/sqrt(n) = 2.4e-3, correlations the same; a bit position's share of -1 over 2^15 calls
// 5 * 0.5/sqrt(2^15) = 1.4e-2). The variance is exactly 1 (z^2 = 1): checked exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/noise_spec.h"
#include "cpu/cpu_backend.h"
#include "test_util.h"

using namespace smezo;

namespace {

// z of elements [lo, lo + n) of (seed, tensor) through noise_z8.
std::vector<float> sign_stream(uint64_t seed, uint32_t tensor, int64_t lo, int64_t n) {
  std::vector<float> z(static_cast<size_t>(n));
  for (int64_t g = lo / 8; 8 * g < lo + n; ++g) {
    float v[8];
    noise_z8(NOISE_SIGN, seed, tensor, g, v);
    for (int l = 0; l < 8; ++l)
      if (8 * g + l >= lo && 8 * g + l < lo + n) z[8 * g + l - lo] = v[l];
  }
  return z;
}

std::string as_signs(const std::vector<float>& z) {
  std::string s;
  for (float v : z) s += v == 1.0f ? '+' : v == -1.0f ? '-' : '?';
  return s;
}

}  // namespace

// ---------------------------------------------------------------- known answers

TEST(NoiseSign, KnownAnswers) {
  struct Answer {
    uint64_t seed;
    uint32_t tensor;
    int64_t index;
    int sign;
  };
  const Answer answers[] = {
      {0x0ull, 0u, 0, -1},  // bit 0 of Random123's 6627e8d5
      {0x0ull, 0u, 1, 1},
      {0x0ull, 0u, 31, 1},
      {0x0ull, 0u, 32, -1},  // bit 0 of e169c58d
      {0x0ull, 0u, 127, -1},
      {0x0ull, 0u, 128, 1},  // the next call
      {0x1ull, 17u, 1000, 1},
      {0x123456789abcdefull, 7u, 4097, 1},
      {0xffffffffffffffffull, 4294967295u, 549755813893, 1},  // call 2^32: the counter's high word
      {0x2aull, 3u, 1099511627775, 1},
  };
  for (const Answer& a : answers) {
    EXPECT_EQ(noise_z(NOISE_SIGN, a.seed, a.tensor, a.index), static_cast<float>(a.sign)) << a.index;
    float z8[8];
    noise_z8(NOISE_SIGN, a.seed, a.tensor, a.index / 8, z8);
    EXPECT_EQ(z8[a.index % 8], static_cast<float>(a.sign)) << a.index;
  }
  // runs of elements, the second and third across a call boundary
  EXPECT_EQ(as_signs(sign_stream(0, 0, 0, 64)), "-+-+-+--+++-+------++-+++--++--+-+--+++--+-+++---++-+--+-++++---");
  EXPECT_EQ(as_signs(sign_stream(0x0123456789abcdefull, 7, 120, 32)), "+--++-+--+-+++-+++-++--+--+++-+-");
  EXPECT_EQ(as_signs(sign_stream(~0ull, 0xffffffffu, (int64_t(1) << 39) - 16, 32)),
            "--------+-++----++++-++-+--++-++");
  // The CPU backend's reader on the same elements (w = 0, scale 1: w' = fma(1, z, 0) = z), every path
  // the CPU takes (tests/test_noise_simd.cpp checks each path on its own).
  CpuBackend be;
  ParamInfo info = smezo_test::linear_weight_info(7);
  info.noise = NOISE_SIGN;
  const Param p = smezo_test::make_param(be, 1, 256, DTYPE_F32, std::vector<float>(256, 0.0f), info);
  std::vector<float> out(32);
  cpu_read_param(p, Probe{1.0f, 0x0123456789abcdefull}, 120, 32, out.data());
  EXPECT_EQ(as_signs(out), "+--++-+--+-+++-+++-++--+--+++-+-");
}

// ---------------------------------------------------------------- the mapping

// Element i is bit i % 32 of word (i % 128) / 32 of call i / 128, read the same way by noise_z,
// noise_z8, noise_sign_byte and noise_sign8_of_words; the spec version records the kind.
TEST(NoiseSign, EveryReaderFollowsTheMapping) {
  std::mt19937_64 gen(3);
  for (int t = 0; t < 2000; ++t) {
    const uint64_t seed = gen();
    const uint32_t tensor = static_cast<uint32_t>(gen());
    const int64_t call = t < 1000 ? t : static_cast<int64_t>(gen() >> 25);  // small and up to 2^39
    uint32_t x[4];
    noise_philox4(seed, tensor, call, NOISE_STREAM_GAUSS, x);
    for (int64_t g = 16 * call; g < 16 * call + 16; ++g) {
      float z8[8], zw[8];
      noise_z8(NOISE_SIGN, seed, tensor, g, z8);
      noise_sign8_of_words(x, g, zw);
      const uint32_t byte = noise_sign_byte(x, g);
      for (int l = 0; l < 8; ++l) {
        const int64_t i = 8 * g + l;
        const uint32_t bit = (x[(i % 128) / 32] >> (i % 32)) & 1u;
        ASSERT_EQ(fp_bits(z8[l]), bit ? 0xbf800000u : 0x3f800000u) << "call " << call << " element " << i;
        ASSERT_EQ(fp_bits(zw[l]), fp_bits(z8[l]));
        ASSERT_EQ((byte >> l) & 1u, bit);
        ASSERT_EQ(fp_bits(noise_z(NOISE_SIGN, seed, tensor, i)), fp_bits(z8[l]));
      }
    }
  }
  EXPECT_EQ(NOISE_SPEC_VERSION, 3);
  EXPECT_EQ(noise_spec_version_of(NOISE_GAUSSIAN_V1), 1);
  EXPECT_EQ(noise_spec_version_of(NOISE_GAUSSIAN), 2);
  EXPECT_EQ(noise_spec_version_of(NOISE_RADEMACHER), 2);
  EXPECT_EQ(noise_spec_version_of(NOISE_SIGN), 3);
}

// ---------------------------------------------------------------- the sign flip

// fma(a, z, w) with z = ±1 is the correctly rounded add of w and ±a: a*z is exact, so the fma's
// one rounding is the add's (IEEE 754: fma rounds a*b + c once). So the element rules of section 7
// -- perturbed_value(w, z, ±scale, keep), updated_value(w, z, coef, keep) -- equal add_sign_flipped,
// which the GPU's sign kernels apply. Checked on 2^24 random bit patterns of w (NaNs, infinities,
// subnormals, zeros among them) against random non-NaN a (scale = sigma*eps and coef = lr*g; a NaN
// coef gives NaN either way, whose sign bit the two may set differently), and on every pair of
// special values; both signs of z each time.
TEST(NoiseSign, SignFlippedAddEqualsTheFma) {
  auto check = [](float w, float a) {
    for (uint32_t bit : {0u, 1u}) {
      const float z = sign_from_bit(bit);
      ASSERT_EQ(fp_bits(add_sign_flipped(w, a, bit)), fp_bits(fp_fma(a, z, w)))
          << std::hexfloat << "w " << w << " a " << a << " z " << z;
      ASSERT_EQ(fp_bits(add_sign_flipped(w, a, bit)), fp_bits(perturbed_value(w, z, a, true)));
      ASSERT_EQ(fp_bits(add_sign_flipped(w, -a, bit)), fp_bits(updated_value(w, z, a, true)));
      ASSERT_EQ(fp_bits(add_sign_flipped(w, a, bit ^ 1u)), fp_bits(perturbed_value(w, z, -a, true)));
    }
  };
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f, -0.0f, 1e-45f, -1e-45f, 1.17549435e-38f, 1e-3f, 1.0f, 1.5f, 3.4028235e38f,
                            -3.4028235e38f, inf, -inf, 0x1p-24f, 0x1.000002p0f, -0x1.fffffep-1f};
  for (float w : specials)
    for (float a : specials) check(w, a);
  for (float a : specials) check(std::numeric_limits<float>::quiet_NaN(), a);
  std::mt19937 gen(11);
  for (int t = 0; t < (1 << 24); ++t) {
    const float w = fp_from_bits(gen());
    float a = fp_from_bits(gen());
    if (a != a) a = fp_from_bits(gen() & 0x3fffffffu);  // a NaN scale is no scale
    if (t % 4 == 0) {  // |a| about 2^-5 |w|: a rounding case for the add (finite a whatever w is)
      const uint32_t e = (fp_bits(w) >> 23) & 0xffu;
      a = fp_from_bits((gen() & 0x807fffffu) | ((e >= 5 ? std::min(e - 5, 0xfeu) : 0u) << 23));
    }
    check(w, a);
  }
}

// ---------------------------------------------------------------- the distribution

// Zero mean, unit variance (exactly: every z is ±1), balanced signs per bit position of a call,
// and no correlation between neighbours, seeds, tensors or with the gaussian of the same seed.
TEST(NoiseSign, BalancedUncorrelatedSigns) {
  const int64_t n = int64_t(1) << 22;
  const double bound = 5.0 / std::sqrt(static_cast<double>(n));
  const std::vector<float> z = sign_stream(77, 3, 0, n + 256);
  double sum = 0;
  std::vector<int64_t> minus_at(128, 0);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(z[i] == 1.0f || z[i] == -1.0f) << i;
    sum += z[i];
    minus_at[i % 128] += z[i] < 0;
  }
  std::printf("  sign: mean %.2e over 2^22 (bound %.1e)\n", sum / n, bound);
  EXPECT_LT(std::fabs(sum / n), bound);
  for (int b = 0; b < 128; ++b)  // each of a call's 128 bits, over 2^15 calls
    EXPECT_NEAR(static_cast<double>(minus_at[b]) / (n / 128), 0.5, 5 * 0.5 / std::sqrt(n / 128.0)) << "bit " << b;
  for (int64_t lag : {1, 7, 8, 31, 32, 33, 64, 127, 128, 129, 256})
    EXPECT_LT(std::fabs(smezo_test::correlation(z.data(), z.data() + lag, n)), bound) << "lag " << lag;
  const std::vector<float> other_seed = sign_stream(78, 3, 0, n), other_tensor = sign_stream(77, 4, 0, n);
  EXPECT_LT(std::fabs(smezo_test::correlation(z.data(), other_seed.data(), n)), bound);
  EXPECT_LT(std::fabs(smezo_test::correlation(z.data(), other_tensor.data(), n)), bound);
  std::vector<float> gauss(n);
  for (int64_t g = 0; 8 * g < n; ++g) noise_z8(NOISE_GAUSSIAN, 77, 3, g, &gauss[8 * g]);
  EXPECT_LT(std::fabs(smezo_test::correlation(z.data(), gauss.data(), n)), bound);
}
