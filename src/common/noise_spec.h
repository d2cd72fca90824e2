// The noise spec: the single source of truth for every random number smezo draws.
// z, the R-MeZO mask and stochastic-rounding bits are pure functions of (seed, tensor id, element
// index, stream, noise kind). g++ and nvcc compile this header and must agree BIT FOR BIT
// (tests/test_noise*.cpp, tests/test_noise_cuda.cu). Seed logs record the kind and NOISE_SPEC_VERSION.
// 1. Generator: Philox4x32-10 (Salmon et al., SC'11), identical to cuRAND's
//    curand_Philox4x32_10(uint4 c, uint2 k) with c = {x,y,z,w} = ctr[0..3], k = {x,y} = key[0..1].
//    Multipliers 0xD2511F53 (on ctr[0]), 0xCD9E8D57 (on ctr[2]), Weyl key increments 0x9E3779B9,
//    0xBB67AE85, 10 rounds, the key bumped between rounds (9 bumps); a round is
//      (hi0,lo0) = M0*c0, (hi1,lo1) = M1*c2  ->  c = {hi1^c1^k0, lo1, hi0^c3^k1, lo0}
//    Known answers (Random123 kat_vectors): ctr 0 0 0 0, key 0 0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8
//      ctr ffffffff x4, key ffffffff x2     -> 408f276d 41c83b0e a20bc7c6 6d5451fd
//      ctr 243f6a88 85a308d3 13198a2e 03707344, key a4093822 299f31d0
//                                           -> d16cfe09 94fdcceb 5001e420 24126ea1
//    10 rounds, not BigCrush's minimum of 7: the paper's margin and the cuRAND identity.
// 2. Mapping. key = (seed & 0xffffffff, seed >> 32); a call is identified by a 64-bit group:
//      counter = (group & 0xffffffff, group >> 32, tensor_id, stream).
//    Streams (NoiseStream): 0 = z, 1 = R-MeZO mask, 2 = stochastic rounding.
//    Element i (int64, >= 0) reads:
//      z, kind gaussian-v1:           group i / 4, word i % 4          (4 elements per call)
//      z, kinds gaussian, rademacher: group i / 8, word (i % 8) / 2, half i % 2 (8 per call)
//      z, kind sign:                  group i / 128, word (i % 128) / 32, bit i % 32 (128 per call)
//      R-MeZO mask, rounding bits:    group i / 4, word i % 4          (all versions)
// 3. Uniforms from a 32-bit word x (both exact in float):
//      open uniform  u  = ((x >> 8) | 1) * 2^-24  in [2^-24, 1 - 2^-24]   (gaussian-v1)
//      uniform01     v  =  (x >> 8)      * 2^-24  in [0, 1 - 2^-24]      (masks, rounding)
//    u is the midpoint ((x >> 9) + 0.5) * 2^-23 of a 2^23-cell grid; ((x >> 8) + 0.5f) * 2^-24
//    would NOT be exact (25 bits for k >= 2^23; rounds to u = 1 at the top).
// 4. gaussian-v1 (spec v1, frozen: old runs replay with it). Words (0,1) and (2,3) each make a
//    Box-Muller pair (xa, xb): r = sqrt(-2 ln ua), n_a = r cos(2 pi ub), n_b = r sin(2 pi ub);
//    4 normals per call (noise_normal4), |z| <= sqrt(48 ln 2) = 5.77.
// 5. Arithmetic. Only correctly rounded (nearest even) binary32 +, -, *, /, sqrt, fma and exact
//    integer/bit operations; never libm/CUDA logf, sinf, cosf (they differ). Spelled fp_add ...
//    fp_fma: __fadd_rn ... __fmaf_rn on the device, so nvcc can neither
//    contract a*b+c nor apply -use_fast_math; plain operators on the host (-ffp-contract=off, SSE
//    math) and std::fma(float), correctly rounded with or without FMA hardware.
//    gaussian-v1's ln u (noise_log): u = 2^e * m with m in [sqrt(1/2), sqrt(2)) (exact bit split),
//          f = m - 1 (exact), s = f/(2+f), w = s*s, ln m = 2 atanh(s) = 2s + s*R with
//          R = w*(2/3 + 2w/5 + 2w^2/7 + 2w^3/9) (truncation < 3e-9 relative), evaluated as
//          ln u = e*ln2_hi - ((f^2/2 - (s*(f^2/2 + R) + e*ln2_lo)) - f), ln2_hi = 355/512
//          (e*ln2_hi exact), ln2_lo = float(ln2 - 355/512). The exact f carries the value.
//    sin/cos(2 pi u) (noise_sincos_2pi): u = j * 2^-24 with integer j, reduced EXACTLY in
//          integers: q = round(j / 2^22) (quadrant), f = (j - q*2^22) * 2^-22 in [-1/2, 1/2],
//          angle = q*pi/2 + (pi/2)*f; sin((pi/2) f) = f*S(f^2) (Taylor to f^9), cos((pi/2) f)
//          = C(f^2) (Taylor to f^10), float coefficients; the quadrant swaps/negates (exact).
//    Errors vs double (tests/test_noise.cpp): log <= 0.84 ulp, sin/cos <= 8.8e-8 abs, normals
//          <= 6.8e-7 abs (tested bound 2e-6). Never build device code with -use_fast_math /
//    -ftz=true: flushing subnormal inputs (e.g. a weight in perturbed_value) breaks host bit-equality.
// 6. Masks (mask_keep): MASK_DENSE -> keep; MASK_MAGNITUDE -> |w| <= threshold (current w;
//    NaN never kept); MASK_RANDOM -> uniform01 of word i%4 of Philox(key = mask_seed,
//    counter = (group lo, group hi, tensor_id, NOISE_STREAM_RMEZO_MASK)) < keep_prob.
// 7. Element rules (one rounding each): perturbed w' = keep ? fma(scale, z, w) : w with
//    scale = float(sigma * eps); update w_new = keep ? fma(-coef, z, w) : w with
//    coef = float(lr * g) computed once by the caller.
// 8. Dispatch: every reader of z calls noise_z8 (8 elements) or noise_z (one), or for sign the
//    call's words through noise_sign_byte (CPU ranges, the GPU's W' and update). A run uses one kind
//    (smezo/noise.h) for every tensor, probe and update, passed in ParamInfo::noise (set by
//    SpsaOptimizer) or, on the GPU, ProbeArgs::noise and the update's params.
// 9. gaussian (spec v2): one Philox call gives 8 normals; each 32-bit word x is one Box-Muller pair
//    at 16-bit resolution per half, from adds, multiplies and FMAs only (no division, sqrt,
//    int->float conversion or table: slow SFU/conversion units or divergent gathers on the GPU).
//      radius:  a = x >> 16, u = (a + 1/2) 2^-16 in [2^-17, 1 - 2^-17] (exact: the float
//               1.aaaa...a1 minus 1), r = sqrt(-2 ln u), |r| <= sqrt(34 ln 2) = 4.85.
//               -2 ln u = e*(-2 ln 2) + f*P(f) with u = 2^e (1 + f), 1 + f in
//               [sqrt(1/2), sqrt(2)) (exact bit split; e made a float by the 2^23-magic,
//               exact), P a degree-5 relative-minimax fit of -2 ln(1+f)/f (7.4e-6).
//               sqrt(X) = X * rsqrt(X), rsqrt from the estimate 0x5f3759df - (bits >> 1)
//               (< 3.5e-2) and two Newton steps y <- y (3/2 - X/2 y^2) (< 1.8e-3, < 4.7e-6).
//      angle:   the low 16 bits: bit 15 = sign of the first normal, bit 14 = sign of the
//               second, k = x & 0x3fff picks alpha = (k + 1/2) (pi/2) 2^-14 in (0, pi/2):
//               with c = (k + 1/2) 2^-14 - 1/2 (exact, |c| < 1/2) and alpha = pi/4 + c pi/2,
//               cos alpha = C - S, sin alpha = C + S where C = cos(c pi/2)/sqrt2 (degree 3
//               in c^2, 2e-8) and S = sin(c pi/2)/sqrt2 (c times degree 2 in c^2, 4e-7).
//               The sign bits make the angle the midpoint of one of 2^16 cells of the circle.
//      pair:    element 2l of the group = ±r cos alpha, element 2l+1 = ±r sin alpha (word l).
//    Why: an inverse CDF needs a log and a polynomial per normal (here one log and one sqrt serve
//    two), a single polynomial needs degree ~18 or divergent branches, a table divergent gathers.
//    16 bits cut the tails at 4.85 (P(|Z| > 4.85) = 1.2e-6; E[z^4] moves 2e-4; 12 bits: 3.5, 0.09).
//    Accuracy vs double (tests/test_noise_v2.cpp): radius < 8.3e-6 relative, direction
//    < 4.9e-7, so |z - z_exact| < 2.5e-5, far below bf16 (2^-9). Over the exact grid: variance
//    0.999991, E[z^4] 2.99977, Kolmogorov-Smirnov distance to N(0,1) 6e-7.
// 10. rademacher (spec v2): z = -1 if the top bit of the element's 16-bit half is set (bit 31 of
//    word (i%8)/2 for even i, bit 15 for odd i), else +1; same key, counter and stream as the
//    Gaussian kinds, as an ALTERNATIVE to them, not another draw.
// 11. Stochastic rounding to bf16 (an option of the update): bf16_round_stochastic below.
// 12. sign (spec v3): z = -1 if bit i % 32 (0 = least significant) of word (i % 128) / 32 of call
//    group i / 128 is set, else +1; same key, counter and stream as the other kinds (an ALTERNATIVE
//    to them). So the 8 elements of the group of eight g = i / 8 read bits 8(g % 4) .. 8(g % 4) + 7
//    of word (g % 16) / 4 of call g / 16 (noise_sign_byte): a reader of a range computes one call
//    per 128 elements. Why a new kind: rademacher (v2) uses 8 of a call's 128 bits, so Philox
//    costs it ~12 integer operations per element; here < 1. The distribution is rademacher's.
//    Applied as a sign flip: with z = ±1 the product scale*z is exact, so the element rules' one fma
//    rounding is an add's: fma(a, z, w) = fp_add(w, a with its sign flipped where z = -1) bit for
//    bit (add_sign_flipped; tests/test_noise_sign.cpp). The GPU's sign kernels add; the CPU fmas.
// Host (g++) and device (nvcc) compile the same code: no <string>, no exceptions here.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "smezo/noise.h"  // NoiseKind

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
  NOISE_STREAM_GAUSS = 0,       // z (every NoiseKind)
  NOISE_STREAM_RMEZO_MASK = 1,  // R-MeZO's random mask (keyed by the mask seed)
  NOISE_STREAM_ROUNDING = 2,    // stochastic rounding bits of the update
};

// The newest version; a seed log records the version that defines its kind (noise_spec_version_of),
// and one naming a newer version than this is refused. 1: gaussian-v1 only (logs without a version).
// 2: adds gaussian and rademacher. 3: adds sign. Masks, rounding and every older kind unchanged.
constexpr int NOISE_SPEC_VERSION = 3;

// The spec version that added `kind` (what a run of it records: older smezo replay what they know).
constexpr int noise_spec_version_of(NoiseKind kind) {
  return kind == NOISE_GAUSSIAN_V1 ? 1 : kind == NOISE_SIGN ? 3 : 2;
}

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

// ---- Philox4x32-10 (see 1.)

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

SMEZO_HD float uniform_open_from_bits(uint32_t x) {
  return fp_mul(static_cast<float>((x >> 8) | 1u), 0x1p-24f);
}
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
  // ln m = f - (hfsq - s*(hfsq + R)), hfsq = f^2/2: rounding errors stay in the small bracket.
  float r = 0x1.c71c72p-3f;                     // 2/9
  r = fp_fma(r, w, 0x1.24924ap-2f);             // 2/7
  r = fp_fma(r, w, 0x1.99999ap-2f);             // 2/5
  r = fp_fma(r, w, 0x1.555556p-1f);             // 2/3
  r = fp_mul(r, w);
  const float hfsq = fp_mul(fp_mul(0.5f, f), f);
  const float ef = static_cast<float>(e);       // exact
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

// ---- gaussian-v1 normals (see 4.)

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

SMEZO_HD float noise_uniform01(uint64_t seed, uint32_t tensor_id, int64_t index,
                               uint32_t stream) {
  uint32_t x[4];
  noise_philox4(seed, tensor_id, index >> 2, stream, x);
  return uniform01_from_bits(x[index & 3]);
}

// ---- gaussian (spec v2, see 9.)

// r = sqrt(-2 ln u) for u = ((x >> 16) + 1/2) * 2^-16, in [0.0039, 4.85].
SMEZO_HD float noise_v2_radius(uint32_t x) {
  // 1 + u is the float 1.aaaaaaaaaaaaaaaa1 (a = x >> 16, then a 1).
  const float u = fp_sub(fp_from_bits(0x3f800040u | ((x >> 9) & 0x007fff80u)), 1.0f);
  // Adding 0x3f800000 - 0x3f3504f3 carries into the exponent exactly when mantissa >= sqrt(2)'s.
  const uint32_t ix = fp_bits(u) + (0x3f800000u - 0x3f3504f3u);
  const float f = fp_sub(fp_from_bits((ix & 0x007fffffu) + 0x3f3504f3u), 1.0f);  // exact
  // e = (ix >> 23) - 127 in [-17, 0] as a float: 2^23 + (ix >> 23), minus 2^23 + 127. Exact.
  const float e = fp_sub(fp_from_bits(0x4b000000u | (ix >> 23)), 8388735.0f);
  float p = 0x1.24b3a2p-2f;
  p = fp_fma(p, f, -0x1.c3b4a2p-2f);
  p = fp_fma(p, f, 0x1.042126p-1f);
  p = fp_fma(p, f, -0x1.548feap-1f);
  p = fp_fma(p, f, 0x1.ffe65cp-1f);
  p = fp_fma(p, f, -0x1.00004cp+1f);
  const float x2 = fp_fma(e, -0x1.62e430p+0f, fp_mul(f, p));  // -2 ln u = e (-2 ln 2) + f P(f)
  const float half = fp_mul(0.5f, x2);
  float y = fp_from_bits(0x5f3759dfu - (fp_bits(x2) >> 1));
  y = fp_mul(y, fp_fma(-half, fp_mul(y, y), 1.5f));
  y = fp_mul(y, fp_fma(-half, fp_mul(y, y), 1.5f));
  return fp_mul(x2, y);
}

// cos and sin of alpha = (k + 1/2) (pi/2) 2^-14 in (0, pi/2), k = x & 0x3fff (both > 0).
SMEZO_HD void noise_v2_direction(uint32_t x, float* cos_out, float* sin_out) {
  // 1.kkkkkkkkkkkkkk1 (14 bits of k, then a 1) minus 3/2: c = (k + 1/2) 2^-14 - 1/2, exact.
  const float c = fp_sub(fp_from_bits(0x3f800100u | ((x << 9) & 0x007ffe00u)), 1.5f);
  const float w = fp_mul(c, c);
  // S = sin(c pi/2) / sqrt2, C (k here) = cos(c pi/2) / sqrt2.
  float s = 0x1.c1e5cap-5f;
  s = fp_fma(s, w, -0x1.d38ba0p-2f);
  s = fp_fma(s, w, 0x1.1c57d4p+0f);
  s = fp_mul(c, s);
  float k = -0x1.d8df08p-7f;
  k = fp_fma(k, w, 0x1.6f4004p-3f);
  k = fp_fma(k, w, -0x1.bea562p-1f);
  k = fp_fma(k, w, 0x1.6a09e6p-1f);
  *cos_out = fp_sub(k, s);  // cos(pi/4 + c pi/2) = (cos - sin)(c pi/2) / sqrt2
  *sin_out = fp_add(k, s);
}

// *n_a = ±r cos alpha (sign: bit 15), *n_b = ±r sin alpha (sign: bit 14).
SMEZO_HD void noise_v2_pair(uint32_t x, float* n_a, float* n_b) {
  const float r = noise_v2_radius(x);
  float ca, sa;
  noise_v2_direction(x, &ca, &sa);
  *n_a = fp_from_bits(fp_bits(fp_mul(r, ca)) ^ ((x << 16) & 0x80000000u));
  *n_b = fp_from_bits(fp_bits(fp_mul(r, sa)) ^ ((x << 17) & 0x80000000u));
}

// The eight normals of elements 8*group8 .. 8*group8+7.
SMEZO_HD void noise_gaussian8(uint64_t seed, uint32_t tensor_id, int64_t group8, float out[8]) {
  uint32_t x[4];
  noise_philox4(seed, tensor_id, group8, NOISE_STREAM_GAUSS, x);
  for (int l = 0; l < 4; ++l) noise_v2_pair(x[l], &out[2 * l], &out[2 * l + 1]);
}

// ---- rademacher (spec v2, see 10.)

// ±1 from the top bit of the element's half of its word (half 0: bits 31..16, 1: 15..0).
SMEZO_HD float rademacher_from_half(uint32_t x, int half) {
  return fp_from_bits(0x3f800000u | ((x << (16 * half)) & 0x80000000u));  // 1.0f, signed
}

SMEZO_HD void noise_rademacher8(uint64_t seed, uint32_t tensor_id, int64_t group8, float out[8]) {
  uint32_t x[4];
  noise_philox4(seed, tensor_id, group8, NOISE_STREAM_GAUSS, x);
  for (int j = 0; j < 8; ++j) out[j] = rademacher_from_half(x[j >> 1], j & 1);
}

// ---- sign (spec v3, see 12.)

// The 8 sign bits (bit l: element 8*group8 + l) of group8 among the words x of its call group8 / 16.
SMEZO_HD uint32_t noise_sign_byte(const uint32_t x[4], int64_t group8) {
  const int word = static_cast<int>((group8 >> 2) & 3);
  const uint32_t xw = word == 0 ? x[0] : word == 1 ? x[1] : word == 2 ? x[2] : x[3];
  return (xw >> (8 * (group8 & 3))) & 0xffu;
}

// ±1.0f: -1 when `bit` (0 or 1) is 1.
SMEZO_HD float sign_from_bit(uint32_t bit) { return fp_from_bits(0x3f800000u | (bit << 31)); }

// z of elements 8*group8 .. 8*group8+7 from the words x of their call (group8 / 16).
SMEZO_HD void noise_sign8_of_words(const uint32_t x[4], int64_t group8, float z[8]) {
  const uint32_t byte = noise_sign_byte(x, group8);
  for (int l = 0; l < 8; ++l) z[l] = sign_from_bit((byte >> l) & 1u);
}

// fp_fma(a, sign_from_bit(bit), w), computed as the add it equals (see 12.).
SMEZO_HD float add_sign_flipped(float w, float a, uint32_t bit) {
  return fp_add(w, fp_from_bits(fp_bits(a) ^ (bit << 31)));
}

// ---- the dispatch (see 8.): every reader of z calls these two

// z of elements 8*group8 .. 8*group8+7 of the parameter `tensor_id` in step `seed`.
SMEZO_HD void noise_z8(NoiseKind kind, uint64_t seed, uint32_t tensor_id, int64_t group8,
                       float z[8]) {
  switch (kind) {
    case NOISE_GAUSSIAN_V1:
      noise_normal4(seed, tensor_id, 2 * group8, NOISE_STREAM_GAUSS, z);
      noise_normal4(seed, tensor_id, 2 * group8 + 1, NOISE_STREAM_GAUSS, z + 4);
      return;
    case NOISE_RADEMACHER:
      noise_rademacher8(seed, tensor_id, group8, z);
      return;
    case NOISE_SIGN: {
      uint32_t x[4];
      noise_philox4(seed, tensor_id, group8 >> 4, NOISE_STREAM_GAUSS, x);
      noise_sign8_of_words(x, group8, z);
      return;
    }
    default:  // NOISE_GAUSSIAN (NOISE_AUTO is resolved to a kind before any parameter sees it)
      noise_gaussian8(seed, tensor_id, group8, z);
      return;
  }
}

// z of element `index` (>= 0). Computes the element's Philox call and its pair only.
SMEZO_HD float noise_z(NoiseKind kind, uint64_t seed, uint32_t tensor_id, int64_t index) {
  if (kind == NOISE_GAUSSIAN_V1) return noise_normal(seed, tensor_id, index, NOISE_STREAM_GAUSS);
  uint32_t x[4];
  if (kind == NOISE_SIGN) {
    noise_philox4(seed, tensor_id, index >> 7, NOISE_STREAM_GAUSS, x);
    return sign_from_bit((noise_sign_byte(x, index >> 3) >> (index & 7)) & 1u);
  }
  noise_philox4(seed, tensor_id, index >> 3, NOISE_STREAM_GAUSS, x);
  const int word = static_cast<int>((index >> 1) & 3), half = static_cast<int>(index & 1);
  const uint32_t xw = word == 0 ? x[0] : word == 1 ? x[1] : word == 2 ? x[2] : x[3];
  if (kind == NOISE_RADEMACHER) return rademacher_from_half(xw, half);
  float na, nb;
  noise_v2_pair(xw, &na, &nb);
  return half ? nb : na;
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

// keep[l] = mask_keep(kind, w[l], ..., 4*group + l), l = 0..3, with ONE Philox call for MASK_RANDOM.
SMEZO_HD void mask_keep_group4(MaskKind kind, const float w[4], float threshold, float keep_prob,
                               uint64_t mask_seed, uint32_t tensor_id, int64_t group,
                               bool keep[4]) {
  if (kind == MASK_RANDOM) {
    uint32_t x[4];
    noise_philox4(mask_seed, tensor_id, group, NOISE_STREAM_RMEZO_MASK, x);
    for (int l = 0; l < 4; ++l) keep[l] = uniform01_from_bits(x[l]) < keep_prob;
  } else if (kind == MASK_MAGNITUDE) {
    for (int l = 0; l < 4; ++l) keep[l] = fp_abs(w[l]) <= threshold;
  } else {
    for (int l = 0; l < 4; ++l) keep[l] = true;
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

// ---- Stochastic rounding to bf16. Bits of element i: top half of word i % 4 of Philox(key = step
// seed, group i / 4, stream 2). Adding r in [0, 2^16) to the 16 dropped bits and truncating rounds
// up with probability (dropped bits) / 2^16: exact in expectation. Inf and NaN kept (NaN quiet).
SMEZO_HD uint32_t noise_rounding_bits(uint64_t seed, uint32_t tensor_id, int64_t index) {
  uint32_t x[4];
  noise_philox4(seed, tensor_id, index >> 2, NOISE_STREAM_ROUNDING, x);
  return x[index & 3] >> 16;
}

// The rounding bits of elements 4*group .. 4*group+3 (one Philox call).
SMEZO_HD void noise_rounding_bits4(uint64_t seed, uint32_t tensor_id, int64_t group,
                                   uint32_t out[4]) {
  noise_philox4(seed, tensor_id, group, NOISE_STREAM_ROUNDING, out);
  for (int l = 0; l < 4; ++l) out[l] >>= 16;
}

SMEZO_HD uint16_t bf16_round_stochastic(float x, uint32_t r16) {
  const uint32_t u = fp_bits(x);
  if ((u & 0x7f800000u) == 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | ((u & 0x007fffffu) ? 0x0040u : 0u));
  return static_cast<uint16_t>((u + (r16 & 0xffffu)) >> 16);
}

}  // namespace smezo
