// A GGUF file of a family with a GGUF architecture (model/family.h: general.architecture "llama" --
// LLaMA, Llama 3.x, Mistral without a window, SmolLM2 -- "qwen2" and "qwen3") as a WeightSource with
// Hugging Face names and shapes. Its config, from the metadata only (<a> = the architecture; a
// missing required key is an error naming it):
//   <a>.embedding_length -> dim           <a>.feed_forward_length -> hidden_dim
//   <a>.block_count      -> n_layers      <a>.attention.head_count -> n_heads
//   <a>.attention.head_count_kv -> n_kv_heads (absent: = head_count, as GGUF specifies)
//   <a>.attention.key_length (absent: dim / n_heads) -> head_dim; value_length must match
//   <a>.rope.dimension_count, when present, must equal head_dim (partial RoPE unsupported)
//   <a>.context_length   -> max_seq_len   <a>.attention.layer_norm_rms_epsilon -> norm_eps
//   <a>.rope.freq_base   -> rope_theta (absent: 10000, GGUF's default)
//   <a>.vocab_size and/or the length of tokenizer.ggml.tokens -> vocab_size (they must agree)
//   tokenizer.ggml.bos_token_id / eos_token_id -> bos_token / eos_token (-1 when absent)
// Features from the tensors: no output.weight -> tied head; blk.0.attn_q.bias -> q/k/v biases,
// blk.0.attn_output.bias -> o bias, blk.0.ffn_up.bias -> MLP biases, blk.0.attn_q_norm.weight -> q/k
// norms; rope_freqs.weight (llama.cpp's Llama 3 converter: one divisor per RoPE pair, F32) -> the
// RoPE frequency divisors. Refused: <a>.rope.scaling.type other than none, mixture-of-experts
// (<a>.expert_count > 0), any tensor the family's table has no place for.
// Tensors: the family's table (family_llama_like_tensors.cpp: token_embd -> model.embed_tokens,
// blk.N.attn_q -> model.layers.N.self_attn.q_proj, ...; shape = GGUF dims reversed).
// RoPE: llama.cpp permutes the q/k rows of "llama" to interleaved pairs (2i, 2i+1); kept as stored
// with ROPE_INTERLEAVED (checkpoints permute back); "qwen2"/"qwen3" keep Hugging Face's rotate-half.
// Quantised tensors carry a decoder (HostTensorView::decode) run one tensor at a time.
#pragma once

#include <string>

#include "model/weight_source.h"

namespace smezo {

WeightSource load_gguf(const std::string& path);

}  // namespace smezo
