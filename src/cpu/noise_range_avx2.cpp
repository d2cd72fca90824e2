// The AVX2 CPU noise loops: noise_range_simd.h over the operations below, 8 lanes (AVX2+FMA attributes).
#include "cpu/noise_path.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <algorithm>

#include "common/noise_spec.h"

#define NOISE_SIMD_TARGET __attribute__((target("avx2,fma")))
#define NOISE_SIMD_INLINE __attribute__((target("avx2,fma"), always_inline)) inline

namespace smezo {
namespace noise_avx2 {

using F = __m256;
using I = __m256i;
using M = __m256;  // a lane's bits: all ones for true
constexpr int kLanes = 8;
constexpr int kChains = 8;  // Philox registers of z per step (noise_range_simd.h): 8 measured ~15% faster than 4

// ---- vector operations (the names noise_range_simd.h uses)

NOISE_SIMD_INLINE I i_set1(uint32_t a) { return _mm256_set1_epi32(static_cast<int>(a)); }
NOISE_SIMD_INLINE I i_load(const uint32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const I*>(p)); }
NOISE_SIMD_INLINE I i_add(I a, I b) { return _mm256_add_epi32(a, b); }
NOISE_SIMD_INLINE I i_sub(I a, I b) { return _mm256_sub_epi32(a, b); }
NOISE_SIMD_INLINE I i_and(I a, I b) { return _mm256_and_si256(a, b); }
NOISE_SIMD_INLINE I i_or(I a, I b) { return _mm256_or_si256(a, b); }
NOISE_SIMD_INLINE I i_xor(I a, I b) { return _mm256_xor_si256(a, b); }
template <int N>
NOISE_SIMD_INLINE I i_srl(I a) { return _mm256_srli_epi32(a, N); }
template <int N>
NOISE_SIMD_INLINE I i_sll(I a) { return _mm256_slli_epi32(a, N); }
NOISE_SIMD_INLINE I i_sllv(I a, I count) { return _mm256_sllv_epi32(a, count); }  // per lane
NOISE_SIMD_INLINE I i_lane_index() { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
NOISE_SIMD_INLINE M i_gt(I a, I b) { return _mm256_castsi256_ps(_mm256_cmpgt_epi32(a, b)); }  // signed
NOISE_SIMD_INLINE I i_select(M m, I a, I b) {
  return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(b), _mm256_castsi256_ps(a), m));
}

NOISE_SIMD_INLINE F f_set1(float a) { return _mm256_set1_ps(a); }
NOISE_SIMD_INLINE F f_add(F a, F b) { return _mm256_add_ps(a, b); }
NOISE_SIMD_INLINE F f_sub(F a, F b) { return _mm256_sub_ps(a, b); }
NOISE_SIMD_INLINE F f_mul(F a, F b) { return _mm256_mul_ps(a, b); }
NOISE_SIMD_INLINE F f_div(F a, F b) { return _mm256_div_ps(a, b); }
NOISE_SIMD_INLINE F f_sqrt(F a) { return _mm256_sqrt_ps(a); }
NOISE_SIMD_INLINE F f_fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
NOISE_SIMD_INLINE F f_from_bits(I a) { return _mm256_castsi256_ps(a); }
NOISE_SIMD_INLINE I f_bits(F a) { return _mm256_castps_si256(a); }
NOISE_SIMD_INLINE F f_from_int(I a) { return _mm256_cvtepi32_ps(a); }  // exact below 2^24
NOISE_SIMD_INLINE M f_lt(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
NOISE_SIMD_INLINE M f_le(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
NOISE_SIMD_INLINE F f_select(M m, F a, F b) { return _mm256_blendv_ps(b, a, m); }
NOISE_SIMD_INLINE M m_all() { return _mm256_castsi256_ps(_mm256_set1_epi32(-1)); }
NOISE_SIMD_INLINE F f_load(const float* p) { return _mm256_loadu_ps(p); }
NOISE_SIMD_INLINE void f_store(float* p, F a) { _mm256_storeu_ps(p, a); }

// ---- Philox4x32-10 on 2 calls: lanes 4j..4j+3 hold call j's counter words 0..3 (see 1.)

// Round key {k0, 0, k1, 0} in every call.
NOISE_SIMD_INLINE I philox_key(uint32_t k0, uint32_t k1) {
  return _mm256_setr_epi32(static_cast<int>(k0), 0, static_cast<int>(k1), 0, static_cast<int>(k0), 0,
                           static_cast<int>(k1), 0);
}

// c = {hi1^c1^k0, lo1, hi0^c3^k1, lo0} from (hi0,lo0) = M0*c0, (hi1,lo1) = M1*c2.
NOISE_SIMD_INLINE I philox_round(I c, I key) {
  const I mult = _mm256_setr_epi32(static_cast<int>(PHILOX_M0), 0, static_cast<int>(PHILOX_M1), 0,
                                   static_cast<int>(PHILOX_M0), 0, static_cast<int>(PHILOX_M1), 0);
  const I prod = _mm256_mul_epu32(c, mult);                     // {lo0, hi0, lo1, hi1}
  const I swapped = _mm256_shuffle_epi32(prod, _MM_SHUFFLE(0, 1, 2, 3));  // {hi1, lo1, hi0, lo0}
  const I odd = _mm256_shuffle_epi32(c, _MM_SHUFFLE(3, 3, 1, 1));        // {c1, c1, c3, c3}
  const I odd_even = _mm256_blend_epi32(odd, _mm256_setzero_si256(), 0xaa);  // {c1, 0, c3, 0}
  return _mm256_xor_si256(_mm256_xor_si256(swapped, odd_even), key);
}

// The counters of calls 0..1 of (tensor_id, stream): {j, 0, tensor_id, stream} in call j.
NOISE_SIMD_INLINE I philox_counter_base(uint32_t tensor_id, uint32_t stream) {
  const long long ts = static_cast<long long>((static_cast<uint64_t>(stream) << 32) | tensor_id);
  return _mm256_set_epi64x(ts, 1, ts, 0);
}

// The counters of calls first .. first + 1: the 64-bit group added to words 0-1 (with carry).
NOISE_SIMD_INLINE I philox_counter(I base, int64_t first) {
  const I group = _mm256_blend_epi32(_mm256_setzero_si256(), _mm256_set1_epi64x(first), 0x33);
  return _mm256_add_epi64(base, group);
}

// Elements 0..7 and 8..15 of 2 calls' groups of 8 from the pairs' halves (lane l: elements 2l, 2l+1).
NOISE_SIMD_INLINE void pairs_to_elements(F first, F second, F* e0, F* e1) {
  const F lo = _mm256_unpacklo_ps(first, second);  // call j: elements 0..3
  const F hi = _mm256_unpackhi_ps(first, second);  // call j: elements 4..7
  *e0 = _mm256_permute2f128_ps(lo, hi, 0x20);
  *e1 = _mm256_permute2f128_ps(lo, hi, 0x31);
}

// gaussian-v1: words 0, 2 (even) and 1, 3 (odd) of calls a_j, b_j: {a0, a2, b0, b2}, {a1, a3, b1, b3}.
NOISE_SIMD_INLINE void split_words(I a, I b, I* even, I* odd) {
  const F fa = _mm256_castsi256_ps(a), fb = _mm256_castsi256_ps(b);
  *even = _mm256_castps_si256(_mm256_shuffle_ps(fa, fb, _MM_SHUFFLE(2, 0, 2, 0)));
  *odd = _mm256_castps_si256(_mm256_shuffle_ps(fa, fb, _MM_SHUFFLE(3, 1, 3, 1)));
}

// ... and back: the 4 elements of calls a_j (into e0) and b_j (into e1) from the pairs' halves.
NOISE_SIMD_INLINE void pairs_to_calls(F first, F second, F* e0, F* e1) {
  *e0 = _mm256_unpacklo_ps(first, second);
  *e1 = _mm256_unpackhi_ps(first, second);
}

#include "cpu/noise_range_simd.h"

}  // namespace noise_avx2

const NoiseRangeFns* noise_range_avx2() { return &noise_avx2::kFns; }

}  // namespace smezo

#else

namespace smezo {
const NoiseRangeFns* noise_range_avx2() { return nullptr; }
}  // namespace smezo

#endif
