// The CPU backend's noise paths (src/cpu/optimizer.cpp) against the spec, element by
// element: cpu_read_param over aligned and unaligned ranges, and CpuBackend::update, for every
// noise kind and mask kind, on tensors large enough to be spread over the cores with OpenMP;
// the results are bit-identical whatever the thread count (1, 2, 3 and 8 threads).
#include <gtest/gtest.h>
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "common/noise_spec.h"
#include "cpu/cpu_backend.h"
#include "test_util.h"

using namespace smezo;
using smezo_test::make_param;

namespace {

const NoiseKind kKinds[] = {NOISE_GAUSSIAN, NOISE_GAUSSIAN_V1, NOISE_RADEMACHER, NOISE_SIGN};
const MaskKind kMasks[] = {MASK_DENSE, MASK_MAGNITUDE, MASK_RANDOM};

// Restores the OpenMP thread count on scope exit.
struct ThreadCount {
  int saved = omp_get_max_threads();
  explicit ThreadCount(int n) { omp_set_num_threads(n); }
  ~ThreadCount() { omp_set_num_threads(saved); }
};

// The test weight's ParamInfo: tensor 17, noise `kind`, mask `mask` (threshold 0.4, keep 0.3).
ParamInfo weight_info(NoiseKind kind, MaskKind mask) {
  ParamInfo info = smezo_test::linear_weight_info(17);
  info.noise = kind;
  info.mask = mask;
  info.threshold = 0.4f;
  info.keep_prob = 0.3f;
  info.mask_seed = 0x5151;
  return info;
}

bool keep_of(const ParamInfo& info, float w, int64_t i) {
  return mask_keep(info.mask, w, info.threshold, info.keep_prob, info.mask_seed, info.tensor_id, i);
}

}  // namespace

TEST(NoiseCpu, ReadParamMatchesTheSpecOnAnyRange) {
  CpuBackend be;
  const int64_t rows = 613, cols = 491;  // 300,983 elements: above the parallel threshold
  const int64_t n = rows * cols;
  const std::vector<float> w = smezo_test::random_floats(n, 31, -1.0f, 1.0f);
  const Probe probe{-1.5e-3f, 0x9e3779b97f4a7c15ull};
  struct Range {
    int64_t start, count;
  };
  const Range ranges[] = {{0, n}, {3, n - 10}, {131071, 150001}, {5, 17}, {n - 1, 1}, {8, 8}, {0, 0}};
  for (NoiseKind kind : kKinds) {
    for (MaskKind mask : kMasks) {
      const Param p = make_param(be, rows, cols, DTYPE_F32, w, weight_info(kind, mask));
      for (const Range& r : ranges) {
        std::vector<float> out(r.count + 2, -7.0f);  // poisoned, plus a guard after the range
        cpu_read_param(p, probe, r.start, r.count, out.data());
        for (int64_t k = 0; k < r.count; ++k) {
          const int64_t i = r.start + k;
          const float z = noise_z(kind, probe.seed, 17, i);
          const float want = perturbed_value(w[i], z, probe.scale, keep_of(p.info, w[i], i));
          ASSERT_EQ(fp_bits(out[k]), fp_bits(want))
              << "kind " << kind << " mask " << mask << " range " << r.start << "+" << r.count
              << " element " << i;
        }
        EXPECT_EQ(out[r.count], -7.0f);
        EXPECT_EQ(out[r.count + 1], -7.0f);
      }
    }
  }
}

TEST(NoiseCpu, UpdateMatchesTheSpecForAnyThreadCount) {
  CpuBackend be;
  const int64_t rows = 701, cols = 333;  // 233,433 elements, not a multiple of 8
  const int64_t n = rows * cols;
  const std::vector<float> w = smezo_test::random_floats(n, 32, -1.0f, 1.0f);
  const float coef = 2.5e-3f, decay = 1e-4f;
  const uint64_t seed = 0xfeedfacecafebeefull;
  for (NoiseKind kind : kKinds) {
    for (MaskKind mask : kMasks) {
      std::vector<float> want(n);
      const ParamInfo info = weight_info(kind, mask);
      for (int64_t i = 0; i < n; ++i) {
        const bool k = keep_of(info, w[i], i);
        const float w1 = updated_value(w[i], noise_z(kind, seed, 17, i), coef, k);
        want[i] = k ? fp_fma(-decay, w[i], w1) : w1;
      }
      for (int threads : {1, 2, 3, 8}) {
        ThreadCount tc(threads);
        Param p = make_param(be, rows, cols, DTYPE_F32, w, weight_info(kind, mask));
        be.update(p, coef, decay, seed);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(fp_bits(p.w.f32()[i]), fp_bits(want[i]))
              << "kind " << kind << " mask " << mask << " threads " << threads << " element " << i;
      }
    }
  }
}

// A frozen parameter is neither perturbed nor updated, whatever the kind.
TEST(NoiseCpu, FrozenParametersAreUntouched) {
  CpuBackend be;
  const std::vector<float> w = smezo_test::random_floats(4096, 33);
  for (NoiseKind kind : kKinds) {
    Param p = make_param(be, 64, 64, DTYPE_F32, w, weight_info(kind, MASK_DENSE));
    p.info.trainable = false;
    std::vector<float> out(4096);
    cpu_read_param(p, Probe{1e-3f, 5}, 0, 4096, out.data());
    EXPECT_EQ(0, std::memcmp(out.data(), w.data(), 4096 * sizeof(float)));
    be.update(p, 1e-2f, 0.0f, 5);
    EXPECT_EQ(0, std::memcmp(p.w.f32(), w.data(), 4096 * sizeof(float)));
  }
}
