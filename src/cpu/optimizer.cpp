// CPU reference: reading a parameter under a probe, the SPSA update W <- W - coef·m(W)⊙z, and
// the exact |W| quantile that fixes the S-MeZO threshold. All follow src/common/noise_spec.h.
//
// Speed (issue #14, CPU replay): z is generated 8 elements per Philox call (noise_z8, whatever
// the kind), the R-MeZO mask 4 per call, and large ranges are split over the cores with
// OpenMP in chunks aligned to 8 elements. Every element is a pure function of its index, so
// the result is bit-identical for any thread count (tests/test_noise_cpu.cpp). The range
// workers are compiled twice (target_clones): for FMA hardware, where std::fma is one
// instruction, and for baseline x86-64, where it is a libm call; both are correctly rounded,
// so both give the same bits.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "common/check.h"
#include "common/noise_spec.h"
#include "cpu/cpu_backend.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SMEZO_CPU_CLONES __attribute__((flatten, target_clones("fma", "default")))
#else
#define SMEZO_CPU_CLONES
#endif

namespace smezo {

namespace {

// Elements per OpenMP work item (a multiple of 8), and the smallest range worth spreading.
constexpr int64_t kChunk = int64_t(1) << 15;
constexpr int64_t kParallelMin = int64_t(1) << 17;

// The z and the keep flags of the 8 elements of group8 (elements of the group outside the
// caller's range are computed and ignored). w8 holds the current values of the group's
// elements in the range (0 elsewhere: their flags are never used).
inline void group_noise(const ParamInfo& info, uint64_t seed, int64_t group8, const float w8[8],
                        float z[8], bool keep[8]) {
  noise_z8(info.noise, seed, info.tensor_id, group8, z);
  mask_keep_group4(info.mask, w8, info.threshold, info.keep_prob, info.mask_seed, info.tensor_id,
                   2 * group8, keep);
  mask_keep_group4(info.mask, w8 + 4, info.threshold, info.keep_prob, info.mask_seed,
                   info.tensor_id, 2 * group8 + 1, keep + 4);
}

// The groups of 8 that [start, start + count) touches: fn(group8, lo, hi) with the group's
// elements [lo, hi) in the range (0 <= lo < hi <= 8). Whole groups take a branch-free body.
template <typename Fn>
inline void for_each_group(int64_t start, int64_t count, Fn fn) {
  const int64_t end = start + count;
  for (int64_t g = start >> 3; 8 * g < end; ++g) {
    const int lo = static_cast<int>(std::max<int64_t>(start - 8 * g, 0));
    const int hi = static_cast<int>(std::min<int64_t>(end - 8 * g, 8));
    if (lo == 0 && hi == 8) fn(g, std::integral_constant<int, 0>(), std::integral_constant<int, 8>());
    else fn(g, lo, hi);
  }
}

// out[i - start] = w'[i] for i in [start, start + count).
SMEZO_CPU_CLONES
void read_range(const ParamInfo& info, const float* w, float scale, uint64_t seed, int64_t start,
                int64_t count, float* out) {
  for_each_group(start, count, [&](int64_t g, auto lo, auto hi) {
    float v[8], z[8];
    bool keep[8];
    for (int j = 0; j < 8; ++j) v[j] = (j >= lo && j < hi) ? w[8 * g + j] : 0.0f;
    group_noise(info, seed, g, v, z, keep);
    for (int j = lo; j < hi; ++j) out[8 * g + j - start] = perturbed_value(v[j], z[j], scale, keep[j]);
  });
}

// read_range at +scale into out_plus and at -scale into out_minus, z generated once.
SMEZO_CPU_CLONES
void read_range_pair(const ParamInfo& info, const float* w, float scale, uint64_t seed, int64_t start,
                     int64_t count, float* out_plus, float* out_minus) {
  for_each_group(start, count, [&](int64_t g, auto lo, auto hi) {
    float v[8], z[8];
    bool keep[8];
    for (int j = 0; j < 8; ++j) v[j] = (j >= lo && j < hi) ? w[8 * g + j] : 0.0f;
    group_noise(info, seed, g, v, z, keep);
    for (int j = lo; j < hi; ++j) {
      out_plus[8 * g + j - start] = perturbed_value(v[j], z[j], scale, keep[j]);
      out_minus[8 * g + j - start] = perturbed_value(v[j], z[j], -scale, keep[j]);
    }
  });
}

// w[i] <- update of w[i] for i in [start, start + count).
SMEZO_CPU_CLONES
void update_range(const ParamInfo& info, float* w, float coef, float decay, uint64_t seed,
                  int64_t start, int64_t count) {
  for_each_group(start, count, [&](int64_t g, auto lo, auto hi) {
    float v[8], z[8];
    bool keep[8];
    for (int j = 0; j < 8; ++j) v[j] = (j >= lo && j < hi) ? w[8 * g + j] : 0.0f;
    group_noise(info, seed, g, v, z, keep);
    for (int j = lo; j < hi; ++j) {
      const float w1 = updated_value(v[j], z[j], coef, keep[j]);
      w[8 * g + j] = keep[j] ? fp_fma(-decay, v[j], w1) : w1;
    }
  });
}

// fn(chunk_start, chunk_count) over [start, start + count): serially for small ranges or
// inside a parallel region, else over the cores in chunks whose inner boundaries are
// multiples of 8 (so no Philox group is split, though splitting would not change any bit).
template <typename Fn>
void for_each_chunk(int64_t start, int64_t count, Fn fn) {
  if (count < kParallelMin || omp_in_parallel()) {
    fn(start, count);
    return;
  }
  const int64_t first = (start / kChunk + 1) * kChunk;  // first inner boundary
  const int64_t n_inner = (start + count - first + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = -1; c < n_inner; ++c) {
    const int64_t lo = c < 0 ? start : first + c * kChunk;
    const int64_t hi = c < 0 ? first : std::min(first + (c + 1) * kChunk, start + count);
    fn(lo, hi - lo);
  }
}

}  // namespace

void cpu_read_param(const Param& p, const Probe& probe, int64_t start, int64_t count, float* out) {
  const float* w = p.w.f32();
  if (probe.scale == 0.0f || !p.info.trainable) {
    std::copy(w + start, w + start + count, out);
    return;
  }
  for_each_chunk(start, count, [&](int64_t lo, int64_t n) {
    read_range(p.info, w, probe.scale, probe.seed, lo, n, out + (lo - start));
  });
}

void cpu_read_param_pair(const Param& p, const Probe& pair, int64_t start, int64_t count, float* out_plus,
                         float* out_minus) {
  const float* w = p.w.f32();
  if (pair.scale == 0.0f || !p.info.trainable) {
    std::copy(w + start, w + start + count, out_plus);
    std::copy(w + start, w + start + count, out_minus);
    return;
  }
  for_each_chunk(start, count, [&](int64_t lo, int64_t n) {
    read_range_pair(p.info, w, pair.scale, pair.seed, lo, n, out_plus + (lo - start), out_minus + (lo - start));
  });
}

void CpuBackend::update(Param& p, float coef, float decay, uint64_t seed) {
  if (!p.info.trainable) return;
  float* w = p.w.f32();
  for_each_chunk(0, p.w.numel(), [&](int64_t lo, int64_t n) {
    update_range(p.info, w, coef, decay, seed, lo, n);
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
