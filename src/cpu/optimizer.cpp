// CPU reference: reading a parameter under a probe, the SPSA update, the exact |W| quantile. Ranges run
// over the cores in chunks aligned to 8; elements are pure functions of their index: same bits.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/check.h"
#include "cpu/cpu_backend.h"
#include "cpu/noise_path.h"
#include "formats/packed_weights.h"

namespace smezo {

namespace {

// Elements per OpenMP work item (a multiple of 8), and the smallest range worth spreading.
constexpr int64_t kChunk = int64_t(1) << 15;
constexpr int64_t kParallelMin = int64_t(1) << 17;

// fn(chunk_start, chunk_count) over the range: serially if small or nested, else over the cores.
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

// A packed weight's values [start, start + count) (whole blocks); with --tune scales its blocks read the master
// scales through the probe (the standard read of the scales Param), one half (out_minus null) or a pair.
void read_packed(const Param& p, const Probe& probe, int64_t start, int64_t count, float* out, float* out_minus) {
  SMEZO_REQUIRE(probe.scale == 0.0f || !p.info.trainable, "%s is packed (--weights packed) and cannot be perturbed", p.info.name.c_str());
  if (!p.scales) {
    dequantize_packed(p.w, start, count, out);
    if (out_minus) std::copy(out, out + count, out_minus);
    return;
  }
  const Param& s = *p.scales;
  const int64_t bs = packed_block_size(p.w), n_blocks = s.w.cols, b0 = start / bs, nb = count / bs;
  std::vector<float> v(static_cast<size_t>(4 * nb));  // d+, m+, d-, m-
  for (int64_t r = 0; r < s.w.rows; r++) {
    if (out_minus)
      cpu_read_param_pair(s, probe, r * n_blocks + b0, nb, v.data() + r * nb, v.data() + (2 + r) * nb);
    else
      cpu_read_param(s, probe, r * n_blocks + b0, nb, v.data() + r * nb);
  }
  const bool with_m = s.w.rows == 2;
  dequantize_packed_range(p.w, start, count, out, {v.data(), with_m ? v.data() + nb : nullptr});
  if (out_minus)
    dequantize_packed_range(p.w, start, count, out_minus, {v.data() + 2 * nb, with_m ? v.data() + 3 * nb : nullptr});
}

}  // namespace

void cpu_read_param(const Param& p, const Probe& probe, int64_t start, int64_t count, float* out) {
  if (p.w.packed()) return read_packed(p, probe, start, count, out, nullptr);
  const float* w = p.w.f32();
  if (probe.scale == 0.0f || !p.info.trainable) {
    std::copy(w + start, w + start + count, out);
    return;
  }
  const NoiseRangeFns* fns = noise_path_fns(noise_path_active());
  for_each_chunk(start, count, [&](int64_t lo, int64_t n) {
    fns->read(p.info, w, probe.scale, probe.seed, lo, n, out + (lo - start));
  });
}

void cpu_read_param_pair(const Param& p, const Probe& pair, int64_t start, int64_t count, float* out_plus,
                         float* out_minus) {
  if (p.w.packed()) return read_packed(p, pair, start, count, out_plus, out_minus);
  const float* w = p.w.f32();
  if (pair.scale == 0.0f || !p.info.trainable) {
    std::copy(w + start, w + start + count, out_plus);
    std::copy(w + start, w + start + count, out_minus);
    return;
  }
  const NoiseRangeFns* fns = noise_path_fns(noise_path_active());
  for_each_chunk(start, count, [&](int64_t lo, int64_t n) {
    fns->read_pair(p.info, w, pair.scale, pair.seed, lo, n, out_plus + (lo - start), out_minus + (lo - start));
  });
}

void CpuBackend::update(Param& p, float coef, float decay, uint64_t seed) {
  held_.settle(*this, p.w);  // updates held for the fold go first
  if (!p.info.trainable) return;
  SMEZO_REQUIRE(!p.w.packed(), "update of %s, which is packed (--weights packed keeps frozen weights only)",
                p.info.name.c_str());
  float* w = p.w.f32();
  const NoiseRangeFns* fns = noise_path_fns(noise_path_active());
  for_each_chunk(0, p.w.numel(), [&](int64_t lo, int64_t n) {
    fns->update(p.info, w, coef, decay, seed, lo, n);
  });
}

float CpuBackend::abs_quantile(const Param& p, double q) {
  SMEZO_REQUIRE(q >= 0.0 && q <= 1.0, "quantile %g outside [0, 1]", q);
  const int64_t n = p.w.numel();
  SMEZO_REQUIRE(n > 0, "quantile of empty tensor %s", p.info.name.c_str());
  held_.require_none(p.w, "abs_quantile");
  std::vector<float> a(static_cast<size_t>(n));
  download(p.w, a.data());
  for (float& x : a) x = std::fabs(x);
  const int64_t k = static_cast<int64_t>(std::floor(q * static_cast<double>(n - 1)));
  std::nth_element(a.begin(), a.begin() + k, a.end());
  return a[k];
}

}  // namespace smezo
