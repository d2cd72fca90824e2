// A decoder-only model's sizes and the features its forward reads. Each family's descriptor
// (src/model/families/, docs/ARCHITECTURE.md) fills it from a config.json or a GGUF file; nothing
// outside the descriptors asks which family a model is, only what these fields say.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace smezo {

// How rotary embeddings pair up the dimensions of each head.
enum RopeStyle {
  ROPE_ROTATE_HALF,   // Hugging Face LLaMA: pairs (i, i + head_dim/2)
  ROPE_INTERLEAVED,   // Meta / llama2.c / GGUF: pairs (2i, 2i + 1)
};

enum NormKind { NORM_RMS, NORM_LAYER };
enum MlpKind { MLP_SWIGLU, MLP_RELU };  // the activation: silu-gated (gate, up, down) or relu (fc1, fc2)
enum PositionKind { POSITION_ROPE, POSITION_LEARNED };  // rotary, or a learned table added to the embedding
enum RopeScalingKind { ROPE_SCALING_NONE, ROPE_SCALING_LLAMA3 };

// RoPE frequency scaling. Llama 3.x: pair j's inverse frequency f_j = theta^(-2j/head_dim) is divided by
// `factor` below the low-frequency wavelength, kept above the high one, and blended between (transformers'
// _compute_llama3_parameters). A GGUF gives the per-pair divisors themselves (its rope_freqs tensor).
struct RopeScaling {
  RopeScalingKind kind = ROPE_SCALING_NONE;
  float factor = 1.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int64_t original_max_positions = 8192;
  std::vector<float> freq_divisors;  // (head_dim/2) from a GGUF; when set they replace the four above
};

struct ModelConfig {
  std::string family = "llama";  // its descriptor's name (model/family.h): llama, mistral, opt, qwen2, qwen3
  int64_t dim = 0;          // model width (hidden_size)
  int64_t hidden_dim = 0;   // MLP inner width (intermediate_size / ffn_dim)
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;   // == n_heads without grouped-query attention
  int64_t head_dim = 0;     // usually dim / n_heads (Qwen3: its own field)
  int64_t vocab_size = 0;
  int64_t max_seq_len = 0;  // longest position the model supports
  float norm_eps = 1e-5f;
  PositionKind position = POSITION_ROPE;
  float rope_theta = 10000.0f;
  RopeStyle rope_style = ROPE_ROTATE_HALF;
  RopeScaling rope_scaling;
  NormKind norm_kind = NORM_RMS;
  MlpKind mlp_kind = MLP_SWIGLU;
  bool qkv_bias = false;         // q, k and v projections carry biases (OPT, Qwen2, LLaMA attention_bias)
  bool o_bias = false;           // the attention output projection does (OPT, LLaMA attention_bias)
  bool mlp_bias = false;         // the MLP projections do (OPT, LLaMA mlp_bias)
  bool qk_norm = false;          // per-head RMSNorm of q and k before RoPE (Qwen3)
  bool tied_lm_head = false;     // LM head reuses the token embedding table
  int64_t sliding_window = 0;    // Mistral: keys older than this many positions are masked; 0 = off
  int64_t learned_pos_offset = 0;  // OPT: learned position table is indexed at pos + offset
  int32_t bos_token = 1;
  int32_t eos_token = 2;
};

}  // namespace smezo
