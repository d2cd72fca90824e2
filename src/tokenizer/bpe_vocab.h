// The vocabulary of a byte-level BPE tokenizer (GPT-2, OPT, SmolLM2) and its loaders.
// Hugging Face tokenizer.json, the subset read (anything else is an error naming the field):
//   model          {"type": "BPE", "vocab": {spelling: id}, "merges": ["a b", ...] or [["a", "b"], ...],
//                  "ignore_merges": bool}; dropout, continuing_subword_prefix, end_of_word_suffix
//                  must be null and byte_fallback false.
//   added_tokens   [{"id", "content", "special", ...}]: matched whole before pre-tokenisation;
//                  special = control (skipped by decode); lstrip/rstrip/single_word false.
//   normalizer     must be null.
//   pre_tokenizer  ByteLevel(add_prefix_space=false[, use_regex]) last, optionally after
//                  Digits(individual_digits) and Split(Regex|String, "Isolated") in a Sequence.
//   post_processor null, ByteLevel, or TemplateProcessing whose single form is [$A] or
//                  [BOS, $A] (BOS id -> bos_id, add_bos = true); Sequence of those.
//   decoder        ByteLevel.
// tokenizer_config.json (and special_tokens_map.json) beside it, when present: bos_token /
// eos_token / unk_token / pad_token (a string or {"content": ...}) name those tokens;
// add_bos_token: true asks for BOS; add_eos_token / add_prefix_space: true are refused.
// GGUF (llama.cpp) metadata, tokenizer.ggml.*: model ("gpt2"), pre (bpe_pretokenizer.h), tokens
// (spellings), token_type (BpeTokenType), merges ("a b"), bos/eos/unknown/padding_token_id,
// add_bos_token (absent: false).
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
  std::vector<std::string> tokens;   // (n_vocab) in the byte-level alphabet; control/user-defined: text
  std::vector<int32_t> types;        // (n_vocab) BpeTokenType
  std::vector<std::pair<std::string, std::string>> merges;  // (n_merges) best (rank 0) first
  std::vector<std::string> pre_patterns;  // pre-tokeniser regex stages (bpe_pretokenizer.h)
  bool ignore_merges = false;        // a word that is a whole token is not merged (HF option)
  // Token for a byte with no token (HF model.unk_token); -1 drops it, as HF and llama.cpp do.
  int32_t missing_byte_id = -1;
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1;  // -1: the model has none
  bool add_bos = false;              // whether the model's own tokenizer prepends BOS
  bool nfc = false;                  // tokenizer.json normalizer {"type": "NFC"} (Qwen): text NFC'd first (bpe_nfc.h)
};

// Throws smezo::Error naming vocab.source unless: tokens non-empty, one type per token, "Ġ" is a
// token, every merge's parts and concatenation are tokens, special ids in range (or -1), add_bos
// only with a BOS, at least one pre-tokeniser stage.
void bpe_vocab_validate(const BpeVocab& vocab);

// Reads a Hugging Face tokenizer.json (and tokenizer_config.json beside it, if present).
BpeVocab bpe_vocab_from_tokenizer_json(const std::string& path);

// GPT-2's own files in dir (OPT ships these): vocab.json ({spelling: id}), merges.txt (optional
// "#version" line, then "a b" per line, best first), the config files as above plus
// additional_special_tokens and added_tokens_decoder (control tokens).
BpeVocab bpe_vocab_from_gpt2_files(const std::string& dir);

class GgufFile;
// tokenizer.ggml.*: type 0 counts as normal; add_eos_token refused; unknown/missing pre is an error.
BpeVocab bpe_vocab_from_gguf(const GgufFile& file);

}  // namespace smezo
