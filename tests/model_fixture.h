// Tiny random models for tests: an in-memory WeightSource for any ModelConfig.
#pragma once

#include <cstdint>
#include <vector>

#include "model/weight_source.h"

namespace smezo {
class Backend;
class Model;
struct Param;
}

namespace smezo_test {

// A small LLaMA-style config (GQA 4 heads / 2 kv heads, head_dim 8, vocab 40).
smezo::ModelConfig tiny_llama_config();
// A small OPT-style config (learned positions with offset 2, LayerNorm, ReLU MLP, biases,
// untied head; 2 layers, dim 16, vocab 30).
smezo::ModelConfig tiny_opt_config();
// Every expected tensor filled with uniform values in [-scale, scale) (norm weights near 1).
smezo::WeightSource random_weight_source(const smezo::ModelConfig& config, uint32_t seed,
                                         float scale = 0.3f);
// Mutable fp32 data of one tensor of a source made by random_weight_source.
float* mutable_tensor(smezo::WeightSource& source, const std::string& name);
// The Hugging Face twin of an interleaved-RoPE (Meta layout) source made by
// random_weight_source(config, seed): the same values with every q/k weight row moved as HF's
// conversion moves it (row 2i of a head to row i, row 2i+1 to row i + head_dim/2) and rotate-half
// RoPE; both give the same logits.
smezo::WeightSource hf_twin_of_interleaved(const smezo::ModelConfig& config, uint32_t seed);
// max |v[i]|, and max |a[i] - b[i]| (infinity for a NaN difference or a size mismatch): the
// scales and distances of the tolerance checks on logits.
double max_abs(const std::vector<float>& v);
double max_diff(const std::vector<float>& a, const std::vector<float>& b);
// A parameter's values, downloaded from its backend as fp32.
std::vector<float> param_values(smezo::Backend& backend, const smezo::Param& p);
// Fresh values uniform in [-bound, bound) for every adapter parameter of m (LoRA's A and B, a
// prefix's keys and values): random_floats(numel, seed++) per tensor, so B is not 0.
void randomize_adapters(smezo::Model& m, uint32_t seed, float bound);
// The logits at every position of `tokens`, run as one sequence through model (no probe).
std::vector<float> logits_of(smezo::Model& model, const std::vector<int32_t>& tokens);

}  // namespace smezo_test
