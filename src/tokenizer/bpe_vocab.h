// The vocabulary of a byte-level BPE tokenizer (GPT-2, OPT, SmolLM2) and its loaders.
//
// Hugging Face tokenizer.json, the subset read (anything else is an error naming the field):
//   model          {"type": "BPE", "vocab": {spelling: id}, "merges": ["a b", ...] or
//                  [["a", "b"], ...], "ignore_merges": bool}; dropout, continuing_subword_prefix,
//                  end_of_word_suffix must be null and byte_fallback false.
//   added_tokens   [{"id", "content", "special", ...}]: matched whole in the text before
//                  pre-tokenisation; special ones are control tokens (skipped by decode).
//                  lstrip / rstrip / single_word must be false.
//   normalizer     must be null.
//   pre_tokenizer  ByteLevel(add_prefix_space=false[, use_regex]) as the last step, optionally
//                  after Digits(individual_digits) and Split(Regex|String, "Isolated") steps
//                  inside a Sequence (bpe_pretokenizer.h).
//   post_processor null, ByteLevel, or TemplateProcessing whose single form is [$A] or
//                  [BOS, $A] (BOS id -> bos_id, add_bos = true); Sequence of those.
//   decoder        ByteLevel.
// tokenizer_config.json (and special_tokens_map.json) beside it, when present: bos_token /
// eos_token / unk_token / pad_token (a string or {"content": ...}) name those tokens;
// add_bos_token: true asks for BOS; add_eos_token / add_prefix_space: true are refused.
//
// GGUF (llama.cpp) metadata, tokenizer.ggml.*: model ("gpt2"), pre (bpe_pretokenizer.h),
// tokens (spellings), token_type (BpeTokenType numbering), merges ("a b"), bos/eos/
// unknown/padding_token_id, add_bos_token (absent: false).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace smezo {

// llama.cpp's token types (GGUF tokenizer.ggml.token_type).
enum BpeTokenType : int32_t {
  BPE_TOKEN_NORMAL = 1,
  BPE_TOKEN_UNKNOWN = 2,
  BPE_TOKEN_CONTROL = 3,       // special: matched in text, skipped by decode (<|im_start|>)
  BPE_TOKEN_USER_DEFINED = 4,  // added, not special: matched in text, kept by decode
  BPE_TOKEN_UNUSED = 5,
  BPE_TOKEN_BYTE = 6,
};

struct BpeVocab {
  std::string source;                // the file it was read from (for messages)
  std::vector<std::string> tokens;   // (n_vocab) model tokens in the byte-level alphabet;
                                     // control / user-defined tokens as their text
  std::vector<int32_t> types;        // (n_vocab) BpeTokenType
  std::vector<std::pair<std::string, std::string>> merges;  // (n_merges) best (rank 0) first
  std::vector<std::string> pre_patterns;  // pre-tokeniser regex stages (bpe_pretokenizer.h)
  bool ignore_merges = false;        // a word that is a whole token is not merged (HF option)
  // The token for a byte whose alphabet character is not a token (HF: model.unk_token);
  // -1: such a byte is dropped, as HF (unk_token null) and llama.cpp do. SmolLM2 lacks 21
  // byte characters: 0xC0, 0xC1, 0xF5..0xFF (never in UTF-8) and the controls 0x04, 0x06,
  // 0x13, 0x14, 0x16, 0x1D, so "a\x04b" encodes as "ab" there.
  int32_t missing_byte_id = -1;
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1;  // -1: the model has none
  bool add_bos = false;              // whether the model's own tokenizer prepends BOS
};

// Throws smezo::Error naming vocab.source unless: tokens non-empty, one type per token, the
// space's alphabet character "Ġ" is a token (a byte-level vocabulary), every merge's parts
// and concatenation are tokens, special ids in range (or -1), add_bos only with a BOS, at
// least one pre-tokeniser stage.
void bpe_vocab_validate(const BpeVocab& vocab);

// Reads a Hugging Face tokenizer.json (and tokenizer_config.json beside it, if present).
BpeVocab bpe_vocab_from_tokenizer_json(const std::string& path);

// Reads GPT-2's own files in dir: vocab.json ({spelling: id}) and merges.txt (an optional
// "#version" first line, then "a b" per line, best first), with GPT-2's pre-tokeniser
// (ByteLevel regex, no prefix space), and tokenizer_config.json / special_tokens_map.json for
// the special tokens (bos/eos/unk/pad_token, additional_special_tokens, added_tokens_decoder:
// matched whole in text, skipped by decode) and add_bos_token. OPT's repositories ship these.
BpeVocab bpe_vocab_from_gpt2_files(const std::string& dir);

class GgufFile;
// Reads a GGUF file's tokenizer.ggml.* metadata (src/tokenizer/bpe_gguf.cpp). Token type 0
// (llama.cpp's "undefined") counts as normal; add_eos_token = true is refused (smezo never
// appends EOS); a missing or unknown tokenizer.ggml.pre is an error, never a silent default.
BpeVocab bpe_vocab_from_gguf(const GgufFile& file);

}  // namespace smezo
