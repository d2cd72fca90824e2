// Writing a model's tokenizer into a Hugging Face model directory (smezo convert, checkpoints).
// From a byte-level BPE vocabulary (e.g. from GGUF), two files that transformers and smezo load back
// to the same ids:
//   tokenizer.json: {"version": "1.0", "model": {"type": "BPE", "vocab": {spelling: id, every token},
//     "merges": [["a", "b"], ...], "ignore_merges", "unk_token": the missing-byte token or null,
//     dropout null, byte_fallback false}, "added_tokens": [control tokens (special: true) and
//     user-defined ones (special: false), each {"id", "content", "single_word", "lstrip", "rstrip",
//     "normalized", "special"}], "normalizer": null (NFC if the source has it), "pre_tokenizer": Sequence[one step per regex
//     stage: Digits(individual_digits) for \p{N}, Split(Regex, Isolated) for others,
//     ByteLevel(add_prefix_space false, use_regex true when GPT-2's regex is the last stage, else
//     false)], "post_processor": TemplateProcessing [BOS, $A] when the model adds BOS, else
//     ByteLevel, "decoder": ByteLevel}
//   tokenizer_config.json: {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token", "eos_token",
//     "unk_token", "pad_token" (names, or null), "add_bos_token", "add_eos_token": false,
//     "clean_up_tokenization_spaces": false, "model_max_length", and "chat_template" when the GGUF
//     has tokenizer.chat_template (so apply_chat_template works on the converted folder)}
// From a sentencepiece .model (copied as tokenizer.model; with a tokenizer.json where
// sentencepiece_needs_tokenizer_json), the tokenizer_config.json for
// AutoTokenizer: {"tokenizer_class": "LlamaTokenizer" (PreTrainedTokenizerFast with our tokenizer.json), "bos_token", "eos_token", "unk_token" (pieces,
// or null), "pad_token": null, "add_bos_token" (tokenizer_wants_bos), "add_eos_token": false,
// "clean_up_tokenization_spaces": false, "legacy": true (sentencepiece's own encoding), "model_max_length"}.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/bpe_vocab.h"
#include "tokenizer/sentencepiece_proto.h"

namespace smezo {

std::string bpe_tokenizer_json(const BpeVocab& vocab);
std::string bpe_tokenizer_config_json(const BpeVocab& vocab, int64_t model_max_length,
                                      const std::string& chat_template = "");
std::string sentencepiece_tokenizer_config_json(const std::string& model_path, int64_t model_max_length);
// A sentencepiece BPE model whose identity normalizer removes extra whitespace (stories260K's): transformers'
// own conversion of its tokenizer.model keeps runs of spaces, so a tokenizer.json is written beside it.
bool sentencepiece_needs_tokenizer_json(const SentencepieceModelInfo& model);
// That tokenizer.json: transformers' LlamaConverter layout (BPE with byte fallback, its merges from the
// vocabulary, Metaspace) plus sentencepiece's whitespace rule as normalizer Replace steps; bos: its piece.
std::string sentencepiece_tokenizer_json(const SentencepieceModelInfo& model, const std::string& bos);

// Puts the tokenizer from tokenizer_path (OpenedTokenizer::path) into dir; returns the names:
//   *.gguf          tokenizer.json + tokenizer_config.json rebuilt from its metadata;
//   a directory     its tokenizer files copied (tokenizer_file_names());
//   *.json          copied as tokenizer.json, with the tokenizer_config.json beside it if any;
//   anything else   copied as tokenizer.model (sentencepiece), with a tokenizer_config.json.
// "" writes nothing. Errors name the file that could not be read or written.
std::vector<std::string> save_tokenizer_files(const std::string& tokenizer_path, const std::string& dir,
                                              int64_t model_max_length);

// Every name save_tokenizer_files may write (a checkpoint folder may hold them).
const std::vector<std::string>& tokenizer_file_names();

}  // namespace smezo
