// The CUDA update with stochastic rounding to bf16 equals the host emulation of the spec bit
// for bit (src/common/noise_spec.h: updated_value with noise_z of the parameter's noise kind,
// then bf16_round_stochastic with noise_rounding_bits), for kept entries, for every noise kind
// and the magnitude and random masks; entries outside the mask keep their stored bits.
#include <gtest/gtest.h>

#include <vector>

#include "common/half.h"
#include "common/noise_spec.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "test_util.h"

using namespace smezo;

TEST(StochasticRoundingCuda, Bf16UpdateMatchesHostBitForBit) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CudaBackend be;
  const int64_t rows = 37, cols = 53;  // odd: groups of 4 and of 8 straddle rows
  std::vector<float> w = smezo_test::random_floats(rows * cols, 11, -0.5f, 0.5f);
  for (float& x : w) x = bf16_to_float(float_to_bf16(x));  // exactly representable start
  for (NoiseKind kind : {NOISE_GAUSSIAN, NOISE_GAUSSIAN_V1, NOISE_RADEMACHER, NOISE_SIGN}) {
    for (MaskKind mask : {MASK_MAGNITUDE, MASK_RANDOM}) {
      SCOPED_TRACE(testing::Message() << "noise kind " << kind << " mask " << mask);
      ParamInfo info = smezo_test::linear_weight_info(5);
      info.noise = kind;
      info.mask = mask;
      info.threshold = 0.3f;
      info.keep_prob = 0.4f;
      info.mask_seed = 0x77;
      info.stochastic_rounding = true;
      Param p = smezo_test::make_param(be, rows, cols, DTYPE_BF16, w, info);
      const float coef = 3e-4f, decay = 1e-5f;
      const uint64_t seed = 0xABCDEF12345ULL;
      be.update(p, coef, decay, seed);
      std::vector<float> got(rows * cols);
      be.download(p.w, got.data());
      for (int64_t i = 0; i < rows * cols; i++) {
        const bool keep = mask_keep(mask, w[i], 0.3f, 0.4f, 0x77, 5, i);
        float expected = w[i];
        if (keep) {
          const float w1 = updated_value(w[i], noise_z(kind, seed, 5, i), coef, true);
          const float w2 = fp_fma(-decay, w[i], w1);
          expected = bf16_to_float(bf16_round_stochastic(w2, noise_rounding_bits(seed, 5, i)));
        }
        ASSERT_EQ(fp_bits(got[i]), fp_bits(expected)) << "element " << i;
      }
    }
  }
}
