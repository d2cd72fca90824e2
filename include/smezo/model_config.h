// A decoder-only model's architecture, filled by every loader; LLaMA, Mistral, OPT differ only here.
#pragma once

#include <cstdint>
#include <string>

namespace smezo {

enum Architecture { ARCH_LLAMA, ARCH_MISTRAL, ARCH_OPT };

// How rotary embeddings pair up the dimensions of each head.
enum RopeStyle {
  ROPE_ROTATE_HALF,   // Hugging Face LLaMA: pairs (i, i + head_dim/2)
  ROPE_INTERLEAVED,   // Meta / llama2.c / GGUF: pairs (2i, 2i + 1)
};

enum NormKind { NORM_RMS, NORM_LAYER };
enum MlpKind { MLP_SWIGLU, MLP_RELU };

struct ModelConfig {
  Architecture arch = ARCH_LLAMA;
  int64_t dim = 0;          // model width (hidden_size)
  int64_t hidden_dim = 0;   // MLP inner width (intermediate_size / ffn_dim)
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;   // == n_heads without grouped-query attention
  int64_t head_dim = 0;     // usually dim / n_heads
  int64_t vocab_size = 0;
  int64_t max_seq_len = 0;  // longest position the model supports
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeStyle rope_style = ROPE_ROTATE_HALF;
  NormKind norm_kind = NORM_RMS;
  MlpKind mlp_kind = MLP_SWIGLU;
  bool tied_lm_head = false;     // LM head reuses the token embedding table
  bool linear_bias = false;      // q/k/v/o and MLP projections carry biases (OPT)
  int64_t sliding_window = 0;    // Mistral: keys older than this many positions are masked; 0 = off
  int64_t learned_pos_offset = 0;  // OPT: learned position table is indexed at pos + offset
  int32_t bos_token = 1;
  int32_t eos_token = 2;
};

const char* architecture_name(Architecture arch);

}  // namespace smezo
