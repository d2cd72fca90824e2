// The noise spec: the single source of truth for every random number smezo draws.
//
// z, the R-MeZO mask and stochastic-rounding bits are pure functions of (seed, tensor id,
// element index, stream). This header defines them once; the CPU reference (g++) and the
// CUDA kernels (nvcc) both include it and must agree BIT FOR BIT (the GPU update is checked
// against the CPU update exactly). tests/test_noise.cpp and tests/test_noise_cuda.cu pin it.
//
// 1. Generator: Philox4x32-10 (Salmon, Moraes, Dror, Shaw, SC'11), identical to cuRAND's
//    device function curand_Philox4x32_10(uint4 c, uint2 k) with c = {x,y,z,w} = ctr[0..3]
//    and k = {x,y} = key[0..1]. Multipliers 0xD2511F53 (on ctr[0]), 0xCD9E8D57 (on ctr[2]),
//    Weyl key increments 0x9E3779B9, 0xBB67AE85, 10 rounds; one round is
//      (hi0,lo0) = M0*c0, (hi1,lo1) = M1*c2  ->  c = {hi1^c1^k0, lo1, hi0^c3^k1, lo0}
//    and the key is bumped between rounds (9 bumps). Known answers (Random123 kat_vectors):
//      ctr 0 0 0 0, key 0 0                 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8
//      ctr ffffffff x4, key ffffffff x2     -> 408f276d 41c83b0e a20bc7c6 6d5451fd
//      ctr 243f6a88 85a308d3 13198a2e 03707344, key a4093822 299f31d0
//                                           -> d16cfe09 94fdcceb 5001e420 24126ea1
//
// 2. Mapping. key = (seed & 0xffffffff, seed >> 32); for element index i >= 0 (int64):
//      group = i / 4,  counter = (group & 0xffffffff, group >> 32, tensor_id, stream),
//    and element i takes lane (word) i % 4 of that call. Streams (NoiseStream) separate
//    the uses: 0 = Gaussian/Rademacher z, 1 = R-MeZO mask, 2 = stochastic rounding.
//
// 3. Uniforms from a 32-bit word x (both exact in float, no rounding at all):
//      open uniform  u  = ((x >> 8) | 1) * 2^-24  in [2^-24, 1 - 2^-24]   (Box-Muller)
//      uniform01     v  =  (x >> 8)      * 2^-24  in [0, 1 - 2^-24]      (masks, rounding)
//    The open uniform is the top 24 bits with the last forced to 1, i.e. the midpoint
//    ((x >> 9) + 0.5) * 2^-23 of a 2^23-cell grid. (((x >> 8) + 0.5f) * 2^-24 would NOT be
//    exact: k + 0.5 needs 25 bits for k >= 2^23, and rounds to u = 1 at the top.)
//
// 4. Box-Muller. Lanes (0,1) and lanes (2,3) each make a pair: from words (xa, xb),
//      r = sqrt(-2 ln ua),  n_a = r * cos(2 pi ub),  n_b = r * sin(2 pi ub),
//    so one Philox call gives 4 standard normals (noise_normal4); |z| <= sqrt(48 ln 2) = 5.77.
//
// 5. Arithmetic. Only IEEE-754 binary32 operations that are correctly rounded (round to
//    nearest even) on both compilers are used: +, -, *, /, sqrt, fused multiply-add, plus
//    exact integer/bit operations. libm/CUDA logf, sinf, cosf are NOT used (they differ).
//    Every operation is spelled with fp_add/fp_sub/fp_mul/fp_div/fp_sqrt/fp_fma (macros
//    SMZ_ADD ... SMZ_FMA): on the device they are __fadd_rn, __fmul_rn, ..., __fmaf_rn, so
//    nvcc can neither contract a*b+c into an FMA nor apply -use_fast_math to them; on the
//    host they are plain operators (the Makefile builds with -ffp-contract=off, SSE math)
//    and std::fma(float), which is correctly rounded.
//    ln u  (noise_log): u = 2^e * m with m in [sqrt(1/2), sqrt(2)) (exact bit split),
//          f = m - 1 (exact), s = f/(2+f), w = s*s, ln m = 2 atanh(s) = 2s + s*R with
//          R = w*(2/3 + 2w/5 + 2w^2/7 + 2w^3/9) (truncation < 3e-9 relative), evaluated as
//          ln u = e*ln2_hi - ((f^2/2 - (s*(f^2/2 + R) + e*ln2_lo)) - f), ln2_hi = 355/512
//          (e*ln2_hi exact), ln2_lo = float(ln2 - 355/512). The exact f carries the value.
//    sin/cos(2 pi u) (noise_sincos_2pi): u = j * 2^-24 with integer j, reduced EXACTLY in
//          integers: q = round(j / 2^22) (quadrant), f = (j - q*2^22) * 2^-22 in [-1/2, 1/2],
//          angle = q*pi/2 + (pi/2)*f; sin((pi/2) f) = f*S(f^2) (Taylor to f^9),
//          cos((pi/2) f) = C(f^2) (Taylor to f^10), coefficients rounded to float; then the
//          quadrant swaps/negates (exact).
//    Measured (tests/test_noise.cpp, against double std::log/sin/cos over every input the
//          spec can produce): noise_log max 0.84 ulp (relative 8.0e-8); sin/cos(2 pi u) max
//          abs error 8.8e-8; normals max abs error 6.8e-7 over 2e6 random pairs plus the
//          extremes (tested bound 2e-6).
//    Do not build device code with -use_fast_math / -ftz=true: flushing subnormal inputs
//    (e.g. a subnormal weight in perturbed_value) would break bit-equality with the host.
//
// 6. Masks (mask_keep): MASK_DENSE -> keep; MASK_MAGNITUDE -> |w| <= threshold (from the
//    current w; NaN is never kept); MASK_RANDOM -> uniform01 of lane i%4 of
//    Philox(key = mask_seed, counter = (group lo, group hi, tensor_id, NOISE_STREAM_RMEZO_MASK))
//    is < keep_prob (keep_prob 1 keeps all, 0 keeps none).
//
// 7. Element rules (one rounding each, fma): perturbed w' = keep ? fma(scale, z, w) : w with
//    scale = float(sigma * eps); update w_new = keep ? fma(-coef, z, w) : w with
//    coef = float(lr * g) computed once by the caller.
//
// 8. Rademacher option (noise_rademacher): z = -1 if bit 31 of the lane word is set, else +1,
//    same key/counter/lane layout and stream NOISE_STREAM_GAUSS as the Gaussian. It is an
//    ALTERNATIVE to the Gaussian (a run uses one or the other), not an independent draw.
//
// Host (g++) and device (nvcc) compile the same code: no <string>, no exceptions here.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#ifndef SMEZO_HD
#if defined(__CUDACC__)
#define SMEZO_HD __host__ __device__ __forceinline__
#else
#define SMEZO_HD inline
#endif
#endif

namespace smezo {

// Which entries of a parameter the optimiser perturbs and updates.
enum MaskKind {
  MASK_DENSE,      // every entry (MeZO; embeddings, norms and biases in every method)
  MASK_MAGNITUDE,  // S-MeZO: entries with |w| <= threshold, recomputed from the current w
  MASK_RANDOM,     // R-MeZO: a fixed random subset with probability keep_prob, regenerated
};

// The fourth counter word: which use a Philox call serves.
enum NoiseStream {
  NOISE_STREAM_GAUSS = 0,       // z (Gaussian by Box-Muller, or Rademacher)
  NOISE_STREAM_RMEZO_MASK = 1,  // R-MeZO's random mask (keyed by the mask seed)
  NOISE_STREAM_ROUNDING = 2,    // stochastic rounding bits of the update
};

constexpr uint32_t PHILOX_M0 = 0xD2511F53u;
constexpr uint32_t PHILOX_M1 = 0xCD9E8D57u;
constexpr uint32_t PHILOX_W0 = 0x9E3779B9u;
constexpr uint32_t PHILOX_W1 = 0xBB67AE85u;

// ---- exactly rounded float operations (see 5.)

SMEZO_HD float fp_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
SMEZO_HD float fp_sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
SMEZO_HD float fp_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
SMEZO_HD float fp_div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
SMEZO_HD float fp_sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
// a * b + c with a single rounding.
SMEZO_HD float fp_fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
SMEZO_HD uint32_t fp_bits(float a) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(a);
#else
  uint32_t u;
  std::memcpy(&u, &a, sizeof u);
  return u;
#endif
}
SMEZO_HD float fp_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float a;
  std::memcpy(&a, &u, sizeof a);
  return a;
#endif
}

SMEZO_HD float fp_abs(float a) {
#if defined(__CUDA_ARCH__)
  return fabsf(a);
#else
  return std::fabs(a);
#endif
}

#define SMZ_ADD(a, b) ::smezo::fp_add((a), (b))
#define SMZ_SUB(a, b) ::smezo::fp_sub((a), (b))
#define SMZ_MUL(a, b) ::smezo::fp_mul((a), (b))
#define SMZ_DIV(a, b) ::smezo::fp_div((a), (b))
#define SMZ_SQRT(a) ::smezo::fp_sqrt((a))
#define SMZ_FMA(a, b, c) ::smezo::fp_fma((a), (b), (c))

// ---- Philox4x32-10 (see 1.)

// High 32 bits of the 64-bit product a*b.
SMEZO_HD uint32_t mulhi32(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

SMEZO_HD void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    const uint32_t hi0 = mulhi32(PHILOX_M0, c0), lo0 = PHILOX_M0 * c0;
    const uint32_t hi1 = mulhi32(PHILOX_M1, c2), lo1 = PHILOX_M1 * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

// The four words of group `group` (elements 4*group .. 4*group+3) of (seed, tensor, stream).
SMEZO_HD void noise_philox4(uint64_t seed, uint32_t tensor_id, int64_t group, uint32_t stream,
                            uint32_t out[4]) {
  const uint64_t g = static_cast<uint64_t>(group);
  const uint32_t ctr[4] = {static_cast<uint32_t>(g), static_cast<uint32_t>(g >> 32), tensor_id,
                           stream};
  const uint32_t key[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  philox4x32_10(ctr, key, out);
}

// ---- uniforms (see 3.)

// [2^-24, 1 - 2^-24], exact: ((x >> 8) | 1) * 2^-24.
SMEZO_HD float uniform_open_from_bits(uint32_t x) {
  return fp_mul(static_cast<float>((x >> 8) | 1u), 0x1p-24f);
}
// [0, 1 - 2^-24], exact: (x >> 8) * 2^-24.
SMEZO_HD float uniform01_from_bits(uint32_t x) {
  return fp_mul(static_cast<float>(x >> 8), 0x1p-24f);
}

// ---- elementary functions from exact operations (see 5.)

// Natural log of a positive normal float u (u in [2^-126, FLT_MAX]); about 1 ulp.
SMEZO_HD float noise_log(float u) {
  const uint32_t bits = fp_bits(u);
  int32_t e = static_cast<int32_t>(bits >> 23) - 127;
  uint32_t mbits = (bits & 0x007FFFFFu) | 0x3F800000u;  // m in [1, 2)
  if (mbits > 0x3FB504F3u) {                            // m > sqrt(2): use m/2, e+1
    mbits -= 0x00800000u;
    e += 1;
  }
  const float m = fp_from_bits(mbits);          // [sqrt(1/2), sqrt(2))
  const float f = fp_sub(m, 1.0f);              // exact (Sterbenz); ln m = ln(1 + f)
  const float s = fp_div(f, fp_add(m, 1.0f));   // s = f / (2 + f), |s| <= 0.1716
  const float w = fp_mul(s, s);
  // 2 atanh(s) = 2s + s*R with R = w*(2/3 + 2w/5 + 2w^2/7 + 2w^3/9); and 2s = f - hfsq + s*hfsq
  // (hfsq = f^2/2), so ln m = f - (hfsq - s*(hfsq + R)): the exact f carries the result and
  // the rounding errors stay in the small bracket.
  float r = 0x1.c71c72p-3f;                     // 2/9
  r = fp_fma(r, w, 0x1.24924ap-2f);             // 2/7
  r = fp_fma(r, w, 0x1.99999ap-2f);             // 2/5
  r = fp_fma(r, w, 0x1.555556p-1f);             // 2/3
  r = fp_mul(r, w);
  const float hfsq = fp_mul(fp_mul(0.5f, f), f);
  const float ef = static_cast<float>(e);       // exact
  // ln u = e*ln2_hi - ((hfsq - (s*(hfsq + R) + e*ln2_lo)) - f)
  const float t = fp_fma(s, fp_add(hfsq, r), fp_mul(ef, -0x1.bd0106p-13f));  // ln2_lo
  const float inner = fp_sub(fp_sub(hfsq, t), f);
  return fp_fma(ef, 0x1.63p-1f, -inner);        // ln2_hi = 355/512: e*ln2_hi is exact
}

// sin and cos of 2*pi*j*2^-24 for an integer j in [0, 2^24); abs error about 1e-7.
SMEZO_HD void noise_sincos_2pi(uint32_t j, float* sin_out, float* cos_out) {
  const uint32_t q = (j + (1u << 21)) >> 22;  // nearest quarter turn, 0..4
  const int32_t fi = static_cast<int32_t>(j) - static_cast<int32_t>(q << 22);  // |fi| <= 2^21
  const float f = fp_mul(static_cast<float>(fi), 0x1p-22f);  // exact, [-1/2, 1/2]
  const float w = fp_mul(f, f);
  // sin(pi/2 f) / f and cos(pi/2 f): Taylor coefficients of (pi/2)^n / n!, rounded to float.
  float sp = 0x1.507834p-13f;
  sp = fp_fma(sp, w, -0x1.32d2ccp-8f);
  sp = fp_fma(sp, w, 0x1.466bc6p-4f);
  sp = fp_fma(sp, w, -0x1.4abbcep-1f);
  sp = fp_fma(sp, w, 0x1.921fb6p+0f);
  const float sn = fp_mul(f, sp);
  float cp = -0x1.a6d1f2p-16f;
  cp = fp_fma(cp, w, 0x1.e1f506p-11f);
  cp = fp_fma(cp, w, -0x1.55d3c8p-6f);
  cp = fp_fma(cp, w, 0x1.03c1f0p-2f);
  cp = fp_fma(cp, w, -0x1.3bd3ccp+0f);
  const float cs = fp_fma(cp, w, 1.0f);
  switch (q & 3u) {
    case 0: *sin_out = sn; *cos_out = cs; break;
    case 1: *sin_out = cs; *cos_out = -sn; break;
    case 2: *sin_out = -sn; *cos_out = -cs; break;
    default: *sin_out = -cs; *cos_out = sn; break;
  }
}

// ---- normals (see 4.)

// Box-Muller on two Philox words: *n_a = r cos(2 pi ub), *n_b = r sin(2 pi ub).
SMEZO_HD void noise_box_muller(uint32_t xa, uint32_t xb, float* n_a, float* n_b) {
  const float ua = uniform_open_from_bits(xa);
  const float r = fp_sqrt(fp_mul(-2.0f, noise_log(ua)));
  float sn, cs;
  noise_sincos_2pi((xb >> 8) | 1u, &sn, &cs);  // ub = ((xb >> 8) | 1) * 2^-24
  *n_a = fp_mul(r, cs);
  *n_b = fp_mul(r, sn);
}

// The four standard normals of elements 4*group .. 4*group+3.
SMEZO_HD void noise_normal4(uint64_t seed, uint32_t tensor_id, int64_t group, uint32_t stream,
                            float out[4]) {
  uint32_t x[4];
  noise_philox4(seed, tensor_id, group, stream, x);
  noise_box_muller(x[0], x[1], &out[0], &out[1]);
  noise_box_muller(x[2], x[3], &out[2], &out[3]);
}

// The standard normal of element `index` (>= 0). Computes its whole Box-Muller pair.
SMEZO_HD float noise_normal(uint64_t seed, uint32_t tensor_id, int64_t index, uint32_t stream) {
  uint32_t x[4];
  noise_philox4(seed, tensor_id, index >> 2, stream, x);
  const int lane = static_cast<int>(index & 3);
  float na, nb;
  if (lane < 2) {
    noise_box_muller(x[0], x[1], &na, &nb);
  } else {
    noise_box_muller(x[2], x[3], &na, &nb);
  }
  return (lane & 1) ? nb : na;
}

// uniform01 of element `index` in `stream`.
SMEZO_HD float noise_uniform01(uint64_t seed, uint32_t tensor_id, int64_t index,
                               uint32_t stream) {
  uint32_t x[4];
  noise_philox4(seed, tensor_id, index >> 2, stream, x);
  return uniform01_from_bits(x[index & 3]);
}

// ---- Rademacher option (see 8.)

SMEZO_HD float rademacher_from_bits(uint32_t x) { return (x >> 31) ? -1.0f : 1.0f; }

SMEZO_HD void noise_rademacher4(uint64_t seed, uint32_t tensor_id, int64_t group, float out[4]) {
  uint32_t x[4];
  noise_philox4(seed, tensor_id, group, NOISE_STREAM_GAUSS, x);
  for (int l = 0; l < 4; ++l) out[l] = rademacher_from_bits(x[l]);
}

SMEZO_HD float noise_rademacher(uint64_t seed, uint32_t tensor_id, int64_t index) {
  uint32_t x[4];
  noise_philox4(seed, tensor_id, index >> 2, NOISE_STREAM_GAUSS, x);
  return rademacher_from_bits(x[index & 3]);
}

// ---- masks and element rules (see 6., 7.)

SMEZO_HD bool mask_keep(MaskKind kind, float w, float threshold, float keep_prob,
                        uint64_t mask_seed, uint32_t tensor_id, int64_t index) {
  switch (kind) {
    case MASK_MAGNITUDE:
      return fp_abs(w) <= threshold;
    case MASK_RANDOM:
      return noise_uniform01(mask_seed, tensor_id, index, NOISE_STREAM_RMEZO_MASK) < keep_prob;
    default:
      return true;
  }
}

// w + scale*z for kept entries (scale = float(sigma * eps)), one rounding.
SMEZO_HD float perturbed_value(float w, float z, float scale, bool keep) {
  return keep ? fp_fma(scale, z, w) : w;
}

// w - coef*z for kept entries (coef = float(lr * g), computed once by the caller).
SMEZO_HD float updated_value(float w, float z, float coef, bool keep) {
  return keep ? fp_fma(-coef, z, w) : w;
}

// ---- Stochastic rounding of updated weights to bf16 storage (an option of the update).
// The 16 random bits of element `index` are the top half of lane index % 4 of
// Philox(key = step seed, counter = (index / 4, tensor_id, NOISE_STREAM_ROUNDING)).
// bf16 keeps the top 16 bits of a float: adding r (uniform in [0, 2^16)) to the 16 dropped
// bits and truncating rounds the magnitude up with probability (dropped bits) / 2^16, so the
// stored value equals x in expectation; infinities and NaN are kept (NaN stays quiet).
SMEZO_HD uint32_t noise_rounding_bits(uint64_t seed, uint32_t tensor_id, int64_t index) {
  uint32_t x[4];
  noise_philox4(seed, tensor_id, index >> 2, NOISE_STREAM_ROUNDING, x);
  return x[index & 3] >> 16;
}

SMEZO_HD uint16_t bf16_round_stochastic(float x, uint32_t r16) {
  const uint32_t u = fp_bits(x);
  if ((u & 0x7f800000u) == 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | ((u & 0x007fffffu) ? 0x0040u : 0u));
  return static_cast<uint16_t>((u + (r16 & 0xffffu)) >> 16);
}

}  // namespace smezo
