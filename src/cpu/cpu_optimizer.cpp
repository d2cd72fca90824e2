// CPU reference: reading a parameter under a probe, the SPSA update W <- W - coef·m(W)⊙z, and
// the exact |W| quantile that fixes the S-MeZO threshold. All follow src/common/noise_spec.h.
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/check.h"
#include "common/noise_spec.h"
#include "cpu/cpu_backend.h"

namespace smezo {

namespace {

// Calls fn(index, z) for the Gaussian noise of elements [start, start + count), one Philox call
// per group of four.
template <typename Fn>
void for_each_noise(uint64_t seed, uint32_t tensor_id, int64_t start, int64_t count, Fn fn) {
  float z[4];
  int64_t group = -1;
  for (int64_t i = start; i < start + count; i++) {
    if (i / 4 != group) {
      group = i / 4;
      noise_normal4(seed, tensor_id, group, NOISE_STREAM_GAUSS, z);
    }
    fn(i, z[i % 4]);
  }
}

bool keep(const ParamInfo& info, float w, int64_t index) {
  return mask_keep(info.mask, w, info.threshold, info.keep_prob, info.mask_seed, info.tensor_id,
                   index);
}

}  // namespace

void cpu_read_param(const Param& p, const Probe& probe, int64_t start, int64_t count, float* out) {
  const float* w = p.w.f32();
  if (probe.scale == 0.0f || !p.info.trainable) {
    std::copy(w + start, w + start + count, out);
    return;
  }
  for_each_noise(probe.seed, p.info.tensor_id, start, count, [&](int64_t i, float z) {
    out[i - start] = perturbed_value(w[i], z, probe.scale, keep(p.info, w[i], i));
  });
}

void CpuBackend::update(Param& p, float coef, float decay, uint64_t seed) {
  if (!p.info.trainable) return;
  float* w = p.w.f32();
  for_each_noise(seed, p.info.tensor_id, 0, p.w.numel(), [&](int64_t i, float z) {
    const bool k = keep(p.info, w[i], i);
    const float w1 = updated_value(w[i], z, coef, k);
    w[i] = k ? fp_fma(-decay, w[i], w1) : w1;
  });
}

float CpuBackend::abs_quantile(const Param& p, double q) {
  SMEZO_REQUIRE(q >= 0.0 && q <= 1.0, "quantile %g outside [0, 1]", q);
  const int64_t n = p.w.numel();
  SMEZO_REQUIRE(n > 0, "quantile of empty tensor %s", p.info.name.c_str());
  std::vector<float> a(p.w.f32(), p.w.f32() + n);
  for (float& x : a) x = std::fabs(x);
  const int64_t k = static_cast<int64_t>(std::floor(q * static_cast<double>(n - 1)));
  std::nth_element(a.begin(), a.begin() + k, a.end());
  return a[k];
}

}  // namespace smezo
