// CPU reference: causal GQA attention (sliding window), per query row; a (sequence, head) per thread.
#include <cmath>
#include <cstring>
#include <vector>

#include "common/check.h"
#include "cpu/cpu_backend.h"

namespace smezo {

namespace {

// Four floats in one vector register (lane-wise IEEE arithmetic: every sum's order is as written).
typedef float f32x4 __attribute__((vector_size(16)));
f32x4 load4(const float* p) {
  f32x4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void store4(float* p, f32x4 v) { std::memcpy(p, &v, sizeof v); }

// a · b with eight partial sums (lane j: elements d ≡ j mod 8, in order) added in a fixed tree.
float dot(const float* a, const float* b, int64_t n) {
  f32x4 lo = {0.0f, 0.0f, 0.0f, 0.0f}, hi = lo;
  int64_t d = 0;
  for (; d + 8 <= n; d += 8) {
    lo += load4(a + d) * load4(b + d);
    hi += load4(a + d + 4) * load4(b + d + 4);
  }
  float acc[8];
  store4(acc, lo);
  store4(acc + 4, hi);
  for (int j = 0; d < n; d++, j++) acc[j] += a[d] * b[d];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// o[d] = sum over t < count (in order) of w[t] * v_t[d], v_t = v + t * stride, d < n; 16 at a time.
void weighted_sum(float* o, const float* w, int64_t count, const float* v, int64_t stride, int64_t n) {
  int64_t d0 = 0;
  for (; d0 + 16 <= n; d0 += 16) {
    f32x4 c0 = {0.0f, 0.0f, 0.0f, 0.0f}, c1 = c0, c2 = c0, c3 = c0;
    for (int64_t t = 0; t < count; t++) {
      const f32x4 a = {w[t], w[t], w[t], w[t]};
      const float* vt = v + t * stride + d0;
      c0 += a * load4(vt);
      c1 += a * load4(vt + 4);
      c2 += a * load4(vt + 8);
      c3 += a * load4(vt + 12);
    }
    store4(o + d0, c0);
    store4(o + d0 + 4, c1);
    store4(o + d0 + 8, c2);
    store4(o + d0 + 12, c3);
  }
  for (int64_t d = d0; d < n; d++) {
    float c = 0.0f;
    for (int64_t t = 0; t < count; t++) c += w[t] * v[t * stride + d];
    o[d] = c;
  }
}

}  // namespace

void CpuBackend::attention(const AttentionParams& p) {
  const int64_t hd = p.head_dim;
  const int64_t group = p.n_heads / p.n_kv_heads;  // query heads per key/value head
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t qs = p.q.cols, ks = p.k.cols, vs = p.v.cols, os = p.out.cols;
  int64_t cycles = 0;  // ~ a cycle per key element touched, ~30 per score
  for (const AttentionSeq& seq : p.seqs) {
    SMEZO_REQUIRE(seq.q_len <= seq.kv_len, "attention: more queries than keys");
    cycles += seq.q_len * seq.kv_len * p.n_heads * (hd + 30);
  }
  const int64_t n_items = static_cast<int64_t>(p.seqs.size()) * p.n_heads;
#pragma omp parallel if (cpu_parallel_worth(cycles))
  {
    std::vector<float> scores;
    // dynamic: items differ in length; which thread runs an item does not change its result
#pragma omp for schedule(dynamic, 1)
    for (int64_t item = 0; item < n_items; item++) {
      const AttentionSeq& seq = p.seqs[item / p.n_heads];
      const int64_t h = item % p.n_heads, kvh = h / group;
      scores.resize(seq.kv_len);
      for (int64_t i = 0; i < seq.q_len; i++) {
        const int64_t pos = seq.kv_len - seq.q_len + i;  // absolute position of this query
        int64_t first = 0;
        if (p.sliding_window > 0 && pos - p.sliding_window + 1 > 0) first = pos - p.sliding_window + 1;
        const float* q = p.q.f32() + (seq.q_row + i) * qs + h * hd;
        float max_score = -INFINITY;
        for (int64_t t = first; t <= pos; t++) {
          const float* k = p.k.f32() + (seq.kv_row + t) * ks + kvh * hd;
          scores[t] = dot(q, k, hd) * scale;
          if (scores[t] > max_score) max_score = scores[t];
        }
        float sum = 0.0f;
        for (int64_t t = first; t <= pos; t++) {
          scores[t] = std::exp(scores[t] - max_score);
          sum += scores[t];
        }
        for (int64_t t = first; t <= pos; t++) scores[t] = scores[t] / sum;
        weighted_sum(p.out.f32() + (seq.q_row + i) * os + h * hd, scores.data() + first,
                     pos - first + 1, p.v.f32() + (seq.kv_row + first) * vs + kvh * hd, vs, hd);
      }
    }
  }
}

}  // namespace smezo
