// Random block-quantised GGUF files for the --weights packed and --tune scales tests (CPU and CUDA): blocks
// of every type smezo keeps packed, with random codes and sub-scales and f16 scales drawn from a range the
// test names, a small LLaMA built of them, and its logits unperturbed and under a LoRA probe pair.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "smezo/device.h"

namespace smezo {
class Backend;
}

namespace smezo_test {

// Where a block type keeps its f16 scales: d, and m/dmin (-1: none).
struct PackedScaleBytes {
  uint32_t type;
  int d_at, m_at;
};
// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, in that order.
extern const PackedScaleBytes kPackedBlockTypes[8];
const PackedScaleBytes& packed_scale_bytes(uint32_t type);  // throws for a type not in the table

// The f16 scales' ranges, as a 32-value type (Q4_0/Q4_1/Q5_0/Q5_1) draws them: d uniform in [d_lo, d_hi],
// m uniform in [m_lo, m_hi]. Q8_0's d is that over 4 and the K-quants' d over 32 (they multiply it by 6-bit,
// Q6_K 8-bit, sub-scales), and a K-quant's dmin is -m/8: the weights stay near the others'.
struct ScaleRange {
  float d_lo, d_hi, m_lo, m_hi;
};
inline constexpr ScaleRange kPositiveScales{0.002f, 0.02f, -0.05f, 0.0f};  // d > 0, dmin >= 0: as a quantiser
inline constexpr ScaleRange kSignedScales{-0.02f, 0.02f, -0.05f, 0.05f};   // either sign: what a file may hold

// n values' worth of random blocks of s.type.
std::string random_packed_blocks(const PackedScaleBytes& s, int64_t n, const ScaleRange& range, std::mt19937* rng);

// A LLaMA's shape (4 heads, 2 KV heads, context 64).
struct RandomGgufShape {
  int64_t dim = 256, hidden = 512, vocab = 1000, layers = 2;
};

// A LLaMA GGUF in a new temporary folder whose 2-D tensors are random blocks of `type` (the embedding
// `embedding_type`), norms F32 in [0.8, 1.2); a tied head when `tied`. The default shape gives the head two
// W' groups and a tail block.
std::string write_random_packed_gguf(uint32_t type, uint32_t embedding_type, bool tied, uint32_t seed,
                                     const ScaleRange& range, const RandomGgufShape& shape = RandomGgufShape{});

// n token ids uniform in [0, vocab).
std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint32_t seed);

// Logits of `tokens` (two sequences) from the GGUF at `path` on `backend` in `dtype`, its block-quantised
// weights kept packed or dequantised at load: `plain` unperturbed, then `lora_pair` under a probe pair with
// random LoRA adapters on q, v, down, the base frozen as --tune lora runs it (the + half's rows, then the -
// half's). `bytes`: the backend's allocation once the model is loaded. A CUDA backend's W' dtype is the
// caller's to set.
struct PackedLogits {
  std::vector<float> plain, lora_pair;
  int64_t bytes = 0;
};
PackedLogits lora_pair_logits(const std::string& path, bool packed, smezo::Backend& backend, smezo::DType dtype,
                              const std::vector<int32_t>& tokens);

}  // namespace smezo_test
