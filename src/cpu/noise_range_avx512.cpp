// The AVX-512 CPU noise loops: noise_range_simd.h over the operations below, 16 lanes (AVX-512F attributes).
#include "cpu/noise_path.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12 wrongly warns the intrinsics' own `__m512i __Y = __Y;` may be uninitialized (GCC bug 105593).
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>

#include "common/noise_spec.h"

#define NOISE_SIMD_TARGET __attribute__((target("avx512f")))
#define NOISE_SIMD_INLINE __attribute__((target("avx512f"), always_inline)) inline

namespace smezo {
namespace noise_avx512 {

using F = __m512;
using I = __m512i;
using M = __mmask16;  // a lane's bit: true
constexpr int kLanes = 16;
constexpr int kChains = 4;  // Philox registers of z per step (noise_range_simd.h): 8 measured no faster

// ---- vector operations (the names noise_range_simd.h uses)

NOISE_SIMD_INLINE I i_set1(uint32_t a) { return _mm512_set1_epi32(static_cast<int>(a)); }
NOISE_SIMD_INLINE I i_load(const uint32_t* p) { return _mm512_loadu_si512(p); }
NOISE_SIMD_INLINE I i_add(I a, I b) { return _mm512_add_epi32(a, b); }
NOISE_SIMD_INLINE I i_sub(I a, I b) { return _mm512_sub_epi32(a, b); }
NOISE_SIMD_INLINE I i_and(I a, I b) { return _mm512_and_si512(a, b); }
NOISE_SIMD_INLINE I i_or(I a, I b) { return _mm512_or_si512(a, b); }
NOISE_SIMD_INLINE I i_xor(I a, I b) { return _mm512_xor_si512(a, b); }
template <int N>
NOISE_SIMD_INLINE I i_srl(I a) { return _mm512_srli_epi32(a, N); }
template <int N>
NOISE_SIMD_INLINE I i_sll(I a) { return _mm512_slli_epi32(a, N); }
NOISE_SIMD_INLINE I i_sllv(I a, I count) { return _mm512_sllv_epi32(a, count); }  // per lane
NOISE_SIMD_INLINE I i_lane_index() { return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
NOISE_SIMD_INLINE M i_gt(I a, I b) { return _mm512_cmpgt_epi32_mask(a, b); }  // signed
NOISE_SIMD_INLINE I i_select(M m, I a, I b) { return _mm512_mask_blend_epi32(m, b, a); }

NOISE_SIMD_INLINE F f_set1(float a) { return _mm512_set1_ps(a); }
NOISE_SIMD_INLINE F f_add(F a, F b) { return _mm512_add_ps(a, b); }
NOISE_SIMD_INLINE F f_sub(F a, F b) { return _mm512_sub_ps(a, b); }
NOISE_SIMD_INLINE F f_mul(F a, F b) { return _mm512_mul_ps(a, b); }
NOISE_SIMD_INLINE F f_div(F a, F b) { return _mm512_div_ps(a, b); }
NOISE_SIMD_INLINE F f_sqrt(F a) { return _mm512_sqrt_ps(a); }
NOISE_SIMD_INLINE F f_fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
NOISE_SIMD_INLINE F f_from_bits(I a) { return _mm512_castsi512_ps(a); }
NOISE_SIMD_INLINE I f_bits(F a) { return _mm512_castps_si512(a); }
NOISE_SIMD_INLINE F f_from_int(I a) { return _mm512_cvtepi32_ps(a); }  // exact below 2^24
NOISE_SIMD_INLINE M f_lt(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
NOISE_SIMD_INLINE M f_le(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
NOISE_SIMD_INLINE F f_select(M m, F a, F b) { return _mm512_mask_blend_ps(m, b, a); }
NOISE_SIMD_INLINE M m_all() { return 0xffff; }
NOISE_SIMD_INLINE F f_load(const float* p) { return _mm512_loadu_ps(p); }
NOISE_SIMD_INLINE void f_store(float* p, F a) { _mm512_storeu_ps(p, a); }

// ---- Philox4x32-10 on 4 calls: lanes 4j..4j+3 hold call j's counter words 0..3 (see 1.)

// Round key {k0, 0, k1, 0} in every call.
NOISE_SIMD_INLINE I philox_key(uint32_t k0, uint32_t k1) {
  return _mm512_set4_epi32(0, static_cast<int>(k1), 0, static_cast<int>(k0));
}

// c = {hi1^c1^k0, lo1, hi0^c3^k1, lo0} from (hi0,lo0) = M0*c0, (hi1,lo1) = M1*c2.
NOISE_SIMD_INLINE I philox_round(I c, I key) {
  const I mult = _mm512_set4_epi32(0, static_cast<int>(PHILOX_M1), 0, static_cast<int>(PHILOX_M0));
  const I prod = _mm512_mul_epu32(c, mult);                          // {lo0, hi0, lo1, hi1}
  const I swapped = _mm512_shuffle_epi32(prod, _MM_PERM_ABCD);      // {hi1, lo1, hi0, lo0}
  const I odd = _mm512_shuffle_epi32(c, static_cast<_MM_PERM_ENUM>(0xf5));  // {c1, c1, c3, c3}
  return _mm512_mask_ternarylogic_epi32(swapped, 0x5555, odd, key, 0x96);  // xor where even
}

// The counters of calls 0..3 of (tensor_id, stream): {j, 0, tensor_id, stream} in call j.
NOISE_SIMD_INLINE I philox_counter_base(uint32_t tensor_id, uint32_t stream) {
  const long long ts = static_cast<long long>((static_cast<uint64_t>(stream) << 32) | tensor_id);
  return _mm512_set_epi64(ts, 3, ts, 2, ts, 1, ts, 0);
}

// The counters of calls first .. first + 3: the 64-bit group added to words 0-1 (with carry).
NOISE_SIMD_INLINE I philox_counter(I base, int64_t first) {
  return _mm512_mask_add_epi64(base, 0x55, base, _mm512_set1_epi64(first));
}

// Elements 0..15 and 16..31 of 4 calls' groups of 8 from the pairs' halves (lane l: elements 2l, 2l+1).
NOISE_SIMD_INLINE void pairs_to_elements(F first, F second, F* e0, F* e1) {
  const F lo = _mm512_unpacklo_ps(first, second);  // call j: elements 0..3
  const F hi = _mm512_unpackhi_ps(first, second);  // call j: elements 4..7
  const I idx0 = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const I idx1 = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  *e0 = _mm512_permutex2var_ps(lo, idx0, hi);
  *e1 = _mm512_permutex2var_ps(lo, idx1, hi);
}

// gaussian-v1: words 0, 2 (even) and 1, 3 (odd) of calls a_j, b_j: {a0, a2, b0, b2}, {a1, a3, b1, b3}.
NOISE_SIMD_INLINE void split_words(I a, I b, I* even, I* odd) {
  const F fa = _mm512_castsi512_ps(a), fb = _mm512_castsi512_ps(b);
  *even = _mm512_castps_si512(_mm512_shuffle_ps(fa, fb, _MM_SHUFFLE(2, 0, 2, 0)));
  *odd = _mm512_castps_si512(_mm512_shuffle_ps(fa, fb, _MM_SHUFFLE(3, 1, 3, 1)));
}

// ... and back: the 4 elements of calls a_j (into e0) and b_j (into e1) from the pairs' halves.
NOISE_SIMD_INLINE void pairs_to_calls(F first, F second, F* e0, F* e1) {
  *e0 = _mm512_unpacklo_ps(first, second);
  *e1 = _mm512_unpackhi_ps(first, second);
}

#include "cpu/noise_range_simd.h"

}  // namespace noise_avx512

const NoiseRangeFns* noise_range_avx512() { return &noise_avx512::kFns; }

}  // namespace smezo

#else

namespace smezo {
const NoiseRangeFns* noise_range_avx512() { return nullptr; }
}  // namespace smezo

#endif
