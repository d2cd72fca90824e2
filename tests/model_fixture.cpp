// Tiny random models for tests.
#include "model_fixture.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "model/model.h"
#include "test_util.h"

namespace smezo_test {

smezo::ModelConfig tiny_llama_config() {
  smezo::ModelConfig c;
  c.family = "llama";
  c.dim = 32;
  c.hidden_dim = 48;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.vocab_size = 40;
  c.max_seq_len = 64;
  c.rope_style = smezo::ROPE_ROTATE_HALF;
  return c;
}

smezo::ModelConfig tiny_opt_config() {
  smezo::ModelConfig c;
  c.family = "opt";
  c.position = smezo::POSITION_LEARNED;
  c.dim = 16;
  c.hidden_dim = 24;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 4;
  c.head_dim = 4;
  c.vocab_size = 30;
  c.max_seq_len = 20;
  c.norm_kind = smezo::NORM_LAYER;
  c.mlp_kind = smezo::MLP_RELU;
  c.qkv_bias = c.o_bias = c.mlp_bias = true;
  c.tied_lm_head = false;
  c.learned_pos_offset = 2;
  return c;
}

smezo::WeightSource random_weight_source(const smezo::ModelConfig& config, uint32_t seed, float scale) {
  smezo::WeightSource src;
  src.config = config;
  src.path = "random-test-model";
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (const smezo::ExpectedTensor& e : smezo::expected_tensors(config)) {
    int64_t n = 1;
    for (int64_t d : e.shape) n *= d;
    auto buf = std::shared_ptr<float>(new float[n], std::default_delete<float[]>());
    bool is_norm_weight = e.shape.size() == 1 && e.name.find("norm") != std::string::npos &&
                          e.name.find(".bias") == std::string::npos;
    for (int64_t i = 0; i < n; i++) buf.get()[i] = (is_norm_weight ? 1.0f : 0.0f) + dist(rng);
    smezo::HostTensorView v;
    v.name = e.name;
    v.dtype = smezo::DTYPE_F32;
    v.shape = e.shape;
    v.data = buf.get();
    v.file = src.path;
    src.tensors[e.name] = v;
    src.keep_alive.push_back(buf);
  }
  return src;
}

float* mutable_tensor(smezo::WeightSource& source, const std::string& name) {
  return const_cast<float*>(static_cast<const float*>(source.tensors.at(name).data));
}

smezo::WeightSource hf_twin_of_interleaved(const smezo::ModelConfig& config, uint32_t seed) {
  const smezo::WeightSource meta = random_weight_source(config, seed);
  smezo::ModelConfig hf_config = config;
  hf_config.rope_style = smezo::ROPE_ROTATE_HALF;
  smezo::WeightSource hf = random_weight_source(hf_config, seed);  // same values, then permute q/k rows
  const int64_t hd = config.head_dim;
  for (int64_t l = 0; l < config.n_layers; l++) {
    for (const char* proj : {"q_proj", "k_proj"}) {
      const std::string name = "model.layers." + std::to_string(l) + ".self_attn." + proj + ".weight";
      const float* src = static_cast<const float*>(meta.tensors.at(name).data);
      float* dst = mutable_tensor(hf, name);
      const int64_t heads = std::string(proj) == "q_proj" ? config.n_heads : config.n_kv_heads;
      for (int64_t h = 0; h < heads; h++)
        for (int64_t i = 0; i < hd / 2; i++)
          for (int64_t k = 0; k < config.dim; k++) {
            dst[(h * hd + i) * config.dim + k] = src[(h * hd + 2 * i) * config.dim + k];
            dst[(h * hd + i + hd / 2) * config.dim + k] = src[(h * hd + 2 * i + 1) * config.dim + k];
          }
    }
  }
  return hf;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (size_t i = 0; i < a.size(); i++) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    m = std::max(m, std::isnan(d) ? std::numeric_limits<double>::infinity() : d);
  }
  return m;
}

std::vector<float> param_values(smezo::Backend& backend, const smezo::Param& p) {
  std::vector<float> v(static_cast<size_t>(p.w.numel()));
  backend.download(p.w, v.data());
  return v;
}

void randomize_adapters(smezo::Model& m, uint32_t seed, float bound) {
  for (smezo::Param* p : m.params()) {
    if (p->info.adapter == smezo::ADAPTER_NONE) continue;
    const std::vector<float> v = random_floats(p->w.numel(), seed++, -bound, bound);
    m.backend().upload(p->w, v.data());
  }
}

std::vector<float> logits_of(smezo::Model& model, const std::vector<int32_t>& tokens) {
  smezo::ForwardBatch b;
  b.tokens = tokens;
  b.seq_lens = {static_cast<int64_t>(tokens.size())};
  for (int64_t i = 0; i < static_cast<int64_t>(tokens.size()); i++) b.logit_rows.push_back(i);
  std::vector<float> out;
  model.forward(b, smezo::Probe{}, &out);
  return out;
}

}  // namespace smezo_test
