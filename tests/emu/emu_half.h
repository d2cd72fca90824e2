// Emulated CUDA: __half and __nv_bfloat16 (cuda_fp16.h / cuda_bf16.h) with the conversions the
// GPU performs: float -> 16 bits rounds to nearest even (cvt.rn), NaN becomes the canonical
// 0x7fff, overflow becomes infinity; 16 bits -> float is exact. Written from the IEEE 754
// binary16 / bfloat16 definitions, independently of the project's src/common/half.h, so that
// the CUDA-vs-CPU tests compare two implementations. No half arithmetic operators (the
// project converts to float); add them here, with their rounding, when code needs them.
#pragma once

#include <cstdint>
#include <cstring>

#include "emu_types.h"  // emu::f32_bits

namespace emu {

// Round the 24-bit significand `sig` right by `drop` bits (1..31), to nearest, ties to even.
inline uint32_t round_right_even(uint32_t sig, int drop) {
  if (drop >= 32) return 0;
  const uint32_t q = sig >> drop;
  const uint32_t rem = sig & ((1u << drop) - 1u);
  const uint32_t half = 1u << (drop - 1);
  return (rem > half || (rem == half && (q & 1u))) ? q + 1u : q;
}

inline uint16_t f32_to_f16_rn(float f) {
  const uint32_t x = f32_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return 0x7fffu;                 // NaN: canonical
  if (ax == 0x7f800000u) return sign | 0x7c00u;          // infinity
  const int e = static_cast<int>(ax >> 23);              // biased binary32 exponent
  if (e < 102) return sign;                              // below half the smallest subnormal
  const uint32_t sig = (ax & 0x7fffffu) | 0x800000u;     // e >= 102 > 0: normal input
  const int half_exp = e - 127 + 15;
  if (half_exp >= 31) return sign | 0x7c00u;
  if (half_exp >= 1)  // normal: keep 11 significant bits; a carry moves into the exponent
    return static_cast<uint16_t>(sign | ((static_cast<uint32_t>(half_exp - 1) << 10) +
                                         round_right_even(sig, 13)));
  return static_cast<uint16_t>(sign | round_right_even(sig, 126 - e));  // subnormal (may round up to the smallest normal)
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
    return f32_from_bits(f32_bits(v) | sign);
  }
  if (e == 31) return f32_from_bits(sign | 0x7f800000u | (m << 13));
  return f32_from_bits(sign | ((e - 15 + 127) << 23) | (m << 13));
}

inline uint16_t f32_to_bf16_rn(float f) {
  const uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;  // NaN: canonical
  const uint32_t lower = x & 0xffffu, upper = x >> 16;
  const bool up = lower > 0x8000u || (lower == 0x8000u && (upper & 1u));
  return static_cast<uint16_t>(upper + (up ? 1u : 0u));  // a carry into the exponent is right
}

inline float bf16_to_f32(uint16_t b) { return f32_from_bits(static_cast<uint32_t>(b) << 16); }

}  // namespace emu

struct __half {
  unsigned short __x;
  __half() = default;
  __half(float f) : __x(emu::f32_to_f16_rn(f)) {}
  operator float() const { return emu::f16_to_f32(__x); }
};

struct __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : __x(emu::f32_to_bf16_rn(f)) {}
  operator float() const { return emu::bf16_to_f32(__x); }
};

inline __half __float2half_rn(float f) { __half h; h.__x = emu::f32_to_f16_rn(f); return h; }
inline __half __float2half(float f) { return __float2half_rn(f); }
inline float __half2float(__half h) { return emu::f16_to_f32(h.__x); }
inline __half __ushort_as_half(unsigned short u) { __half h; h.__x = u; return h; }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }

inline __nv_bfloat16 __float2bfloat16_rn(float f) { __nv_bfloat16 b; b.__x = emu::f32_to_bf16_rn(f); return b; }
inline __nv_bfloat16 __float2bfloat16(float f) { return __float2bfloat16_rn(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return emu::bf16_to_f32(b.__x); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { __nv_bfloat16 b; b.__x = u; return b; }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
