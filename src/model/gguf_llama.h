// A LLaMA-architecture GGUF file (general.architecture = "llama": LLaMA, Mistral without a
// sliding window, SmolLM2, ...) as a WeightSource with Hugging Face names and shapes.
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
// Refused: rope scaling (llama.rope.scaling.type not none, or a rope_freqs tensor),
// mixture-of-experts (llama.expert_count > 0), any tensor with no place (biases included).
// Tensors (GGUF name -> Hugging Face name; shape = GGUF dims reversed):
//   token_embd.weight -> model.embed_tokens.weight      output_norm.weight -> model.norm.weight
//   output.weight -> lm_head.weight                     blk.N.attn_norm -> model.layers.N.input_layernorm
//   blk.N.attn_q/attn_k/attn_v/attn_output -> self_attn.q_proj/k_proj/v_proj/o_proj
//   blk.N.ffn_norm -> post_attention_layernorm          blk.N.ffn_gate/ffn_up/ffn_down -> mlp.gate_proj/up_proj/down_proj
// RoPE: llama.cpp permutes attn_q/attn_k rows per head from HF's rotate-half pairs (i, i + head_dim/2)
// to interleaved (2i, 2i+1); kept as stored with ROPE_INTERLEAVED (checkpoints permute back).
// Quantised tensors carry a decoder (HostTensorView::decode) run one tensor at a time.
#pragma once

#include <string>

#include "model/weight_source.h"

namespace smezo {

WeightSource load_gguf(const std::string& path);

}  // namespace smezo
