// A LLaMA-architecture GGUF file (general.architecture = "llama": LLaMA, Mistral without a
// sliding window, SmolLM2, ...) as a WeightSource with Hugging Face names and shapes.
//
// Architecture, from the metadata only (a missing required key is an error naming it):
//   llama.embedding_length -> dim           llama.feed_forward_length -> hidden_dim
//   llama.block_count      -> n_layers      llama.attention.head_count -> n_heads
//   llama.attention.head_count_kv -> n_kv_heads (absent: = head_count, as GGUF specifies)
//   llama.attention.key_length (absent: dim / n_heads) -> head_dim; value_length must match
//   llama.rope.dimension_count, when present, must equal head_dim (partial RoPE unsupported)
//   llama.context_length   -> max_seq_len   llama.attention.layer_norm_rms_epsilon -> norm_eps
//   llama.rope.freq_base   -> rope_theta (absent: 10000, GGUF's default)
//   llama.vocab_size and/or the length of tokenizer.ggml.tokens -> vocab_size (they must agree)
//   tokenizer.ggml.bos_token_id / eos_token_id -> bos_token / eos_token (-1 when absent)
//   tied_lm_head = the file has no output.weight.
// Refused with a message: rope scaling (llama.rope.scaling.type other than none, or a
// rope_freqs tensor), mixture-of-experts (llama.expert_count > 0), and any tensor that has
// no place in the model (biases included).
//
// Tensors (GGUF name -> Hugging Face name; shape = GGUF dims reversed):
//   token_embd.weight -> model.embed_tokens.weight      output_norm.weight -> model.norm.weight
//   output.weight -> lm_head.weight                     blk.N.attn_norm -> model.layers.N.input_layernorm
//   blk.N.attn_q/attn_k/attn_v/attn_output -> self_attn.q_proj/k_proj/v_proj/o_proj
//   blk.N.ffn_norm -> post_attention_layernorm          blk.N.ffn_gate/ffn_up/ffn_down -> mlp.gate_proj/up_proj/down_proj
//
// RoPE: llama.cpp's converter permutes the rows of attn_q and attn_k of every head from
// Hugging Face's rotate-half order (pairs i, i + head_dim/2) to interleaved pairs (2i, 2i+1).
// The rows are kept as stored and the config says ROPE_INTERLEAVED (as for llama2.c); the
// checkpoint writer permutes them back when it saves a Hugging Face directory.
//
// F32/F16/BF16 tensors are plain views into the mapping; quantised ones carry a decoder
// (HostTensorView::decode) that the model runs on one tensor at a time while loading.
#pragma once

#include <string>

#include "model/weight_source.h"

namespace smezo {

WeightSource load_gguf(const std::string& path);

}  // namespace smezo
