// The model written over the CPU backend: packing, KV cache, RoPE conventions, GQA, and load
// errors. Relations between two computations of the same thing, on random weights.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <utility>

#include "common/check.h"
#include "cpu/cpu_backend.h"
#include "model/model.h"
#include "model_fixture.h"
#include "test_util.h"

using namespace smezo;
using smezo_test::logits_of;
using smezo_test::random_weight_source;
using smezo_test::tiny_llama_config;

namespace {

// Relative tolerance for two fp32 computations of the same logits in a different order.
constexpr float kTol = 2e-5f;

void expect_close(const std::vector<float>& a, const std::vector<float>& b, float tol = kTol) {
  ASSERT_EQ(a.size(), b.size());
  float max_abs = 0.0f;
  for (float x : a) max_abs = std::max(max_abs, std::fabs(x));
  for (size_t i = 0; i < a.size(); i++) ASSERT_NEAR(a[i], b[i], tol * (1.0f + max_abs)) << "at " << i;
}

}  // namespace

TEST(Model, PackedBatchEqualsSeparateSequences) {
  CpuBackend be;
  Model m(random_weight_source(tiny_llama_config(), 1), be, DTYPE_F32, 64, 64);
  std::vector<int32_t> a = {1, 5, 9, 13, 2}, b = {1, 7, 3};
  std::vector<float> la = logits_of(m, a), lb = logits_of(m, b);
  ForwardBatch packed;
  packed.tokens = {1, 5, 9, 13, 2, 1, 7, 3};
  packed.seq_lens = {5, 3};
  packed.logit_rows = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<float> lp;
  m.forward(packed, Probe{}, &lp);
  std::vector<float> expected = la;
  expected.insert(expected.end(), lb.begin(), lb.end());
  expect_close(lp, expected, 0.0f);  // same per-row arithmetic: bit-identical
}

TEST(Model, KvCacheEqualsFullForward) {
  CpuBackend be;
  Model m(random_weight_source(tiny_llama_config(), 2), be, DTYPE_F32, 64, 64);
  std::vector<int32_t> toks = {1, 4, 8, 15, 16, 23, 39};
  std::vector<float> full = logits_of(m, toks);
  m.enable_kv_cache(16);
  std::vector<float> step, prompt;
  m.forward_cached({1, 4, 8}, 0, &prompt);  // a prompt chunk, then one at a time
  std::vector<float> expected(full.begin() + 2 * 40, full.begin() + 3 * 40);
  expect_close(prompt, expected);
  for (size_t i = 3; i < toks.size(); i++) {
    m.forward_cached({toks[i]}, (int64_t)i, &step);
    expect_close(step, std::vector<float>(full.begin() + i * 40, full.begin() + (i + 1) * 40));
  }
}

// Meta's interleaved RoPE on rows permuted per head equals Hugging Face's rotate-half:
// HF's conversion moves row (2i) of each head to row i and row (2i+1) to row i + hd/2.
TEST(Model, RopeConventionsAgreeUnderHfPermutation) {
  ModelConfig c = tiny_llama_config();
  c.rope_style = ROPE_INTERLEAVED;
  WeightSource meta = random_weight_source(c, 3);
  WeightSource hf = smezo_test::hf_twin_of_interleaved(c, 3);
  CpuBackend be1, be2;
  Model m1(meta, be1, DTYPE_F32, 64, 64), m2(hf, be2, DTYPE_F32, 64, 64);
  std::vector<int32_t> toks = {1, 10, 20, 30, 5, 6, 7, 8, 9};
  expect_close(logits_of(m1, toks), logits_of(m2, toks));
}

// Grouped-query attention equals full multi-head attention with each kv head repeated.
TEST(Model, GqaEqualsRepeatedKvHeads) {
  ModelConfig c = tiny_llama_config();
  WeightSource gqa = random_weight_source(c, 4);
  ModelConfig mha_cfg = c;
  mha_cfg.n_kv_heads = c.n_heads;
  WeightSource mha = random_weight_source(mha_cfg, 4);
  // copy every tensor of gqa; k/v rows repeated per group
  const int64_t group = c.n_heads / c.n_kv_heads, hd = c.head_dim;
  for (auto& kv : mha.tensors) {
    const HostTensorView& g = gqa.tensors.at(kv.first);
    float* dst = smezo_test::mutable_tensor(mha, kv.first);
    const float* src = static_cast<const float*>(g.data);
    bool is_kv = kv.first.find("k_proj") != std::string::npos || kv.first.find("v_proj") != std::string::npos;
    if (!is_kv) {
      std::copy(src, src + g.numel(), dst);
      continue;
    }
    for (int64_t h = 0; h < c.n_heads; h++)
      for (int64_t r = 0; r < hd; r++)
        for (int64_t k = 0; k < c.dim; k++) dst[(h * hd + r) * c.dim + k] = src[((h / group) * hd + r) * c.dim + k];
  }
  CpuBackend be1, be2;
  Model m1(gqa, be1, DTYPE_F32, 64, 64), m2(mha, be2, DTYPE_F32, 64, 64);
  std::vector<int32_t> toks = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  expect_close(logits_of(m1, toks), logits_of(m2, toks));
}

// With a window longer than the sequence, sliding-window attention is plain causal attention;
// with a short window the last position's logits change.
TEST(Model, SlidingWindow) {
  ModelConfig c = tiny_llama_config();
  c.family = "mistral";
  std::vector<int32_t> toks = {1, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  CpuBackend be1, be2, be3;
  Model full(random_weight_source(c, 5), be1, DTYPE_F32, 64, 64);
  c.sliding_window = 64;
  Model wide(random_weight_source(c, 5), be2, DTYPE_F32, 64, 64);
  c.sliding_window = 3;
  Model narrow(random_weight_source(c, 5), be3, DTYPE_F32, 64, 64);
  std::vector<float> lf = logits_of(full, toks), lw = logits_of(wide, toks), ln = logits_of(narrow, toks);
  expect_close(lf, lw, 0.0f);
  // the first 3 positions see at most 3 keys: identical; the last differs
  expect_close(std::vector<float>(lf.begin(), lf.begin() + 3 * 40),
               std::vector<float>(ln.begin(), ln.begin() + 3 * 40), 0.0f);
  float diff = 0.0f;
  for (size_t i = lf.size() - 40; i < lf.size(); i++) diff += std::fabs(lf[i] - ln[i]);
  EXPECT_GT(diff, 1e-3f);
}

TEST(Model, MissingTensorIsNamed) {
  WeightSource src = random_weight_source(tiny_llama_config(), 6);
  src.tensors.erase("model.layers.1.mlp.up_proj.weight");
  CpuBackend be;
  EXPECT_THROW_MSG(Model m(src, be, DTYPE_F32, 8, 8), "model.layers.1.mlp.up_proj.weight");
}

TEST(Model, ShapeMismatchNamesTensorAndShapes) {
  WeightSource src = random_weight_source(tiny_llama_config(), 7);
  src.tensors["model.layers.0.self_attn.k_proj.weight"].shape = {16, 31};
  CpuBackend be;
  const std::string msg = smezo_test::error_of([&] { Model m(src, be, DTYPE_F32, 8, 8); });
  EXPECT_THAT(msg, testing::HasSubstr("model.layers.0.self_attn.k_proj.weight"));
  EXPECT_THAT(msg, testing::HasSubstr("[16, 31]"));
  EXPECT_THAT(msg, testing::HasSubstr("[16, 32]"));
}

TEST(Model, TokenOutsideVocabularyIsAnError) {
  CpuBackend be;
  Model m(random_weight_source(tiny_llama_config(), 8), be, DTYPE_F32, 8, 8);
  EXPECT_THROW_MSG(logits_of(m, {1, 40}), "token id 40 outside the vocabulary (40)");
}

// A batch whose sequence lengths do not add up to its tokens is refused, saying both counts.
TEST(Model, SequenceLengthsMustSumToTheTokens) {
  CpuBackend be;
  Model m(random_weight_source(tiny_llama_config(), 9), be, DTYPE_F32, 8, 8);
  ForwardBatch b;
  b.tokens = {1, 5, 9};
  b.seq_lens = {2};
  b.logit_rows = {0, 1};
  std::vector<float> out;
  EXPECT_THROW_MSG(m.forward(b, Probe{}, &out), "batch: sequence lengths sum to 2, 3 tokens");
}

// q_dim != dim (6 heads x 24 = 144 over dim 128, GQA 3 query heads per kv head): the forward
// pass against a plain double-precision LLaMA written here from the weights alone.
TEST(Model, QueryWidthOtherThanDimMatchesADoubleReference) {
  ModelConfig c = tiny_llama_config();
  c.dim = 128;
  c.hidden_dim = 64;
  c.n_layers = 2;
  c.n_heads = 6;
  c.n_kv_heads = 2;
  c.head_dim = 24;
  c.vocab_size = 40;
  const WeightSource src = random_weight_source(c, 11, 0.1f);
  CpuBackend be;
  Model m(src, be, DTYPE_F32, 16, 16);
  const std::vector<int32_t> tokens = {1, 7, 22, 39, 3};
  const std::vector<float> got = logits_of(m, tokens);

  using Vec = std::vector<double>;
  auto w = [&](const std::string& name) { return static_cast<const float*>(src.tensors.at(name).data); };
  auto matvec = [](const float* a, int64_t rows, int64_t cols, const Vec& x) {  // a: (rows, cols)
    Vec y(rows, 0.0);
    for (int64_t r = 0; r < rows; r++)
      for (int64_t k = 0; k < cols; k++) y[r] += static_cast<double>(a[r * cols + k]) * x[k];
    return y;
  };
  auto rms_norm = [&](const Vec& x, const float* g) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / x.size() + c.norm_eps);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); i++) y[i] = x[i] * inv * g[i];
    return y;
  };
  auto rope = [&](Vec* v, int64_t heads, int pos) {  // rotate-half pairs (j, j + head_dim/2)
    const int64_t half = c.head_dim / 2;
    for (int64_t h = 0; h < heads; h++)
      for (int64_t j = 0; j < half; j++) {
        const double angle = pos * std::pow(static_cast<double>(c.rope_theta), -2.0 * j / c.head_dim);
        double& a = (*v)[h * c.head_dim + j];
        double& b = (*v)[h * c.head_dim + j + half];
        const double a0 = a, b0 = b;
        a = a0 * std::cos(angle) - b0 * std::sin(angle);
        b = a0 * std::sin(angle) + b0 * std::cos(angle);
      }
  };
  const int64_t T = tokens.size(), q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  std::vector<Vec> x(T);
  const float* embed = w("model.embed_tokens.weight");
  for (int64_t t = 0; t < T; t++) x[t] = Vec(embed + tokens[t] * c.dim, embed + (tokens[t] + 1) * c.dim);
  for (int64_t l = 0; l < c.n_layers; l++) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    std::vector<Vec> q(T), k(T), v(T);
    for (int64_t t = 0; t < T; t++) {
      const Vec h = rms_norm(x[t], w(p + "input_layernorm.weight"));
      q[t] = matvec(w(p + "self_attn.q_proj.weight"), q_dim, c.dim, h);
      k[t] = matvec(w(p + "self_attn.k_proj.weight"), kv_dim, c.dim, h);
      v[t] = matvec(w(p + "self_attn.v_proj.weight"), kv_dim, c.dim, h);
      rope(&q[t], c.n_heads, t);
      rope(&k[t], c.n_kv_heads, t);
    }
    for (int64_t t = 0; t < T; t++) {
      Vec att(q_dim, 0.0);
      for (int64_t h = 0; h < c.n_heads; h++) {
        const int64_t kh = h / (c.n_heads / c.n_kv_heads);
        Vec s(t + 1);
        double top = -1e300, sum = 0;
        for (int64_t u = 0; u <= t; u++) {
          s[u] = 0;
          for (int64_t d = 0; d < c.head_dim; d++) s[u] += q[t][h * c.head_dim + d] * k[u][kh * c.head_dim + d];
          s[u] /= std::sqrt(static_cast<double>(c.head_dim));
          top = std::max(top, s[u]);
        }
        for (double& e : s) sum += (e = std::exp(e - top));
        for (int64_t u = 0; u <= t; u++)
          for (int64_t d = 0; d < c.head_dim; d++) att[h * c.head_dim + d] += s[u] / sum * v[u][kh * c.head_dim + d];
      }
      const Vec o = matvec(w(p + "self_attn.o_proj.weight"), c.dim, q_dim, att);
      for (int64_t i = 0; i < c.dim; i++) x[t][i] += o[i];
      const Vec h = rms_norm(x[t], w(p + "post_attention_layernorm.weight"));
      const Vec gate = matvec(w(p + "mlp.gate_proj.weight"), c.hidden_dim, c.dim, h);
      Vec up = matvec(w(p + "mlp.up_proj.weight"), c.hidden_dim, c.dim, h);
      for (int64_t i = 0; i < c.hidden_dim; i++) up[i] *= gate[i] / (1.0 + std::exp(-gate[i]));
      const Vec down = matvec(w(p + "mlp.down_proj.weight"), c.dim, c.hidden_dim, up);
      for (int64_t i = 0; i < c.dim; i++) x[t][i] += down[i];
    }
  }
  ASSERT_EQ(got.size(), static_cast<size_t>(T * c.vocab_size));
  double max_abs = 0, max_err = 0;
  for (int64_t t = 0; t < T; t++) {
    const Vec logits = matvec(w("lm_head.weight"), c.vocab_size, c.dim, rms_norm(x[t], w("model.norm.weight")));
    for (int64_t j = 0; j < c.vocab_size; j++) {
      max_abs = std::max(max_abs, std::fabs(logits[j]));
      max_err = std::max(max_err, std::fabs(logits[j] - got[t * c.vocab_size + j]));
    }
  }
  EXPECT_GT(max_abs, 0.1);  // the logits are not all near zero
  EXPECT_LT(max_err, 1e-5 * (1.0 + max_abs)) << "max abs " << max_abs;
}

// Each parameter's role comes from the architecture's map at load; checked here against the
// Hugging Face naming conventions, written out independently (LLaMA with biases and an untied
// head, OPT with LayerNorm biases and learned positions).
TEST(Model, ParameterRolesFollowTheArchitectureMap) {
  auto expected_role = [](const std::string& name) -> std::pair<std::string, bool> {
    const bool bias = name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    const std::pair<const char*, const char*> table[] = {
        {"embed_tokens", "embedding"}, {"embed_positions", "position-embedding"}, {"norm", "norm"},
        {"q_proj", "q"}, {"k_proj", "k"}, {"v_proj", "v"}, {"o_proj", "o"}, {"out_proj", "o"},
        {"gate_proj", "gate"}, {"up_proj", "up"}, {"fc1", "up"}, {"down_proj", "down"}, {"fc2", "down"},
        {"lm_head", "head"}};
    for (const auto& [part, role] : table)
      if (name.find(part) != std::string::npos) return {role, bias};
    return {"?", bias};
  };
  ModelConfig llama = tiny_llama_config();
  llama.qkv_bias = llama.o_bias = llama.mlp_bias = true;
  llama.tied_lm_head = false;
  for (const ModelConfig& c : {llama, smezo_test::tiny_opt_config()}) {
    CpuBackend be;
    Model m(random_weight_source(c, 3), be, DTYPE_F32, 16, 8);
    std::map<std::string, int> count;
    for (const Param* p : m.params()) {
      const auto [role, bias] = expected_role(p->info.name);
      EXPECT_EQ(param_role_name(p->info.role), role) << p->info.name;
      EXPECT_EQ(p->info.is_bias, bias) << p->info.name;
      const bool projection = p->info.role >= ROLE_ATTN_Q && p->info.role <= ROLE_LM_HEAD;
      EXPECT_EQ(p->info.is_linear, projection && !bias) << p->info.name;
      count[role + std::string(bias ? " bias" : "")]++;
    }
    const int layers = static_cast<int>(c.n_layers);
    EXPECT_EQ(count["embedding"], 1) << c.family;
    EXPECT_EQ(count["head"], 1) << c.family;
    EXPECT_EQ(count["q"], layers) << c.family;
    EXPECT_EQ(count["down bias"], layers) << c.family;
    EXPECT_EQ(count["norm"], 2 * layers + 1) << c.family;
    EXPECT_EQ(count["position-embedding"], c.family == "opt" ? 1 : 0) << c.family;
    EXPECT_EQ(count["gate"], c.family == "opt" ? 0 : layers) << c.family;
    EXPECT_EQ(count["norm bias"], c.family == "opt" ? 2 * layers + 1 : 0) << c.family;
  }
}
