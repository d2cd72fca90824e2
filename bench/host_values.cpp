// Host values for the op cases and the tests (see host_values.h).
#include "bench/host_values.h"

#include "common/half.h"

namespace smezo {

std::vector<float> random_floats(int64_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<float> small_ints(int64_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(dist(rng));
  return v;
}

float round_to(DType dt, float v) {
  switch (dt) {
    case DTYPE_F16: return f16_to_float(float_to_f16(v));
    case DTYPE_BF16: return bf16_to_float(float_to_bf16(v));
    case DTYPE_F32: break;
  }
  return v;
}

std::vector<float> rounded(DType dt, std::vector<float> v) {
  for (float& x : v) x = round_to(dt, x);
  return v;
}

Param host_param(std::vector<float>& values, int64_t rows, int64_t cols, const ParamInfo& info) {
  Param p;
  p.w.data = values.data();
  p.w.dtype = DTYPE_F32;
  p.w.rows = rows;
  p.w.cols = cols;
  p.info = info;
  return p;
}

}  // namespace smezo
