// Exporting the current weights as a Hugging Face model directory that transformers can load:
// config.json + model.safetensors (+ tokenizer.model when given). Models that use Meta's
// interleaved RoPE (llama2.c, GGUF) get the q/k rows of each head permuted into Hugging
// Face's rotate-half order on the way out (the same permutation HF's conversion applies).
// The directory is written next to its final place and renamed over it, so a crash never
// leaves a half-written checkpoint where a good one was.
#pragma once

#include <string>

#include "model/model.h"

namespace smezo {

void save_hf_checkpoint(Model& model, const std::string& dir, const std::string& tokenizer_path);

}  // namespace smezo
