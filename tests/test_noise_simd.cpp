// The CPU noise paths (src/cpu/noise_path.h: scalar, AVX2, AVX-512) against the spec
// (src/common/noise_spec.h), bit for bit. For each path this CPU runs (the others skip, saying
// which instruction set is missing):
//   - the range workers (read, read pair, update) for every noise kind and mask kind, four
//     (seed, tensor id) pairs, ranges with unaligned starts and tails (counts not multiples of
//     8, 16 or a step of 128, 0 to 611), ranges whose Philox group crosses 2^32 and 2^37 (sign's
//     call of 128 crosses 2^32); random non-zero
//     weights with the magnitude threshold, its negative and a subnormal among them; outputs
//     poisoned with a NaN, guards before and after them, elements outside an update's range;
//   - the transform alone on Philox words covering every radius and every angle the spec can
//     make (gaussian, rademacher, sign: every 16-bit half in both places; gaussian-v1: every 24-bit
//     uniform of the radius and of the angle), so the tails of the distribution are included;
//   - the CPU backend on the path (noise_path_set) for 1, 2 and 3 OpenMP threads;
//   - SMEZO_NOISE_PATH: checked when the CPU backend is made (the CLI with each value).
#include <gtest/gtest.h>
#include <omp.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/noise_spec.h"
#include "cpu/cpu_backend.h"
#include "cpu/noise_path.h"
#include "test_util.h"

using namespace smezo;

namespace {

const NoiseKind kKinds[] = {NOISE_GAUSSIAN, NOISE_GAUSSIAN_V1, NOISE_RADEMACHER, NOISE_SIGN};
const MaskKind kMasks[] = {MASK_DENSE, MASK_MAGNITUDE, MASK_RANDOM};
const uint32_t kPoison = 0x7fc0dead;  // a quiet NaN no path writes

// The path's workers, or a skip naming what this CPU lacks.
#define NOISE_PATH_OR_SKIP(path, fns)                                                             \
  const NoiseRangeFns* fns = noise_path_fns(path);                                                \
  if (fns == nullptr)                                                                             \
    GTEST_SKIP() << "noise path " << noise_path_name(path)                                        \
                 << ": not compiled in (not x86-64) or this CPU lacks the instruction set: skipped"

ParamInfo weight_info(NoiseKind kind, MaskKind mask, uint32_t tensor_id) {
  ParamInfo info = smezo_test::linear_weight_info(tensor_id);
  info.noise = kind;
  info.mask = mask;
  info.threshold = 0.4f;
  info.keep_prob = 0.3f;
  info.mask_seed = 0x5151cafe0000beefull;
  return info;
}

// n random weights in (-1, 1), none zero, with the threshold, its negative and a subnormal.
std::vector<float> test_weights(int64_t n, uint32_t seed) {
  std::vector<float> w = smezo_test::random_floats(n, seed, -1.0f, 1.0f);
  for (float& x : w)
    if (x == 0.0f) x = 0.25f;
  for (int64_t i = 5; i + 2 < n; i += 37) {
    w[i] = 0.4f;
    w[i + 1] = -0.4f;
    w[i + 2] = 1e-40f;
  }
  return w;
}

std::vector<float> poisoned(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = fp_from_bits(kPoison);
  return v;
}

// The spec's results for elements first .. first + n - 1 of weights w (w[k] is element first + k).
struct Expected {
  std::vector<float> plus, minus, updated;
};

Expected expected_of(const ParamInfo& info, const std::vector<float>& w, int64_t first, uint64_t seed, float scale,
                     float coef, float decay) {
  Expected e;
  for (size_t k = 0; k < w.size(); ++k) {
    const int64_t i = first + static_cast<int64_t>(k);
    const float z = noise_z(info.noise, seed, info.tensor_id, i);
    const bool keep = mask_keep(info.mask, w[k], info.threshold, info.keep_prob, info.mask_seed, info.tensor_id, i);
    e.plus.push_back(perturbed_value(w[k], z, scale, keep));
    e.minus.push_back(perturbed_value(w[k], z, -scale, keep));
    const float w1 = updated_value(w[k], z, coef, keep);
    e.updated.push_back(keep ? fp_fma(-decay, w[k], w1) : w1);
  }
  return e;
}

// Runs read, read pair and update of [first + start, first + start + count) on weights w
// (element first + k at w[k]) and compares every output and guard with the spec's bits.
void check_range(const NoiseRangeFns& fns, const ParamInfo& info, const std::vector<float>& w, int64_t first,
                 const Expected& want, uint64_t seed, float scale, float coef, float decay, int64_t start,
                 int64_t count, const std::string& what) {
  const int64_t guard = 19;
  const float* wb = w.data() - first;  // wb[i] is element i
  std::vector<float> read = poisoned(count + 2 * guard), plus = poisoned(count + 2 * guard),
                     minus = poisoned(count + 2 * guard);
  fns.read(info, wb, scale, seed, first + start, count, read.data() + guard);
  fns.read_pair(info, wb, scale, seed, first + start, count, plus.data() + guard, minus.data() + guard);
  std::vector<float> upd = w;
  fns.update(info, upd.data() - first, coef, decay, seed, first + start, count);
  const std::string at = what + " range " + std::to_string(first + start) + "+" + std::to_string(count);
  for (int64_t k = 0; k < count + 2 * guard; ++k) {
    const bool in = k >= guard && k < guard + count;
    const int64_t j = start + k - guard;  // index into w and want
    ASSERT_EQ(fp_bits(read[k]), in ? fp_bits(want.plus[j]) : kPoison) << at << " read at " << k - guard;
    ASSERT_EQ(fp_bits(plus[k]), in ? fp_bits(want.plus[j]) : kPoison) << at << " pair + at " << k - guard;
    ASSERT_EQ(fp_bits(minus[k]), in ? fp_bits(want.minus[j]) : kPoison) << at << " pair - at " << k - guard;
  }
  for (int64_t j = 0; j < static_cast<int64_t>(w.size()); ++j) {
    const bool in = j >= start && j < start + count;
    ASSERT_EQ(fp_bits(upd[j]), fp_bits(in ? want.updated[j] : w[j])) << at << " update of element " << first + j;
  }
}

void check_ranges(NoisePath path) {
  const NoiseRangeFns& fns = *noise_path_fns(path);
  struct Key {
    uint64_t seed;
    uint32_t tensor_id;
  };
  const Key keys[] = {{0, 0}, {1, 17}, {0x9e3779b97f4a7c15ull, 0xffffffffu}, {~0ull, 3}};
  const int64_t starts[] = {0, 1, 3, 7, 8, 9, 13, 16, 24, 31, 33};
  const int64_t counts[] = {0, 1, 2, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 63, 64, 65, 100, 127, 128, 129, 257, 389, 611};
  // Elements from 0, and just below where the counter's word 0 carries into word 1: groups of 4
  // (gaussian-v1, mask) 2^32, groups of 8 2^32, groups of 8 2^37, and sign's calls of 128 2^32.
  const int64_t firsts[] = {0, (int64_t(1) << 34) - 8 * 20, (int64_t(1) << 35) - 8 * 20 - 8,
                            (int64_t(1) << 40) - 8 * 7, (int64_t(1) << 39) - 8 * 45};
  const std::vector<float> w = test_weights(650, 41);  // starts + counts fit
  const float scale = -1.5e-3f, coef = 2.5e-3f, decay = 1e-4f;
  for (const Key& key : keys) {
    for (NoiseKind kind : kKinds) {
      for (MaskKind mask : kMasks) {
        const ParamInfo info = weight_info(kind, mask, key.tensor_id);
        for (int64_t first : firsts) {
          const Expected want = expected_of(info, w, first, key.seed, scale, coef, decay);
          const std::string what = std::string(noise_path_name(path)) + " kind " + std::to_string(kind) +
                                   " mask " + std::to_string(mask) + " seed " + std::to_string(key.seed) +
                                   " tensor " + std::to_string(key.tensor_id);
          for (int64_t start : starts)
            for (int64_t count : counts)
              if (first == 0 || count >= 100)  // at large indices: the long ranges only
                check_range(fns, info, w, first, want, key.seed, scale, coef, decay, start, count, what);
        }
      }
    }
  }
}

// z of n_calls words through the path's transform, against the spec's pair functions.
void check_words(NoisePath path, NoiseKind kind, const std::vector<uint32_t>& words) {
  const NoiseRangeFns& fns = *noise_path_fns(path);
  const int64_t n_calls = static_cast<int64_t>(words.size() / 4);
  const int per_call = kind == NOISE_GAUSSIAN_V1 ? 4 : kind == NOISE_SIGN ? 128 : 8;
  std::vector<float> z = poisoned(n_calls * per_call + 1);
  fns.z_of_words(kind, words.data(), n_calls, z.data());
  for (int64_t k = 0; k < n_calls; ++k) {
    const uint32_t* x = &words[4 * k];
    float want[128];
    for (int g = 0; g < 16 && kind == NOISE_SIGN; ++g) noise_sign8_of_words(x, g, want + 8 * g);
    if (kind == NOISE_GAUSSIAN_V1) {
      noise_box_muller(x[0], x[1], &want[0], &want[1]);
      noise_box_muller(x[2], x[3], &want[2], &want[3]);
    }
    for (int l = 0; l < 4 && kind != NOISE_GAUSSIAN_V1 && kind != NOISE_SIGN; ++l) {
      if (kind == NOISE_RADEMACHER) {
        want[2 * l] = rademacher_from_half(x[l], 0);
        want[2 * l + 1] = rademacher_from_half(x[l], 1);
      } else {
        noise_v2_pair(x[l], &want[2 * l], &want[2 * l + 1]);
      }
    }
    for (int j = 0; j < per_call; ++j)
      ASSERT_EQ(fp_bits(z[per_call * k + j]), fp_bits(want[j]))
          << noise_path_name(path) << " kind " << kind << " call " << k << " words " << std::hex
          << x[0] << " " << x[1] << " " << x[2] << " " << x[3] << " output " << std::dec << j;
  }
  ASSERT_EQ(fp_bits(z.back()), kPoison) << "written past the end, kind " << kind;
}

void check_every_radius_and_angle(NoisePath path) {
  // gaussian, rademacher: word (a << 16) | b takes every a and, with a bijection of it, every
  // b (and the other way round): every radius, every angle and both sign bits.
  std::vector<uint32_t> words;
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint32_t p = (i * 40503u) & 0xffffu;
    words.push_back((i << 16) | p);
    words.push_back((p << 16) | i);
  }
  for (NoiseKind kind : {NOISE_GAUSSIAN, NOISE_RADEMACHER, NOISE_SIGN}) check_words(path, kind, words);
  // gaussian-v1: every 24-bit uniform of the radius (xa >> 8) and of the angle (xb >> 8), in
  // chunks of 2^16 Box-Muller pairs (2 per call).
  for (uint32_t chunk = 0; chunk < 256; ++chunk) {
    words.clear();
    for (uint32_t i = chunk << 16; i < (chunk + 1) << 16; ++i) {
      words.push_back((i << 8) | (i & 0xffu));
      words.push_back((((i * 2654435761u) & 0xffffffu) << 8) | (chunk ^ 0x5au));
    }
    check_words(path, NOISE_GAUSSIAN_V1, words);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Restores the active noise path and the OpenMP thread count on scope exit.
struct PathAndThreads {
  NoisePath saved_path = noise_path_active();
  int saved_threads = omp_get_max_threads();
  ~PathAndThreads() {
    noise_path_set(saved_path);
    omp_set_num_threads(saved_threads);
  }
};

// The CPU backend on the path, over the cores: the read pair of a range and the update of a
// tensor large enough to be split into OpenMP chunks, for 1, 2 and 3 threads.
void check_backend(NoisePath path) {
  PathAndThreads restore;
  CpuBackend be;
  const int64_t rows = 599, cols = 307, n = rows * cols;  // 183,893 elements
  const std::vector<float> w = test_weights(n, 43);
  const Probe pair{2e-3f, 0xabcdef0123ull};
  const float coef = 1e-3f, decay = 2e-4f;
  const uint64_t seed = 0x1234567887654321ull;
  const int64_t start = 131071, count = 50001;
  for (NoiseKind kind : kKinds) {
    for (MaskKind mask : kMasks) {
      const ParamInfo info = weight_info(kind, mask, 29);
      const Expected probe = expected_of(info, w, 0, pair.seed, pair.scale, 0.0f, 0.0f);
      const Expected step = expected_of(info, w, 0, seed, 0.0f, coef, decay);
      noise_path_set(path);
      for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        Param p = smezo_test::make_param(be, rows, cols, DTYPE_F32, w, info);
        std::vector<float> plus = poisoned(count), minus = poisoned(count);
        cpu_read_param_pair(p, pair, start, count, plus.data(), minus.data());
        be.update(p, coef, decay, seed);
        const std::string at = std::string(noise_path_name(path)) + " kind " + std::to_string(kind) + " mask " +
                               std::to_string(mask) + " threads " + std::to_string(threads);
        for (int64_t k = 0; k < count; ++k) {
          ASSERT_EQ(fp_bits(plus[k]), fp_bits(probe.plus[start + k])) << at << " element " << start + k;
          ASSERT_EQ(fp_bits(minus[k]), fp_bits(probe.minus[start + k])) << at << " element " << start + k;
        }
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(fp_bits(p.w.f32()[i]), fp_bits(step.updated[i])) << at << " " << i;
      }
    }
  }
}

}  // namespace

TEST(NoiseSimd, ScalarRangesMatchTheSpec) {
  NOISE_PATH_OR_SKIP(NOISE_PATH_SCALAR, fns);
  check_ranges(NOISE_PATH_SCALAR);
}
TEST(NoiseSimd, Avx2RangesMatchTheSpec) {
  NOISE_PATH_OR_SKIP(NOISE_PATH_AVX2, fns);
  check_ranges(NOISE_PATH_AVX2);
}
TEST(NoiseSimd, Avx512RangesMatchTheSpec) {
  NOISE_PATH_OR_SKIP(NOISE_PATH_AVX512, fns);
  check_ranges(NOISE_PATH_AVX512);
}

TEST(NoiseSimd, ScalarEveryRadiusAndAngle) {
  NOISE_PATH_OR_SKIP(NOISE_PATH_SCALAR, fns);
  check_every_radius_and_angle(NOISE_PATH_SCALAR);
}
TEST(NoiseSimd, Avx2EveryRadiusAndAngle) {
  NOISE_PATH_OR_SKIP(NOISE_PATH_AVX2, fns);
  check_every_radius_and_angle(NOISE_PATH_AVX2);
}
TEST(NoiseSimd, Avx512EveryRadiusAndAngle) {
  NOISE_PATH_OR_SKIP(NOISE_PATH_AVX512, fns);
  check_every_radius_and_angle(NOISE_PATH_AVX512);
}

TEST(NoiseSimd, ScalarBackendAnyThreadCount) {
  NOISE_PATH_OR_SKIP(NOISE_PATH_SCALAR, fns);
  check_backend(NOISE_PATH_SCALAR);
}
TEST(NoiseSimd, Avx2BackendAnyThreadCount) {
  NOISE_PATH_OR_SKIP(NOISE_PATH_AVX2, fns);
  check_backend(NOISE_PATH_AVX2);
}
TEST(NoiseSimd, Avx512BackendAnyThreadCount) {
  NOISE_PATH_OR_SKIP(NOISE_PATH_AVX512, fns);
  check_backend(NOISE_PATH_AVX512);
}

// The active path is one this CPU runs, and the fastest unless SMEZO_NOISE_PATH names another.
TEST(NoiseSimd, ActivePathRunsHere) {
  const NoisePath active = noise_path_active();
  EXPECT_NE(noise_path_fns(active), nullptr) << noise_path_name(active);
  if (std::getenv("SMEZO_NOISE_PATH") == nullptr) {
    for (int p = active + 1; p < NOISE_PATH_COUNT; ++p)
      EXPECT_EQ(noise_path_fns(static_cast<NoisePath>(p)), nullptr)
          << noise_path_name(static_cast<NoisePath>(p)) << " runs here and is faster than " << noise_path_name(active);
  }
  EXPECT_STREQ(noise_path_name(NOISE_PATH_AVX512), "avx512");
  EXPECT_NE(noise_path_fns(NOISE_PATH_SCALAR), nullptr);
}

// SMEZO_NOISE_PATH naming no path, or one this CPU cannot run, stops the program when the CPU
// backend is made, with a message saying what to set; a path it runs is taken.
TEST(NoiseSimd, NoisePathVariableIsCheckedAtStart) {
  const std::string run = " " + smezo_test::smezo_binary() + " bench --shape tiny --device cpu --reps 1 --warmup 0";
  std::string out;
  EXPECT_NE(smezo_test::run_command("SMEZO_NOISE_PATH=avx9" + run, &out), 0);
  EXPECT_NE(out.find("SMEZO_NOISE_PATH=avx9 is not a noise path: use scalar, avx2 or avx512"), std::string::npos)
      << out;
  for (int p = 0; p < NOISE_PATH_COUNT; ++p) {
    const NoisePath path = static_cast<NoisePath>(p);
    const int rc = smezo_test::run_command(std::string("SMEZO_NOISE_PATH=") + noise_path_name(path) + run, &out);
    if (noise_path_fns(path) != nullptr) {
      EXPECT_EQ(rc, 0) << noise_path_name(path) << ": " << out;
    } else {
      EXPECT_NE(rc, 0) << noise_path_name(path);
      EXPECT_NE(out.find("this build or this CPU cannot run it"), std::string::npos) << out;
    }
  }
}
