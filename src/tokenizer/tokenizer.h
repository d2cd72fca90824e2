// Tokenizer interface shared by the sentencepiece tokenizer (LLaMA, Mistral, TinyStories)
// and the GPT-2 byte-level BPE tokenizer (OPT, SmolLM2; src/tokenizer/bpe_tokenizer.h).
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
  // Text of a whole token sequence: no BOS/EOS (BPE: no control token) text; sentencepiece
  // drops the leading space of the first piece.
  virtual std::string decode(const std::vector<int32_t>& tokens) const = 0;
  // Text that token adds when it follows prev (as llama2.c prints pieces while streaming).
  virtual std::string decode_piece(int32_t prev, int32_t token) const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when the tokenizer has none
  virtual int32_t eos_id() const = 0;  // -1 when the tokenizer has none
  // Whether the model's own tokenizer prepends BOS (LLaMA: yes; SmolLM2: no, although it
  // names one). Callers that follow the model pass this as add_bos.
  virtual bool add_bos_by_default() const { return true; }
};

// Whether text fed to the model starts with BOS: the tokenizer asks for it
// (add_bos_by_default) and has one (bos_id >= 0). Every place that encodes text for the
// model (generate, task encoding, eval, train) follows it. stories260K / LLaMA: yes;
// SmolLM2: no.
inline bool tokenizer_wants_bos(const Tokenizer& tokenizer) {
  return tokenizer.add_bos_by_default() && tokenizer.bos_id() >= 0;
}

// Loads a sentencepiece .model file; errors name the file.
std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const std::string& path);

// The pieces a sentencepiece model names its BOS, EOS and unknown tokens ("" where it has
// none), for the tokenizer_config.json of a Hugging Face folder (tokenizer_files.h).
struct SentencepieceSpecialPieces {
  std::string bos, eos, unk;
};
SentencepieceSpecialPieces sentencepiece_special_pieces(const std::string& path);

// Loads a byte-level BPE tokenizer from a Hugging Face tokenizer.json (with the
// tokenizer_config.json beside it, when present, for BOS/EOS names); bpe_vocab.h lists the
// supported subset. Errors name the file and the field.
std::unique_ptr<Tokenizer> load_bpe_tokenizer_json(const std::string& path);
// Loads the byte-level BPE tokenizer of a Hugging Face model directory: its tokenizer.json
// when there is one, else GPT-2's vocab.json + merges.txt (OPT); bpe_vocab.h has the details.
std::unique_ptr<Tokenizer> load_bpe_tokenizer_hf_dir(const std::string& dir);
// Loads a byte-level BPE tokenizer from a GGUF file's tokenizer.ggml.* metadata
// (tokenizer.ggml.model "gpt2"; supported tokenizer.ggml.pre: bpe_pretokenizer.h).
std::unique_ptr<Tokenizer> load_bpe_tokenizer_gguf(const std::string& path);

// Which tokenizer a model needs (src/tokenizer/tokenizer_kind.cpp).
enum TokenizerKind { TOKENIZER_SENTENCEPIECE, TOKENIZER_BPE };
const char* tokenizer_kind_name(TokenizerKind kind);  // "sentencepiece", "byte-level BPE"
// From a GGUF tokenizer.ggml.model value: "llama" -> sentencepiece, "gpt2" -> BPE; anything
// else throws, naming where (the file) and the value.
TokenizerKind tokenizer_kind_for_gguf_model(const std::string& ggml_model, const std::string& where);
// Of a GGUF file (reads its tokenizer.ggml.model).
TokenizerKind tokenizer_kind_of_gguf(const std::string& path);
// Of a Hugging Face model directory: tokenizer.model -> sentencepiece (LLaMA and Mistral
// ship a tokenizer.json too); else a tokenizer.json whose model.type is "BPE", or vocab.json +
// merges.txt (OPT) -> BPE; else an error naming the directory and what it lacks.
TokenizerKind tokenizer_kind_of_hf_dir(const std::string& dir);

}  // namespace smezo
