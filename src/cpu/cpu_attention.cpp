// CPU reference: rotary embeddings and causal grouped-query attention (optional sliding
// window), one query row at a time: scores, softmax, weighted sum of values.
#include <cmath>
#include <vector>

#include "common/check.h"
#include "cpu/cpu_backend.h"

namespace smezo {

void CpuBackend::rope(const Tensor& x, const std::vector<int32_t>& positions, int64_t n_heads,
                      int64_t head_dim, float theta, RopeStyle style) {
  SMEZO_REQUIRE(x.cols == n_heads * head_dim && head_dim % 2 == 0, "rope: bad shape");
  const int64_t half = head_dim / 2;
  for (int64_t m = 0; m < x.rows; m++) {
    const float pos = static_cast<float>(positions[m]);
    for (int64_t h = 0; h < n_heads; h++) {
      float* v = x.f32() + m * x.cols + h * head_dim;
      for (int64_t j = 0; j < half; j++) {
        float freq = 1.0f / std::pow(theta, static_cast<float>(2 * j) / static_cast<float>(head_dim));
        float angle = pos * freq;
        float c = std::cos(angle), s = std::sin(angle);
        int64_t a = style == ROPE_INTERLEAVED ? 2 * j : j;
        int64_t b = style == ROPE_INTERLEAVED ? 2 * j + 1 : j + half;
        float v0 = v[a], v1 = v[b];
        v[a] = v0 * c - v1 * s;
        v[b] = v0 * s + v1 * c;
      }
    }
  }
}

void CpuBackend::attention(const AttentionParams& p) {
  const int64_t hd = p.head_dim;
  const int64_t group = p.n_heads / p.n_kv_heads;  // query heads per key/value head
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t qs = p.q.cols, ks = p.k.cols, vs = p.v.cols, os = p.out.cols;
  std::vector<float> scores;
  for (const AttentionSeq& seq : p.seqs) {
    SMEZO_REQUIRE(seq.q_len <= seq.kv_len, "attention: more queries than keys");
    scores.resize(seq.kv_len);
    for (int64_t i = 0; i < seq.q_len; i++) {
      const int64_t pos = seq.kv_len - seq.q_len + i;  // absolute position of this query
      int64_t first = 0;
      if (p.sliding_window > 0 && pos - p.sliding_window + 1 > 0) first = pos - p.sliding_window + 1;
      for (int64_t h = 0; h < p.n_heads; h++) {
        const float* q = p.q.f32() + (seq.q_row + i) * qs + h * hd;
        const int64_t kvh = h / group;
        float max_score = -INFINITY;
        for (int64_t t = first; t <= pos; t++) {
          const float* k = p.k.f32() + (seq.kv_row + t) * ks + kvh * hd;
          float dot = 0.0f;
          for (int64_t d = 0; d < hd; d++) dot += q[d] * k[d];
          scores[t] = dot * scale;
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
          const float a = scores[t] / sum;
          const float* v = p.v.f32() + (seq.kv_row + t) * vs + kvh * hd;
          for (int64_t d = 0; d < hd; d++) o[d] += a * v[d];
        }
      }
    }
  }
}

}  // namespace smezo
