// The CPU backend's other ops after their parallel rewrite: attention against a plain double-
// precision computation, and a whole forward pass (every op) bit-identical for 1, 2 and 4
// OpenMP threads, unperturbed and under a probe.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/cpu_backend.h"
#include "model/model.h"
#include "model_fixture.h"
#include "test_util.h"

using namespace smezo;
using smezo_test::random_floats;

namespace {

// Attention of one query row in double: softmax(q·k / sqrt(hd)) · v over keys [first, pos].
void attention_row_double(const AttentionParams& p, const AttentionSeq& seq, int64_t i, int64_t h,
                          std::vector<double>* out) {
  const int64_t hd = p.head_dim, kvh = h / (p.n_heads / p.n_kv_heads);
  const int64_t pos = seq.kv_len - seq.q_len + i;
  const int64_t first = p.sliding_window > 0 ? std::max<int64_t>(0, pos - p.sliding_window + 1) : 0;
  const float* q = p.q.f32() + (seq.q_row + i) * p.q.cols + h * hd;
  std::vector<double> s;
  double mx = -INFINITY;
  for (int64_t t = first; t <= pos; t++) {
    const float* k = p.k.f32() + (seq.kv_row + t) * p.k.cols + kvh * hd;
    double d = 0.0;
    for (int64_t j = 0; j < hd; j++) d += (double)q[j] * k[j];
    s.push_back(d / std::sqrt((double)hd));
    mx = std::max(mx, s.back());
  }
  double sum = 0.0;
  for (double& v : s) sum += (v = std::exp(v - mx));
  out->assign(hd, 0.0);
  for (int64_t t = first; t <= pos; t++) {
    const float* v = p.v.f32() + (seq.kv_row + t) * p.v.cols + kvh * hd;
    for (int64_t j = 0; j < hd; j++) (*out)[j] += s[t - first] / sum * v[j];
  }
}

std::vector<float> forward_logits(int threads, float scale) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  ModelConfig c = smezo_test::tiny_llama_config();
  c.dim = 96;
  c.hidden_dim = 200;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 24;
  c.vocab_size = 300;
  c.max_seq_len = 128;
  CpuBackend be;
  Model m(smezo_test::random_weight_source(c, 17), be, DTYPE_F32, 256, 256);
  ForwardBatch b;
  for (int64_t len : {37, 50, 13}) {
    b.seq_lens.push_back(len);
    for (int64_t i = 0; i < len; i++) b.tokens.push_back((int32_t)((i * 7 + len) % c.vocab_size));
  }
  for (int64_t r = 0; r < 100; r++) b.logit_rows.push_back(r);
  std::vector<float> logits;
  m.forward(b, Probe{scale, 5}, &logits);
  omp_set_num_threads(saved);
  return logits;
}

}  // namespace

TEST(CpuOps, AttentionMatchesDoublePrecision) {
  // GQA 6 heads / 2 kv heads, head_dim 20 (not a multiple of 8); two packed sequences, and one
  // whose queries are the last rows of a longer key range (the KV-cache form); with and
  // without a sliding window. Outputs are convex combinations of values in [-1, 1), so an
  // absolute tolerance of 2e-6 is ~30 fp32 ulps of 1.
  const int64_t H = 6, KVH = 2, hd = 20, rows = 90;
  std::vector<float> q = random_floats(rows * H * hd, 1), k = random_floats(rows * KVH * hd, 2),
                     v = random_floats(rows * KVH * hd, 3);
  for (int64_t window : {0, 7}) {
    std::vector<float> out(rows * H * hd, 1e30f);
    AttentionParams p;
    auto view = [](std::vector<float>& d, int64_t cols) {
      Tensor t;
      t.data = d.data();
      t.cols = cols;
      t.rows = (int64_t)d.size() / cols;
      return t;
    };
    p.q = view(q, H * hd);
    p.k = view(k, KVH * hd);
    p.v = view(v, KVH * hd);
    p.out = view(out, H * hd);
    p.n_heads = H;
    p.n_kv_heads = KVH;
    p.head_dim = hd;
    p.sliding_window = window;
    p.seqs = {AttentionSeq{0, 40, 0, 40}, AttentionSeq{40, 30, 40, 30}, AttentionSeq{70, 20, 60, 30}};
    CpuBackend be;
    be.attention(p);
    std::vector<double> ref;
    for (const AttentionSeq& s : p.seqs)
      for (int64_t i = 0; i < s.q_len; i++)
        for (int64_t h = 0; h < H; h++) {
          attention_row_double(p, s, i, h, &ref);
          for (int64_t j = 0; j < hd; j++)
            ASSERT_NEAR(out[(s.q_row + i) * H * hd + h * hd + j], ref[j], 2e-6)
                << "window " << window << " row " << s.q_row + i << " head " << h << " dim " << j;
        }
  }
}

TEST(CpuOps, ForwardBitIdenticalForAnyThreadCount) {
  for (float scale : {0.0f, 1e-2f}) {
    const std::vector<float> one = forward_logits(1, scale);
    for (int threads : {2, 4}) {
      const std::vector<float> many = forward_logits(threads, scale);
      ASSERT_EQ(one.size(), many.size());
      EXPECT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * sizeof(float)))
          << threads << " threads, probe scale " << scale;
    }
  }
}
