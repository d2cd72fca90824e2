// Tokenizer interface of sentencepiece (LLaMA, Mistral, TinyStories) and byte-level BPE (OPT, SmolLM2).
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
  // Without BOS/EOS (BPE: control tokens); sentencepiece drops the first piece's leading space.
  virtual std::string decode(const std::vector<int32_t>& tokens) const = 0;
  // Text that token adds when it follows prev (as llama2.c prints pieces while streaming).
  virtual std::string decode_piece(int32_t prev, int32_t token) const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when the tokenizer has none
  virtual int32_t eos_id() const = 0;  // -1 when the tokenizer has none
  // Whether the model's own tokenizer prepends BOS (LLaMA: yes; SmolLM2: no, though it has one).
  virtual bool add_bos_by_default() const { return true; }
};

// Whether text fed to the model starts with BOS; every encoder of model input follows it.
inline bool tokenizer_wants_bos(const Tokenizer& tokenizer) {
  return tokenizer.add_bos_by_default() && tokenizer.bos_id() >= 0;
}

// Loads a sentencepiece .model file; errors name the file.
std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const std::string& path);

// The BOS, EOS and unknown pieces ("" where none), for tokenizer_config.json.
struct SentencepieceSpecialPieces {
  std::string bos, eos, unk;
};
SentencepieceSpecialPieces sentencepiece_special_pieces(const std::string& path);

// Byte-level BPE from tokenizer.json (+ tokenizer_config.json); subset: bpe_vocab.h. Errors name the field.
std::unique_ptr<Tokenizer> load_bpe_tokenizer_json(const std::string& path);
// A Hugging Face directory's tokenizer.json, else GPT-2's vocab.json + merges.txt (OPT).
std::unique_ptr<Tokenizer> load_bpe_tokenizer_hf_dir(const std::string& dir);
// From a GGUF file's tokenizer.ggml.* metadata (model "gpt2").
std::unique_ptr<Tokenizer> load_bpe_tokenizer_gguf(const std::string& path);

// Which tokenizer a model needs (src/tokenizer/tokenizer_kind.cpp).
enum TokenizerKind { TOKENIZER_SENTENCEPIECE, TOKENIZER_BPE };
const char* tokenizer_kind_name(TokenizerKind kind);  // "sentencepiece", "byte-level BPE"
// "llama" -> sentencepiece, "gpt2" -> BPE; anything else throws, naming where and the value.
TokenizerKind tokenizer_kind_for_gguf_model(const std::string& ggml_model, const std::string& where);
// Of a GGUF file (reads its tokenizer.ggml.model).
TokenizerKind tokenizer_kind_of_gguf(const std::string& path);
// tokenizer.model -> sentencepiece (even beside tokenizer.json); else BPE files -> BPE; else an error.
TokenizerKind tokenizer_kind_of_hf_dir(const std::string& dir);

}  // namespace smezo
