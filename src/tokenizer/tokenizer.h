// Tokenizer interface shared by the sentencepiece tokenizer (LLaMA, Mistral, TinyStories)
// and, later, the GPT-2 byte-level BPE tokenizer (OPT, SmolLM2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace smezo {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Token ids of text; with add_bos the BOS id is prepended.
  virtual std::vector<int32_t> encode(const std::string& text, bool add_bos) const = 0;
  // Text of a whole token sequence (no BOS/EOS text, leading space of the first piece dropped).
  virtual std::string decode(const std::vector<int32_t>& tokens) const = 0;
  // Text that token adds when it follows prev (as llama2.c prints pieces while streaming).
  virtual std::string decode_piece(int32_t prev, int32_t token) const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;
  virtual int32_t eos_id() const = 0;
};

// Loads a sentencepiece .model file; errors name the file.
std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const std::string& path);

}  // namespace smezo
