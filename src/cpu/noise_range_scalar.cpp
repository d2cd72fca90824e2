// The portable CPU noise loops, the vector paths' reference; target_clones builds them for FMA hardware
// and baseline x86-64 (std::fma a libm call): both correctly rounded, so the same bits.
#include <algorithm>
#include <type_traits>

#include "common/noise_spec.h"
#include "cpu/noise_path.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SMEZO_CPU_CLONES __attribute__((flatten, target_clones("fma", "default")))
#else
#define SMEZO_CPU_CLONES
#endif

namespace smezo {

namespace {

// The Philox words of the sign kind's last call (12.): a range's 16 groups of 8 per call share them.
struct SignWords {
  int64_t call = -1;
  uint32_t x[4] = {};
};

// z and keep flags of group8's 8 elements; w8: their values in the caller's range (0 elsewhere).
inline void group_noise(const ParamInfo& info, uint64_t seed, int64_t group8, const float w8[8],
                        float z[8], bool keep[8], SignWords* sign) {
  if (info.noise == NOISE_SIGN) {
    if (sign->call != group8 >> 4) {
      sign->call = group8 >> 4;
      noise_philox4(seed, info.tensor_id, sign->call, NOISE_STREAM_GAUSS, sign->x);
    }
    noise_sign8_of_words(sign->x, group8, z);
  } else {
    noise_z8(info.noise, seed, info.tensor_id, group8, z);
  }
  mask_keep_group4(info.mask, w8, info.threshold, info.keep_prob, info.mask_seed, info.tensor_id,
                   2 * group8, keep);
  mask_keep_group4(info.mask, w8 + 4, info.threshold, info.keep_prob, info.mask_seed,
                   info.tensor_id, 2 * group8 + 1, keep + 4);
}

// fn(group8, lo, hi, v, z, keep) for each group of 8 the range touches, [lo, hi) in range (v 0 outside).
template <typename Fn>
inline void for_each_noise_group(const ParamInfo& info, const float* w, uint64_t seed, int64_t start,
                                 int64_t count, Fn fn) {
  SignWords sign;
  auto group = [&](int64_t g, auto lo, auto hi) {
    float v[8], z[8];
    bool keep[8];
    for (int j = 0; j < 8; ++j) v[j] = (j >= lo && j < hi) ? w[8 * g + j] : 0.0f;
    group_noise(info, seed, g, v, z, keep, &sign);
    fn(g, lo, hi, v, z, keep);
  };
  const int64_t end = start + count;
  for (int64_t g = start >> 3; 8 * g < end; ++g) {
    const int lo = static_cast<int>(std::max<int64_t>(start - 8 * g, 0));
    const int hi = static_cast<int>(std::min<int64_t>(end - 8 * g, 8));
    if (lo == 0 && hi == 8) group(g, std::integral_constant<int, 0>(), std::integral_constant<int, 8>());
    else group(g, lo, hi);
  }
}

// out[i - start] = w'[i] for i in [start, start + count).
SMEZO_CPU_CLONES
void read_range(const ParamInfo& info, const float* w, float scale, uint64_t seed, int64_t start,
                int64_t count, float* out) {
  for_each_noise_group(info, w, seed, start, count, [&](int64_t g, auto lo, auto hi, const float* v,
                                                        const float* z, const bool* keep) {
    for (int j = lo; j < hi; ++j) out[8 * g + j - start] = perturbed_value(v[j], z[j], scale, keep[j]);
  });
}

// read_range at +scale into out_plus and at -scale into out_minus, z generated once.
SMEZO_CPU_CLONES
void read_range_pair(const ParamInfo& info, const float* w, float scale, uint64_t seed, int64_t start,
                     int64_t count, float* out_plus, float* out_minus) {
  for_each_noise_group(info, w, seed, start, count, [&](int64_t g, auto lo, auto hi, const float* v,
                                                        const float* z, const bool* keep) {
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
  for_each_noise_group(info, w, seed, start, count, [&](int64_t g, auto lo, auto hi, const float* v,
                                                        const float* z, const bool* keep) {
    for (int j = lo; j < hi; ++j) {
      const float w1 = updated_value(v[j], z[j], coef, keep[j]);
      w[8 * g + j] = keep[j] ? fp_fma(-decay, v[j], w1) : w1;
    }
  });
}

void z_of_words(NoiseKind kind, const uint32_t* words, int64_t n_calls, float* z) {
  for (int64_t k = 0; k < n_calls; ++k) {
    const uint32_t* x = words + 4 * k;
    if (kind == NOISE_SIGN) {
      for (int g = 0; g < 16; ++g) noise_sign8_of_words(x, g, z + 128 * k + 8 * g);
      continue;
    }
    if (kind == NOISE_GAUSSIAN_V1) {
      noise_box_muller(x[0], x[1], &z[4 * k], &z[4 * k + 1]);
      noise_box_muller(x[2], x[3], &z[4 * k + 2], &z[4 * k + 3]);
      continue;
    }
    for (int l = 0; l < 4; ++l) {
      if (kind == NOISE_RADEMACHER) {
        z[8 * k + 2 * l] = rademacher_from_half(x[l], 0);
        z[8 * k + 2 * l + 1] = rademacher_from_half(x[l], 1);
      } else {
        noise_v2_pair(x[l], &z[8 * k + 2 * l], &z[8 * k + 2 * l + 1]);
      }
    }
  }
}

const NoiseRangeFns kScalar = {read_range, read_range_pair, update_range, z_of_words};

}  // namespace

const NoiseRangeFns* noise_range_scalar() { return &kScalar; }

}  // namespace smezo
