// The SPSA update of one group of 8 stored elements (noise_spec.h 7.; CpuBackend::update's rule with
// explicit FMAs), shared by update_kernel (cuda/optimizer.cu) and the fold's W' kernel (cuda/linear.cu)
// so that both store the same bits. Include from .cu files only.
#pragma once

#include <cuda_bf16.h>

#include <cstring>
#include <type_traits>

#include "common/check.h"
#include "device_utils.cuh"

namespace smezo {

// One update: W <- W - coef·m(W)⊙z(seed) - decay·m(W)⊙W (Backend::update's arguments).
struct UpdateRule {
  float coef = 0.0f;   // lr * g
  float decay = 0.0f;  // lr * weight_decay, or 0
  uint64_t seed = 0;   // the probe's seed: of z, and of the stochastic-rounding bits
};

// What every update of one tensor shares.
struct UpdateTensor {
  NoiseKind noise = NOISE_GAUSSIAN;  // the run's z (ParamInfo::noise)
  MaskArgs mask;
  bool stochastic_rounding = false;  // bf16 only: kept entries round stochastically
};

inline UpdateTensor update_tensor(const Param& p) {
  SMEZO_REQUIRE(!(p.info.stochastic_rounding && p.w.dtype == DTYPE_F16),
                "stochastic rounding is implemented for bf16 storage; %s is stored as F16 "
                "---> HINT: use --dtype bf16 or drop --stochastic-rounding", p.info.name.c_str());
  UpdateTensor t;
  t.noise = p.info.noise;
  t.mask = mask_args(p.info);
  t.stochastic_rounding = p.info.stochastic_rounding && p.w.dtype == DTYPE_BF16;
  return t;
}

// Elements i .. i+3 of p as stored, one vector access when aligned; entries >= n read as 0.
template <typename T>
__device__ __forceinline__ void load4_stored(const T* p, int64_t i, int64_t n, T s[4]) {
  if (i + 3 < n && reinterpret_cast<uintptr_t>(p + i) % sizeof(Raw4<T>) == 0) {
    const Raw4<T> raw = *reinterpret_cast<const Raw4<T>*>(p + i);
    memcpy(s, &raw, sizeof raw);
  } else {
#pragma unroll
    for (int l = 0; l < 4; ++l) s[l] = i + l < n ? p[i + l] : from_float<T>(0.0f);
  }
}

// Entries below n of i .. i+3 as stored.
template <typename T>
__device__ __forceinline__ void store4_stored(T* p, int64_t i, int64_t n, const T s[4]) {
  if (i + 3 < n && reinterpret_cast<uintptr_t>(p + i) % sizeof(Raw4<T>) == 0) {
    Raw4<T> raw;
    memcpy(&raw, s, sizeof raw);
    *reinterpret_cast<Raw4<T>*>(p + i) = raw;
  } else {
#pragma unroll
    for (int l = 0; l < 4; ++l)
      if (i + l < n) p[i + l] = s[l];
  }
}

// Elements i0 .. i0+7: s as stored, v = to_float(s).
template <typename T>
__device__ __forceinline__ void load8_stored(const T* w, int64_t i0, int64_t n, T s[8], float v[8]) {
  load4_stored(w, i0, n, s);
  load4_stored(w, i0 + 4, n, s + 4);
#pragma unroll
  for (int l = 0; l < 8; ++l) v[l] = to_float(s[l]);
}

template <typename T>
__device__ __forceinline__ void store8_stored(T* w, int64_t i0, int64_t n, const T s[8]) {
  store4_stored(w, i0, n, s);
  store4_stored(w, i0 + 4, n, s + 4);
}

// Update u of the tensor's group g on its stored values s (v = to_float(s)): the mask from v, then
// per kept entry w1 = fma(-coef, z, w), w_new = fma(-decay, w, w1), rounded to nearest even (every
// entry), or stochastically to bf16 (kept entries; the others keep their bits). s and v become the
// stored result. Returns false, changing nothing, when no entry is kept (nothing to store).
template <typename T>
__device__ __forceinline__ bool update_group8(const UpdateTensor& t, const UpdateRule& u, int64_t g, T s[8],
                                              float v[8]) {
  bool keep[8];
  if (!mask_keep8(t.mask, v, g, keep)) return false;
  float z[8];
  noise_z8(t.noise, u.seed, t.mask.tensor_id, g, z);
#pragma unroll
  for (int l = 0; l < 8; ++l) {
    const float w1 = updated_value(v[l], z[l], u.coef, keep[l]);
    v[l] = keep[l] ? fp_fma(-u.decay, v[l], w1) : w1;
  }
  if constexpr (std::is_same<T, __nv_bfloat16>::value) {
    if (t.stochastic_rounding) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (!(keep[4 * h] || keep[4 * h + 1] || keep[4 * h + 2] || keep[4 * h + 3])) continue;
        uint32_t r[4];  // the rounding bits of elements 8g + 4h .. 8g + 4h + 3 (one Philox call)
        noise_rounding_bits4(u.seed, t.mask.tensor_id, 2 * g + h, r);
#pragma unroll
        for (int l = 0; l < 4; ++l)
          if (keep[4 * h + l]) s[4 * h + l] = __ushort_as_bfloat16(bf16_round_stochastic(v[4 * h + l], r[l]));
      }
#pragma unroll
      for (int l = 0; l < 8; ++l) v[l] = to_float(s[l]);
      return true;
    }
  }
#pragma unroll
  for (int l = 0; l < 8; ++l) {
    s[l] = from_float<T>(v[l]);
    v[l] = to_float(s[l]);
  }
  return true;
}

}  // namespace smezo
