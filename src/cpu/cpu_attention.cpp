// CPU reference: rotary embeddings and causal grouped-query attention (optional sliding
// window), one query row at a time: scores, softmax, weighted sum of values.
//
// Threads: RoPE splits rows, attention splits (sequence, head) pairs; every output is
// computed by one thread in a fixed order, so results do not depend on the thread count, and
// a query row's result depends only on its own sequence's keys and values.
#include <cmath>
#include <vector>

#include "common/check.h"
#include "cpu/cpu_backend.h"

namespace smezo {

namespace {

// a · b over n elements with eight partial sums (lane j takes the elements d ≡ j mod 8, in
// order) added in a fixed tree at the end: a fixed order the compiler can keep in vector
// registers, several times faster than one running sum.
float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  int64_t d = 0;
  for (; d + 8 <= n; d += 8)
    for (int j = 0; j < 8; j++) acc[j] += a[d + j] * b[d + j];
  for (int j = 0; d < n; d++, j++) acc[j] += a[d] * b[d];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// o += a * v over n elements
void add_scaled(float* __restrict o, float a, const float* __restrict v, int64_t n) {
#pragma omp simd
  for (int64_t d = 0; d < n; d++) o[d] += a * v[d];
}

}  // namespace

void CpuBackend::rope(const Tensor& x, const std::vector<int32_t>& positions, int64_t n_heads,
                      int64_t head_dim, float theta, RopeStyle style) {
  SMEZO_REQUIRE(x.cols == n_heads * head_dim && head_dim % 2 == 0, "rope: bad shape");
  const int64_t half = head_dim / 2;
  std::vector<float> freq(half);
  for (int64_t j = 0; j < half; j++)
    freq[j] = 1.0f / std::pow(theta, static_cast<float>(2 * j) / static_cast<float>(head_dim));
#pragma omp parallel if (cpu_parallel_worth(x.rows * (half * 60 + n_heads * head_dim * 2)))
  {
    std::vector<float> cos_t(half), sin_t(half);  // this row's rotation, shared by its heads
#pragma omp for schedule(static)
    for (int64_t m = 0; m < x.rows; m++) {
      const float pos = static_cast<float>(positions[m]);
      for (int64_t j = 0; j < half; j++) {
        const float angle = pos * freq[j];
        cos_t[j] = std::cos(angle);
        sin_t[j] = std::sin(angle);
      }
      for (int64_t h = 0; h < n_heads; h++) {
        float* v = x.f32() + m * x.cols + h * head_dim;
        for (int64_t j = 0; j < half; j++) {
          const int64_t a = style == ROPE_INTERLEAVED ? 2 * j : j;
          const int64_t b = style == ROPE_INTERLEAVED ? 2 * j + 1 : j + half;
          const float v0 = v[a], v1 = v[b];
          v[a] = v0 * cos_t[j] - v1 * sin_t[j];
          v[b] = v0 * sin_t[j] + v1 * cos_t[j];
        }
      }
    }
  }
}

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
        float* o = p.out.f32() + (seq.q_row + i) * os + h * hd;
        for (int64_t d = 0; d < hd; d++) o[d] = 0.0f;
        for (int64_t t = first; t <= pos; t++) {
          const float* v = p.v.f32() + (seq.kv_row + t) * vs + kvh * hd;
          add_scaled(o, scores[t] / sum, v, hd);
        }
      }
    }
  }
}

}  // namespace smezo
