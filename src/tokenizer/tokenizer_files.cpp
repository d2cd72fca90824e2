// Tokenizer files for Hugging Face model directories (see tokenizer_files.h).
#include "tokenizer/tokenizer_files.h"

#include <cerrno>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/input_file.h"
#include "common/file_util.h"
#include "formats/gguf.h"
#include "tokenizer/bpe_pretokenizer.h"
#include "tokenizer/sentencepiece_proto.h"
#include "tokenizer/tokenizer.h"

namespace smezo {

namespace {

using nlohmann::json;

void copy_file(const std::string& from, const std::string& to) {
  const std::string bytes = input_read(from, "tokenizer file", kInputTextMaxBytes);
  std::ofstream out(to, std::ios::binary);
  out << bytes;
  out.close();
  if (!out.good()) throw_write_error("write", to, errno);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out.good()) throw_write_error("write", path, errno);
}

json token_name(const BpeVocab& v, int32_t id) { return id >= 0 ? json(v.tokens[id]) : json(); }

}  // namespace

std::string bpe_tokenizer_json(const BpeVocab& v) {
  json model = {{"type", "BPE"}, {"dropout", nullptr}, {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
                {"ignore_merges", v.ignore_merges}, {"unk_token", token_name(v, v.missing_byte_id)}};
  json vocab = json::object();
  for (size_t i = 0; i < v.tokens.size(); i++) vocab[v.tokens[i]] = static_cast<int64_t>(i);
  model["vocab"] = std::move(vocab);
  json merges = json::array();
  for (const auto& m : v.merges) merges.push_back({m.first, m.second});
  model["merges"] = std::move(merges);

  json added = json::array();
  for (size_t i = 0; i < v.tokens.size(); i++) {
    if (v.types[i] != BPE_TOKEN_CONTROL && v.types[i] != BPE_TOKEN_USER_DEFINED) continue;
    const bool special = v.types[i] == BPE_TOKEN_CONTROL;
    added.push_back({{"id", static_cast<int64_t>(i)}, {"content", v.tokens[i]}, {"single_word", false},
                     {"lstrip", false}, {"rstrip", false}, {"normalized", !special}, {"special", special}});
  }

  json steps = json::array();
  bool gpt2_last = false;
  for (size_t i = 0; i < v.pre_patterns.size(); i++) {
    const std::string& p = v.pre_patterns[i];
    if (p == kBpeGpt2Pattern && i + 1 == v.pre_patterns.size()) {
      gpt2_last = true;
    } else if (p == kBpeDigitPattern) {
      steps.push_back({{"type", "Digits"}, {"individual_digits", true}});
    } else {
      steps.push_back({{"type", "Split"}, {"pattern", {{"Regex", p}}}, {"behavior", "Isolated"}, {"invert", false}});
    }
  }
  steps.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                   {"use_regex", gpt2_last}});

  json post = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}};
  if (v.add_bos) {
    const std::string bos = v.tokens[v.bos_id];
    post = {{"type", "TemplateProcessing"},
            {"single", json::array({{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}},
                                    {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
            {"pair", json::array({{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}},
                                  {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                  {{"SpecialToken", {{"id", bos}, {"type_id", 1}}}},
                                  {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}})},
            {"special_tokens", {{bos, {{"id", bos}, {"ids", {v.bos_id}}, {"tokens", {bos}}}}}}};
  }
  json root = {{"version", "1.0"},
               {"truncation", nullptr},
               {"padding", nullptr},
               {"added_tokens", std::move(added)},
               {"normalizer", v.nfc ? json{{"type", "NFC"}} : json()},
               {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", std::move(steps)}}},
               {"post_processor", std::move(post)},
               {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true},
                            {"use_regex", true}}},
               {"model", std::move(model)}};
  return root.dump(1) + "\n";
}

std::string bpe_tokenizer_config_json(const BpeVocab& v, int64_t model_max_length, const std::string& chat_template) {
  json j = {{"tokenizer_class", "PreTrainedTokenizerFast"},
            {"bos_token", token_name(v, v.bos_id)},
            {"eos_token", token_name(v, v.eos_id)},
            {"unk_token", token_name(v, v.unk_id)},
            {"pad_token", token_name(v, v.pad_id)},
            {"add_bos_token", v.add_bos},
            {"add_eos_token", false},
            {"clean_up_tokenization_spaces", false},
            {"model_max_length", model_max_length}};
  if (!chat_template.empty()) j["chat_template"] = chat_template;
  return j.dump(2) + "\n";
}

namespace {

// transformers' generate_merges for a sentencepiece BPE vocabulary: every split of every piece (at
// code-point boundaries) into two pieces of the vocabulary, ordered by the piece's id, then by the
// left part's length.
json sentencepiece_merges(const SentencepieceModelInfo& m) {
  std::map<std::string, int64_t> id_of;
  for (size_t i = 0; i < m.pieces.size(); i++) id_of.emplace(m.pieces[i].piece, static_cast<int64_t>(i));
  json merges = json::array();
  for (const SentencepieceModelInfo::Piece& p : m.pieces) {
    const std::string& s = p.piece;
    for (size_t cut = 1; cut < s.size(); cut++) {
      if ((static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) continue;  // inside a UTF-8 sequence
      if (id_of.count(s.substr(0, cut)) && id_of.count(s.substr(cut))) merges.push_back({s.substr(0, cut), s.substr(cut)});
    }
  }
  return merges;
}

}  // namespace

bool sentencepiece_needs_tokenizer_json(const SentencepieceModelInfo& m) {
  return m.model_type == 2 && m.normalizer == "identity" && m.remove_extra_whitespaces;
}

std::string sentencepiece_tokenizer_json(const SentencepieceModelInfo& m, const std::string& bos) {
  json vocab = json::object(), added = json::array();
  for (size_t i = 0; i < m.pieces.size(); i++) {
    const SentencepieceModelInfo::Piece& p = m.pieces[i];
    vocab[p.piece] = static_cast<int64_t>(i);
    if (p.type == SP_PIECE_UNKNOWN || p.type == SP_PIECE_CONTROL || p.type == SP_PIECE_USER_DEFINED)
      added.push_back({{"id", static_cast<int64_t>(i)}, {"content", p.piece}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", false}, {"special", p.type != SP_PIECE_USER_DEFINED}});
  }
  std::string unk;
  for (const SentencepieceModelInfo::Piece& p : m.pieces)
    if (p.type == SP_PIECE_UNKNOWN) unk = p.piece;
  const std::string space = "\xe2\x96\x81";  // U+2581, sentencepiece's word boundary
  // remove_extra_whitespaces: no leading or trailing spaces, runs of spaces as one (sentencepiece's rule)
  json normalizer = {{"type", "Sequence"},
                     {"normalizers", {{{"type", "Replace"}, {"pattern", {{"Regex", "\\A +| +\\z"}}}, {"content", ""}},
                                      {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", " "}}}}};
  json decoders = {{{"type", "Replace"}, {"pattern", {{"String", space}}}, {"content", " "}},
                   {{"type", "ByteFallback"}}, {{"type", "Fuse"}}};
  if (m.add_dummy_prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  json post = nullptr;
  if (!bos.empty())
    post = {{"type", "TemplateProcessing"},
            {"single", {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"pair", {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                      {{"SpecialToken", {{"id", bos}, {"type_id", 1}}}}, {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
            {"special_tokens", {{bos, {{"id", bos}, {"ids", {vocab[bos]}}, {"tokens", {bos}}}}}}};
  json model = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", unk.empty() ? json() : json(unk)},
                {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr}, {"fuse_unk", true},
                {"byte_fallback", true}, {"ignore_merges", false}, {"vocab", std::move(vocab)},
                {"merges", sentencepiece_merges(m)}};
  json root = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", std::move(added)},
               {"normalizer", std::move(normalizer)},
               {"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", space},
                                  {"prepend_scheme", m.add_dummy_prefix ? "always" : "never"}, {"split", false}}},
               {"post_processor", std::move(post)}, {"decoder", {{"type", "Sequence"}, {"decoders", decoders}}},
               {"model", std::move(model)}};
  return root.dump(1) + "\n";
}

std::string sentencepiece_tokenizer_config_json(const std::string& model_path, int64_t model_max_length) {
  const SentencepieceSpecialPieces p = sentencepiece_special_pieces(model_path);
  auto name = [](const std::string& piece) { return piece.empty() ? json() : json(piece); };
  // With our tokenizer.json beside it, the class that reads that file whole: transformers 5's LlamaTokenizer
  // keeps only its vocabulary and merges and drops the normalizer that holds sentencepiece's whitespace rule.
  const bool own_json = sentencepiece_needs_tokenizer_json(read_sentencepiece_model_info(model_path));
  json j = {{"tokenizer_class", own_json ? "PreTrainedTokenizerFast" : "LlamaTokenizer"},
            {"bos_token", name(p.bos)},
            {"eos_token", name(p.eos)},
            {"unk_token", name(p.unk)},
            {"pad_token", nullptr},
            {"add_bos_token", !p.bos.empty()},  // as tokenizer_wants_bos: sentencepiece models prepend theirs
            {"add_eos_token", false},
            {"clean_up_tokenization_spaces", false},
            {"legacy", true},
            {"model_max_length", model_max_length}};
  return j.dump(2) + "\n";
}

const std::vector<std::string>& tokenizer_file_names() {
  static const std::vector<std::string> names = {"tokenizer.model",         "tokenizer.json", "tokenizer_config.json",
                                                 "special_tokens_map.json", "vocab.json",     "merges.txt"};
  return names;
}

std::vector<std::string> save_tokenizer_files(const std::string& tokenizer_path, const std::string& dir,
                                              int64_t model_max_length) {
  std::vector<std::string> written;
  if (tokenizer_path.empty()) return written;
  if (ends_with(tokenizer_path, ".gguf")) {
    const std::shared_ptr<GgufFile> gguf = GgufFile::open(tokenizer_path);
    const BpeVocab v = bpe_vocab_from_gguf(*gguf);
    write_text(dir + "/tokenizer.json", bpe_tokenizer_json(v));
    write_text(dir + "/tokenizer_config.json", bpe_tokenizer_config_json(v, model_max_length,
                                                                         gguf->get_string_or("tokenizer.chat_template", "")));
    return {"tokenizer.json", "tokenizer_config.json"};
  }
  if (is_dir(tokenizer_path)) {
    for (const std::string& name : tokenizer_file_names()) {
      if (!is_file(tokenizer_path + "/" + name)) continue;
      copy_file(tokenizer_path + "/" + name, dir + "/" + name);
      written.push_back(name);
    }
    return written;
  }
  if (ends_with(tokenizer_path, ".json")) {
    copy_file(tokenizer_path, dir + "/tokenizer.json");
    written.push_back("tokenizer.json");
    const size_t slash = tokenizer_path.find_last_of('/');
    const std::string beside =
        (slash == std::string::npos ? std::string() : tokenizer_path.substr(0, slash + 1)) + "tokenizer_config.json";
    if (is_file(beside)) {
      copy_file(beside, dir + "/tokenizer_config.json");
      written.push_back("tokenizer_config.json");
    }
    return written;
  }
  copy_file(tokenizer_path, dir + "/tokenizer.model");
  write_text(dir + "/tokenizer_config.json", sentencepiece_tokenizer_config_json(tokenizer_path, model_max_length));
  const SentencepieceModelInfo info = read_sentencepiece_model_info(tokenizer_path);
  if (!sentencepiece_needs_tokenizer_json(info)) return {"tokenizer.model", "tokenizer_config.json"};
  write_text(dir + "/tokenizer.json",
             sentencepiece_tokenizer_json(info, sentencepiece_special_pieces(tokenizer_path).bos));
  return {"tokenizer.model", "tokenizer_config.json", "tokenizer.json"};
}

}  // namespace smezo
