// The body of the vector CPU noise loops (noise_path.h), written once over one instruction set's
// operations: included INSIDE the namespace of noise_range_avx2.cpp and noise_range_avx512.cpp, after
// their F (kLanes floats), I (kLanes uint32), M (lane mask), kChains, i_/f_ operations, Philox round
// on kLanes/4 calls per register (lanes 4j..4j+3: call j's words 0..3), shuffles pairs_to_elements,
// split_words, pairs_to_calls, i_sllv (per-lane shift), i_lane_index, and NOISE_SIMD_INLINE /
// NOISE_SIMD_TARGET. No header includes here.
// Every line is the spec's (noise_spec.h, sections named below), the same operations in the same
// order per lane (exact integer ops, correctly rounded float ops, int->float below 2^24), so each
// lane has the scalar bits (tests/test_noise_simd.cpp).
// A step makes kStep = 2 * kLanes * kChains elements from kChains registers of Philox calls (twice
// as many for gaussian-v1 and the R-MeZO mask: one call per 4 elements; sign: kStep / 128 scalar calls).
// The chains' rounds are interleaved, since one chain alone waits on its multiplications. Steps start at
// a multiple of 8 (sign: of 128, a call's elements); a step the range covers partly runs on a copy.

enum NoiseOp { NOISE_OP_READ, NOISE_OP_PAIR, NOISE_OP_UPDATE };

constexpr int kCalls = kLanes / 4;              // Philox calls per register
constexpr int kVecs = 2 * kChains;              // registers of elements per step
constexpr int kStep = kVecs * kLanes;           // elements per step: kChains * kCalls groups of 8
static_assert(kStep % 128 == 0 && 32 % kLanes == 0, "a step holds whole sign calls, a register one word's bits");

// One range's constants.
struct Ctx {
  NoiseKind noise;
  MaskKind mask;
  uint64_t seed;       // the step seed (sign: its scalar Philox calls)
  uint32_t tensor_id;
  I key_z[10];     // round keys of the step seed (z)
  I key_m[10];     // ... and of the mask seed (MASK_RANDOM)
  I counter_z;     // counters of calls 0..kCalls-1 of (tensor_id, NOISE_STREAM_GAUSS)
  I counter_m;     // ... of (tensor_id, NOISE_STREAM_RMEZO_MASK)
  F threshold;     // MASK_MAGNITUDE
  F keep_prob;     // MASK_RANDOM
  F a, b;          // read: scale, -scale; update: -coef, -decay
};

NOISE_SIMD_INLINE void philox_keys(uint64_t seed, I key[10]) {
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    key[r] = philox_key(k0, k1);
    k0 += PHILOX_W0;
    k1 += PHILOX_W1;
  }
}

// x[j] = the words of calls first + j*kCalls .. + kCalls - 1, j < N (see 1., 2.): N chains, round by round.
template <int N>
NOISE_SIMD_INLINE void philox_calls(I counter_base, const I key[10], int64_t first, I x[N]) {
#pragma GCC unroll 16
  for (int j = 0; j < N; ++j) x[j] = philox_counter(counter_base, first + j * kCalls);
#pragma GCC unroll 10
  for (int r = 0; r < 10; ++r)
#pragma GCC unroll 16
    for (int j = 0; j < N; ++j) x[j] = philox_round(x[j], key[r]);
}

NOISE_SIMD_INLINE void ctx_init(const ParamInfo& info, uint64_t seed, float a, float b, Ctx* c) {
  c->noise = info.noise;
  c->mask = info.mask;
  c->seed = seed;
  c->tensor_id = info.tensor_id;
  philox_keys(seed, c->key_z);
  philox_keys(info.mask_seed, c->key_m);
  c->counter_z = philox_counter_base(info.tensor_id, NOISE_STREAM_GAUSS);
  c->counter_m = philox_counter_base(info.tensor_id, NOISE_STREAM_RMEZO_MASK);
  c->threshold = f_set1(info.threshold);
  c->keep_prob = f_set1(info.keep_prob);
  c->a = f_set1(a);
  c->b = f_set1(b);
}

// ---- gaussian (see 9.), rademacher (see 10.)

NOISE_SIMD_INLINE F v2_radius(I x) {
  const F u = f_sub(f_from_bits(i_or(i_set1(0x3f800040u), i_and(i_srl<9>(x), i_set1(0x007fff80u)))), f_set1(1.0f));
  const I ix = i_add(f_bits(u), i_set1(0x3f800000u - 0x3f3504f3u));
  const F f = f_sub(f_from_bits(i_add(i_and(ix, i_set1(0x007fffffu)), i_set1(0x3f3504f3u))), f_set1(1.0f));
  const F e = f_sub(f_from_bits(i_or(i_set1(0x4b000000u), i_srl<23>(ix))), f_set1(8388735.0f));
  F p = f_set1(0x1.24b3a2p-2f);
  p = f_fma(p, f, f_set1(-0x1.c3b4a2p-2f));
  p = f_fma(p, f, f_set1(0x1.042126p-1f));
  p = f_fma(p, f, f_set1(-0x1.548feap-1f));
  p = f_fma(p, f, f_set1(0x1.ffe65cp-1f));
  p = f_fma(p, f, f_set1(-0x1.00004cp+1f));
  const F x2 = f_fma(e, f_set1(-0x1.62e430p+0f), f_mul(f, p));
  const F neg_half = f_from_bits(i_xor(f_bits(f_mul(f_set1(0.5f), x2)), i_set1(0x80000000u)));
  F y = f_from_bits(i_sub(i_set1(0x5f3759dfu), i_srl<1>(f_bits(x2))));
  y = f_mul(y, f_fma(neg_half, f_mul(y, y), f_set1(1.5f)));
  y = f_mul(y, f_fma(neg_half, f_mul(y, y), f_set1(1.5f)));
  return f_mul(x2, y);
}

NOISE_SIMD_INLINE void v2_direction(I x, F* cos_out, F* sin_out) {
  const F c = f_sub(f_from_bits(i_or(i_set1(0x3f800100u), i_and(i_sll<9>(x), i_set1(0x007ffe00u)))), f_set1(1.5f));
  const F w = f_mul(c, c);
  F s = f_set1(0x1.c1e5cap-5f);
  s = f_fma(s, w, f_set1(-0x1.d38ba0p-2f));
  s = f_fma(s, w, f_set1(0x1.1c57d4p+0f));
  s = f_mul(c, s);
  F k = f_set1(-0x1.d8df08p-7f);
  k = f_fma(k, w, f_set1(0x1.6f4004p-3f));
  k = f_fma(k, w, f_set1(-0x1.bea562p-1f));
  k = f_fma(k, w, f_set1(0x1.6a09e6p-1f));
  *cos_out = f_sub(k, s);
  *sin_out = f_add(k, s);
}

NOISE_SIMD_INLINE void v2_pair(I x, F* n_a, F* n_b) {
  const F r = v2_radius(x);
  F ca, sa;
  v2_direction(x, &ca, &sa);
  const I sign = i_set1(0x80000000u);
  *n_a = f_from_bits(i_xor(f_bits(f_mul(r, ca)), i_and(i_sll<16>(x), sign)));
  *n_b = f_from_bits(i_xor(f_bits(f_mul(r, sa)), i_and(i_sll<17>(x), sign)));
}

NOISE_SIMD_INLINE void rademacher_pair(I x, F* n_a, F* n_b) {
  const I one = i_set1(0x3f800000u), sign = i_set1(0x80000000u);
  *n_a = f_from_bits(i_or(one, i_and(x, sign)));
  *n_b = f_from_bits(i_or(one, i_and(i_sll<16>(x), sign)));
}

// ---- sign (see 12.)

// z of elements e0 .. e0 + kLanes - 1 of the call whose words are x (e0 a multiple of kLanes): lane l
// is ±1 by bit (e0 + l) % 32 of word e0 / 32, moved to the sign bit.
NOISE_SIMD_INLINE F sign_z(const uint32_t x[4], int e0) {
  const I shift = i_sub(i_set1(static_cast<uint32_t>(31 - (e0 & 31))), i_lane_index());
  const I bits = i_sllv(i_set1(x[e0 >> 5]), shift);
  return f_from_bits(i_or(i_set1(0x3f800000u), i_and(bits, i_set1(0x80000000u))));
}

// ---- gaussian-v1 (see 3., 4., 5.)

NOISE_SIMD_INLINE F v1_log(F u) {
  const I bits = f_bits(u);
  I e = i_sub(i_srl<23>(bits), i_set1(127));
  I mbits = i_or(i_and(bits, i_set1(0x007fffffu)), i_set1(0x3f800000u));
  const M big = i_gt(mbits, i_set1(0x3fb504f3u));
  mbits = i_select(big, i_sub(mbits, i_set1(0x00800000u)), mbits);
  e = i_select(big, i_add(e, i_set1(1)), e);
  const F m = f_from_bits(mbits);
  const F f = f_sub(m, f_set1(1.0f));
  const F s = f_div(f, f_add(m, f_set1(1.0f)));
  const F w = f_mul(s, s);
  F r = f_set1(0x1.c71c72p-3f);
  r = f_fma(r, w, f_set1(0x1.24924ap-2f));
  r = f_fma(r, w, f_set1(0x1.99999ap-2f));
  r = f_fma(r, w, f_set1(0x1.555556p-1f));
  r = f_mul(r, w);
  const F hfsq = f_mul(f_mul(f_set1(0.5f), f), f);
  const F ef = f_from_int(e);
  const F t = f_fma(s, f_add(hfsq, r), f_mul(ef, f_set1(-0x1.bd0106p-13f)));
  const F inner = f_sub(f_sub(hfsq, t), f);
  return f_fma(ef, f_set1(0x1.63p-1f), f_from_bits(i_xor(f_bits(inner), i_set1(0x80000000u))));
}

NOISE_SIMD_INLINE void v1_sincos_2pi(I j, F* sin_out, F* cos_out) {
  const I q = i_srl<22>(i_add(j, i_set1(1u << 21)));
  const I fi = i_sub(j, i_sll<22>(q));
  const F f = f_mul(f_from_int(fi), f_set1(0x1p-22f));
  const F w = f_mul(f, f);
  F sp = f_set1(0x1.507834p-13f);
  sp = f_fma(sp, w, f_set1(-0x1.32d2ccp-8f));
  sp = f_fma(sp, w, f_set1(0x1.466bc6p-4f));
  sp = f_fma(sp, w, f_set1(-0x1.4abbcep-1f));
  sp = f_fma(sp, w, f_set1(0x1.921fb6p+0f));
  const F sn = f_mul(f, sp);
  F cp = f_set1(-0x1.a6d1f2p-16f);
  cp = f_fma(cp, w, f_set1(0x1.e1f506p-11f));
  cp = f_fma(cp, w, f_set1(-0x1.55d3c8p-6f));
  cp = f_fma(cp, w, f_set1(0x1.03c1f0p-2f));
  cp = f_fma(cp, w, f_set1(-0x1.3bd3ccp+0f));
  const F cs = f_fma(cp, w, f_set1(1.0f));
  // Quadrant q & 3: odd swaps sin and cos; sin is negated in quadrants 2, 3, cos in 1, 2.
  const M odd = i_gt(i_and(q, i_set1(1)), i_set1(0));
  const I sin_sign = i_sll<30>(i_and(q, i_set1(2)));
  const I cos_sign = i_sll<31>(i_xor(q, i_srl<1>(q)));
  *sin_out = f_from_bits(i_xor(f_bits(f_select(odd, cs, sn)), sin_sign));
  *cos_out = f_from_bits(i_xor(f_bits(f_select(odd, sn, cs)), cos_sign));
}

// Box-Muller on the words (xa, xb) of each lane: r cos(2 pi ub), r sin(2 pi ub).
NOISE_SIMD_INLINE void v1_box_muller(I xa, I xb, F* n_a, F* n_b) {
  const F ua = f_mul(f_from_int(i_or(i_srl<8>(xa), i_set1(1))), f_set1(0x1p-24f));
  const F r = f_sqrt(f_mul(f_set1(-2.0f), v1_log(ua)));
  F sn, cs;
  v1_sincos_2pi(i_or(i_srl<8>(xb), i_set1(1)), &sn, &cs);
  *n_a = f_mul(r, cs);
  *n_b = f_mul(r, sn);
}

// ---- one step: z, keep flags, element rules (see 6., 7., 8.)

// z of the kCalls groups of 8 whose Philox words are x, in element order (gaussian, rademacher).
NOISE_SIMD_INLINE void z_of_groups8(NoiseKind kind, I x, F z[2]) {
  F n_a, n_b;
  if (kind == NOISE_RADEMACHER) rademacher_pair(x, &n_a, &n_b);
  else v2_pair(x, &n_a, &n_b);
  pairs_to_elements(n_a, n_b, &z[0], &z[1]);
}

// z of the 2 * kCalls groups of 4 whose Philox words are xa then xb (gaussian-v1).
NOISE_SIMD_INLINE void z_of_groups4_v1(I xa, I xb, F z[2]) {
  I even, odd;
  split_words(xa, xb, &even, &odd);
  F n_a, n_b;
  v1_box_muller(even, odd, &n_a, &n_b);
  pairs_to_calls(n_a, n_b, &z[0], &z[1]);
}

// R-MeZO keep flags of elements 8*g0 .. 8*g0 + kStep - 1, kLanes per flag register (see 6.).
NOISE_SIMD_INLINE void step_random_keep(const Ctx& c, int64_t g0, M keep[kVecs]) {
  I x[kVecs];  // calls 2*g0 ..: 4 elements each, in element order
  philox_calls<kVecs>(c.counter_m, c.key_m, 2 * g0, x);
  for (int v = 0; v < kVecs; ++v)
    keep[v] = f_lt(f_mul(f_from_int(i_srl<8>(x[v])), f_set1(0x1p-24f)), c.keep_prob);
}

// The step of group g0 on src[0 .. kStep) into d0 (d1: pair); each chain's z is used at once (registers).
template <int kOp>
NOISE_SIMD_INLINE void step_apply(const Ctx& c, int64_t g0, const float* src, float* d0, float* d1) {
  M random_keep[kVecs];
  if (c.mask == MASK_RANDOM) step_random_keep(c, g0, random_keep);
  const bool v1 = c.noise == NOISE_GAUSSIAN_V1, sign = c.noise == NOISE_SIGN;
  I x[kVecs];
  uint32_t sx[kStep / 128][4];  // sign: the step's calls (g0 is a multiple of 16)
  if (sign) {
    for (int k = 0; k < kStep / 128; ++k)
      noise_philox4(c.seed, c.tensor_id, (g0 >> 4) + k, NOISE_STREAM_GAUSS, sx[k]);
  } else if (v1) {
    philox_calls<kVecs>(c.counter_z, c.key_z, 2 * g0, x);  // 4 elements per call
  } else {
    philox_calls<kChains>(c.counter_z, c.key_z, g0, x);  // 8 elements per call
  }
  for (int j = 0; j < kChains; ++j) {
    F z[2];
    if (sign) {
      for (int h = 0; h < 2; ++h) z[h] = sign_z(sx[(2 * j + h) * kLanes / 128], (2 * j + h) * kLanes % 128);
    } else if (v1) {
      z_of_groups4_v1(x[2 * j], x[2 * j + 1], z);
    } else {
      z_of_groups8(c.noise, x[j], z);
    }
    for (int h = 0; h < 2; ++h) {
      const int v = 2 * j + h;
      const F w = f_load(src + v * kLanes);
      const M keep = c.mask == MASK_RANDOM      ? random_keep[v]
                     : c.mask == MASK_MAGNITUDE ? f_le(f_from_bits(i_and(f_bits(w), i_set1(0x7fffffffu))), c.threshold)
                                                : m_all();
      const F moved = f_select(keep, f_fma(c.a, z[h], w), w);  // perturbed / updated
      if constexpr (kOp == NOISE_OP_UPDATE) {
        f_store(d0 + v * kLanes, f_select(keep, f_fma(c.b, w, moved), moved));  // decay
      } else {
        f_store(d0 + v * kLanes, moved);
        if constexpr (kOp == NOISE_OP_PAIR) f_store(d1 + v * kLanes, f_select(keep, f_fma(c.b, z[h], w), w));
      }
    }
  }
}

// Elements [start, start + count) of w into out0[i - start] (out1: pair; update: out0 = w + start).
template <int kOp>
NOISE_SIMD_INLINE void range_run(const Ctx& c, const float* w, int64_t start, int64_t count, float* out0,
                                 float* out1) {
  const int64_t end = start + count;
  for (int64_t e0 = start & ~int64_t(c.noise == NOISE_SIGN ? 127 : 7); e0 < end; e0 += kStep) {
    if (e0 >= start && e0 + kStep <= end) {
      step_apply<kOp>(c, e0 >> 3, w + e0, out0 + (e0 - start),
                      kOp == NOISE_OP_PAIR ? out1 + (e0 - start) : nullptr);
      continue;
    }
    // A step the range covers partly: its elements in [lo, hi) go through local copies.
    const int lo = static_cast<int>(std::max<int64_t>(start - e0, 0));
    const int hi = static_cast<int>(std::min<int64_t>(end - e0, kStep));
    float src[kStep] = {}, d0[kStep], d1[kStep];
    for (int j = lo; j < hi; ++j) src[j] = w[e0 + j];
    step_apply<kOp>(c, e0 >> 3, src, d0, d1);
    for (int j = lo; j < hi; ++j) {
      out0[e0 + j - start] = d0[j];
      if constexpr (kOp == NOISE_OP_PAIR) out1[e0 + j - start] = d1[j];
    }
  }
}

// ---- the three workers (noise_path.h)

NOISE_SIMD_TARGET void read_range(const ParamInfo& info, const float* w, float scale, uint64_t seed, int64_t start,
                                  int64_t count, float* out) {
  Ctx c;
  ctx_init(info, seed, scale, -scale, &c);
  range_run<NOISE_OP_READ>(c, w, start, count, out, nullptr);
}

NOISE_SIMD_TARGET void read_range_pair(const ParamInfo& info, const float* w, float scale, uint64_t seed,
                                       int64_t start, int64_t count, float* out_plus, float* out_minus) {
  Ctx c;
  ctx_init(info, seed, scale, -scale, &c);
  range_run<NOISE_OP_PAIR>(c, w, start, count, out_plus, out_minus);
}

NOISE_SIMD_TARGET void update_range(const ParamInfo& info, float* w, float coef, float decay, uint64_t seed,
                                    int64_t start, int64_t count) {
  Ctx c;
  ctx_init(info, seed, -coef, -decay, &c);
  range_run<NOISE_OP_UPDATE>(c, w, start, count, w + start, nullptr);
}

NOISE_SIMD_TARGET void z_of_words(NoiseKind kind, const uint32_t* words, int64_t n_calls, float* z) {
  if (kind == NOISE_SIGN) {
    for (int64_t k = 0; k < n_calls; ++k)
      for (int e0 = 0; e0 < 128; e0 += kLanes) f_store(z + 128 * k + e0, sign_z(words + 4 * k, e0));
    return;
  }
  const int64_t per_call = kind == NOISE_GAUSSIAN_V1 ? 4 : 8;
  for (int64_t k = 0; k + 2 * kCalls <= n_calls; k += 2 * kCalls) {  // 2 * kCalls divides 8
    const I xa = i_load(words + 4 * k), xb = i_load(words + 4 * (k + kCalls));
    F za[2], zb[2];
    if (kind == NOISE_GAUSSIAN_V1) {
      z_of_groups4_v1(xa, xb, za);
    } else {
      z_of_groups8(kind, xa, za);
      z_of_groups8(kind, xb, zb);
      f_store(z + per_call * k + 2 * kLanes, zb[0]);
      f_store(z + per_call * k + 3 * kLanes, zb[1]);
    }
    f_store(z + per_call * k, za[0]);
    f_store(z + per_call * k + kLanes, za[1]);
  }
}

const NoiseRangeFns kFns = {read_range, read_range_pair, update_range, z_of_words};
