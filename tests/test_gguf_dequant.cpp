// GGUF dequantisation, every type smezo reads, against two references:
//  1. a scalar reference written here from the format description, element by element (it
//     computes each element's code, scale and offset from its index alone, in double), on
//     fresh random blocks;
//  2. tests/fixtures/gguf_quant_types.gguf: random blocks and their dequantisation by the
//     `gguf` Python package (llama.cpp's own Python code), written by its GGUFWriter
//     (regenerate with tools/fixtures/make_gguf_fixtures.py).
// Tolerance: the reference is exact (double); smezo rounds each of its 2-4 fp32 operations,
// so |ours - ref| <= 4 * FLT_EPSILON * (sum of the magnitudes of the terms).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>

#include "common/check.h"
#include "common/half.h"
#include "formats/gguf.h"
#include "formats/gguf_dequant.h"
#include "test_gguf_writer.h"
#include "test_util.h"

using namespace smezo;
using testing::HasSubstr;
using smezo_test::random_blocks;

namespace {

struct RefValue {
  double value;
  double magnitude;  // sum of |terms|, for the tolerance
};

uint16_t f16_bits_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}
double f16(const uint8_t* p) { return f16_to_float(f16_bits_at(p)); }
int nibble(uint8_t byte, bool high) { return high ? byte >> 4 : byte & 15; }
int bit(const uint8_t* bytes, int i) { return (bytes[i / 8] >> (i % 8)) & 1; }

// Element i (0..block_size-1) of one block, from the format description in gguf_dequant.cpp.
RefValue reference_element(uint32_t type, const uint8_t* b, int i) {
  switch (type) {
    case GGUF_TYPE_Q8_0: {
      double d = f16(b), q = static_cast<int8_t>(b[2 + i]);
      return {d * q, std::fabs(d * q)};
    }
    case GGUF_TYPE_Q4_0: {
      double d = f16(b);
      int q = nibble(b[2 + i % 16], i >= 16) - 8;
      return {d * q, std::fabs(d * q)};
    }
    case GGUF_TYPE_Q4_1: {
      double d = f16(b), m = f16(b + 2);
      int q = nibble(b[4 + i % 16], i >= 16);
      return {d * q + m, std::fabs(d * q) + std::fabs(m)};
    }
    case GGUF_TYPE_Q5_0: {
      double d = f16(b);
      int q = nibble(b[6 + i % 16], i >= 16) + 16 * bit(b + 2, i) - 16;
      return {d * q, std::fabs(d * q)};
    }
    case GGUF_TYPE_Q5_1: {
      double d = f16(b), m = f16(b + 2);
      int q = nibble(b[8 + i % 16], i >= 16) + 16 * bit(b + 4, i);
      return {d * q + m, std::fabs(d * q) + std::fabs(m)};
    }
    case GGUF_TYPE_Q4_K:
    case GGUF_TYPE_Q5_K: {
      const double d = f16(b), dmin = f16(b + 2);
      const uint8_t* scales = b + 4;
      const int s = i / 32, l = i % 32;  // sub-block, index in it
      // 6-bit fields: scales and mins 0-3 in the low 6 bits of bytes 0-3 / 4-7; scales and
      // mins 4-7 from the nibbles of bytes 8-11 plus the top 2 bits of bytes 0-3 / 4-7.
      int sc, mn;
      if (s < 4) {
        sc = scales[s] % 64;
        mn = scales[4 + s] % 64;
      } else {
        sc = scales[8 + s - 4] % 16 + 16 * (scales[s - 4] / 64);
        mn = scales[8 + s - 4] / 16 + 16 * (scales[s] / 64);
      }
      const uint8_t* qs = b + (type == GGUF_TYPE_Q4_K ? 16 : 48);
      int q = nibble(qs[32 * (s / 2) + l], s % 2 == 1);
      if (type == GGUF_TYPE_Q5_K) q += 16 * bit(b + 16, 8 * l + s);  // bit s of qh[l]
      double a = d * sc * q, o = dmin * mn;
      return {a - o, std::fabs(a) + std::fabs(o)};
    }
    case GGUF_TYPE_Q6_K: {
      const uint8_t* ql = b;
      const uint8_t* qh = b + 128;
      const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
      const double d = f16(b + 208);
      const int h = i / 128, g = (i % 128) / 32, l = i % 32;
      int q = nibble(ql[64 * h + 32 * (g % 2) + l], g >= 2) + 16 * ((qh[32 * h + l] >> (2 * g)) % 4) - 32;
      double v = d * scales[8 * h + 2 * g + l / 16] * q;
      return {v, std::fabs(v)};
    }
  }
  ADD_FAILURE() << "no reference for type " << type;
  return {0, 0};
}

const uint32_t kQuantTypes[] = {GGUF_TYPE_Q8_0, GGUF_TYPE_Q4_0, GGUF_TYPE_Q4_1, GGUF_TYPE_Q5_0,
                                GGUF_TYPE_Q5_1, GGUF_TYPE_Q4_K, GGUF_TYPE_Q5_K, GGUF_TYPE_Q6_K};

// Runs the decoder into a NaN-poisoned buffer with guard values after the end.
std::vector<float> decode_poisoned(uint32_t type, const void* src, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n + 8), std::nanf(""));
  out[static_cast<size_t>(n)] = 12345.0f;
  gguf_dequantize(type, src, n, out.data());
  EXPECT_EQ(out[static_cast<size_t>(n)], 12345.0f) << gguf_type_name(type) << " wrote past the end";
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace

TEST(GgufDequant, EveryQuantTypeMatchesTheScalarReference) {
  for (uint32_t type : kQuantTypes) {
    const GgufTypeTraits* t = gguf_type_traits(type);
    ASSERT_TRUE(t);
    const int64_t n_blocks = t->block_size == 256 ? 5 : 37;
    const int64_t n = n_blocks * t->block_size;
    std::vector<uint8_t> blocks = random_blocks(type, n_blocks, 1000 + type);
    std::vector<float> got = decode_poisoned(type, blocks.data(), n);
    int64_t nonzero = 0, bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
      const int64_t blk = i / t->block_size;
      RefValue ref = reference_element(type, blocks.data() + blk * t->block_bytes,
                                       static_cast<int>(i % t->block_size));
      const double err = std::fabs(got[static_cast<size_t>(i)] - ref.value);
      const double tol = 4 * FLT_EPSILON * ref.magnitude;
      worst = std::max(worst, err / (tol + 1e-30));
      if (!(err <= tol) && bad++ < 5)
        ADD_FAILURE() << t->name << " element " << i << ": got " << got[static_cast<size_t>(i)]
                      << ", reference " << ref.value;
      nonzero += ref.value != 0.0;
    }
    EXPECT_GT(nonzero, n / 2) << t->name << ": the random blocks should give mostly non-zero values";
    EXPECT_EQ(bad, 0) << t->name << " (worst error / tolerance " << worst << ")";
  }
}

TEST(GgufDequant, PlainTypes) {
  std::vector<float> values = smezo_test::random_floats(96, 7, -4.0f, 4.0f);
  std::vector<uint16_t> f16(values.size()), bf16(values.size());
  for (size_t i = 0; i < values.size(); i++) {
    f16[i] = float_to_f16(values[i]);
    bf16[i] = float_to_bf16(values[i]);
  }
  std::vector<float> got = decode_poisoned(GGUF_TYPE_F32, values.data(), 96);
  EXPECT_EQ(got, values);
  // The decode of a stored half is exact: compare bit for bit with the value the bits name,
  // worked out here from sign, exponent and mantissa (the encode alone rounds).
  got = decode_poisoned(GGUF_TYPE_F16, f16.data(), 96);
  for (size_t i = 0; i < values.size(); i++) {
    const uint16_t h = f16[i];
    const int e = (h >> 10) & 31, mant = h & 1023;
    ASSERT_LT(e, 31) << i;  // |values| < 4: no inf or NaN
    const double magnitude = e == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, e - 25);
    EXPECT_EQ(got[i], static_cast<float>((h >> 15) ? -magnitude : magnitude)) << i;
    EXPECT_NEAR(got[i], values[i], 4.0 / 2048) << i;
  }
  got = decode_poisoned(GGUF_TYPE_BF16, bf16.data(), 96);
  for (size_t i = 0; i < values.size(); i++) {
    const uint32_t widened = static_cast<uint32_t>(bf16[i]) << 16;
    float want;
    std::memcpy(&want, &widened, 4);
    EXPECT_EQ(got[i], want) << i;
    EXPECT_NEAR(got[i], values[i], 4.0 / 256) << i;
  }
}

TEST(GgufDequant, MatchesTheGgufPythonPackage) {
  const std::string path = "tests/fixtures/gguf_quant_types.gguf";
  auto f = GgufFile::open(path);
  int checked = 0;
  for (const char* name : {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K",
                           "Q5_K", "Q6_K"}) {
    const GgufTensorInfo* q = f->find_tensor(std::string("q.") + name);
    const GgufTensorInfo* ref = f->find_tensor(std::string("ref.") + name);
    ASSERT_TRUE(q && ref) << name;
    EXPECT_STREQ(gguf_type_name(q->type), name);
    ASSERT_EQ(ref->type, GGUF_TYPE_F32);
    ASSERT_EQ(q->numel, 256);
    ASSERT_EQ(ref->numel, 256);
    std::vector<float> got = decode_poisoned(q->type, q->data, q->numel);
    std::vector<float> want(256);
    std::memcpy(want.data(), ref->data, 256 * 4);
    float max_ref = 0;
    for (float v : want) max_ref = std::max(max_ref, std::fabs(v));
    ASSERT_GT(max_ref, 0.0f) << name;
    for (int i = 0; i < 256; i++)
      ASSERT_NEAR(got[static_cast<size_t>(i)], want[static_cast<size_t>(i)], 4 * FLT_EPSILON * max_ref)
          << name << " element " << i;
    checked++;
  }
  EXPECT_EQ(checked, 11);
}

TEST(GgufDequant, RefusesUnsupportedTypesAndPartialBlocks) {
  std::vector<uint8_t> bytes(1024, 1);
  std::vector<float> out(512);
  EXPECT_THAT(smezo_test::error_of([&] { gguf_dequantize(11, bytes.data(), 256, out.data()); }),
              HasSubstr("GGUF tensor type Q3_K (11) cannot be dequantised"));
  EXPECT_THAT(smezo_test::error_of([&] { gguf_dequantize(GGUF_TYPE_Q4_1, bytes.data(), 40, out.data()); }),
              HasSubstr("cannot dequantise 40 elements of Q4_1"));
  EXPECT_EQ(gguf_decode_fn(99), nullptr);
}
