// Reader for llama2.c's legacy checkpoint format (karpathy/llama2.c run.c), memory-mapped.
// Layout: 7 little-endian int32 — dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size
// (negative: the classifier is stored separately, i.e. not tied), seq_len — then fp32 arrays:
// token_embedding (vocab, dim); rms_att (layers, dim); wq (layers, n_heads*hd, dim); wk, wv (layers,
// n_kv_heads*hd, dim); wo (layers, dim, n_heads*hd); rms_ffn (layers, dim); w1 (layers, hidden, dim);
// w2 (layers, dim, hidden); w3 (layers, hidden, dim); rms_final (dim); two legacy RoPE tables
// (seq_len * hd/2 each, skipped); classifier (vocab, dim) only when vocab_size was negative. RMSNorm
// eps 1e-5, RoPE theta 10000 on interleaved pairs; tensors under Hugging Face LLaMA names.
// Checks: header fields within model_size.h's bounds (|vocab_size|), heads dividing, even head_dim,
// every array overflow-checked inside the file, no bytes left after the last.
#pragma once

#include <string>

#include "model/weight_source.h"

namespace smezo {

WeightSource load_llama2c(const std::string& path);

}  // namespace smezo
