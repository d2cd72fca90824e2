// Text generation with the KV cache: greedy (temperature 0) or temperature sampling.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace smezo {

struct GenerateOptions {
  std::string prompt;          // may be empty when the model starts with BOS (tokenizer_wants_bos)
  int64_t steps = 256;         // llama2.c's -n: tokens end at position `steps`, prompt and BOS included
  int64_t new_tokens = 0;      // > 0: this many tokens after the prompt instead (sets steps)
  float temperature = 0.0f;    // 0 = greedy argmax
  float top_p = 1.0f;          // nucleus sampling when < 1
  uint64_t seed = 1;
};

// Streams each new token's text to on_piece; stops early at BOS or EOS. Returns all tokens.
std::vector<int32_t> generate(Model& model, const Tokenizer& tokenizer, const GenerateOptions& opts,
                              const std::function<void(const std::string&)>& on_piece);

// Index of the next token: argmax when temperature == 0, else a sample.
int32_t sample_token(const float* logits, int64_t vocab, float temperature, float top_p,
                     uint64_t* rng_state);

}  // namespace smezo
