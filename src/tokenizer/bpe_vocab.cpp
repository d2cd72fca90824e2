// Byte-level BPE vocabularies: validation and the tokenizer.json loader (subset: bpe_vocab.h).
#include "tokenizer/bpe_vocab.h"

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/file_util.h"
#include "common/input_file.h"
#include "formats/json_read.h"  // json_brief, json_number
#include "tokenizer/bpe_bytes.h"
#include "tokenizer/bpe_pretokenizer.h"

namespace smezo {

void bpe_vocab_validate(const BpeVocab& v) {
  const char* src = v.source.c_str();
  const int64_t n = static_cast<int64_t>(v.tokens.size());
  SMEZO_REQUIRE(n > 0, "%s: the BPE vocabulary is empty", src);
  SMEZO_REQUIRE(n < (int64_t{1} << 31), "%s: %lld tokens do not fit 32-bit ids", src, (long long)n);
  SMEZO_REQUIRE(static_cast<int64_t>(v.types.size()) == n, "%s: %zu token types for %lld tokens", src,
                v.types.size(), (long long)n);
  std::unordered_map<std::string, int32_t> id_of;
  id_of.reserve(v.tokens.size());
  for (int32_t i = 0; i < n; i++) {
    SMEZO_REQUIRE(v.types[i] >= BPE_TOKEN_NORMAL && v.types[i] <= BPE_TOKEN_BYTE,
                  "%s: token %d has type %d, expected 1..6 (normal .. byte)", src, i, v.types[i]);
    id_of.emplace(v.tokens[i], i);
  }
  SMEZO_REQUIRE(id_of.count(bpe_bytes_to_spelling(" ")), "%s: the space's byte-level character \"\u0120\" is not a "
                "token: not a byte-level (GPT-2 style) BPE vocabulary", src);
  for (size_t r = 0; r < v.merges.size(); r++) {
    const auto& m = v.merges[r];
    SMEZO_REQUIRE(id_of.count(m.first) && id_of.count(m.second), "%s: merge %zu (\"%s\" \"%s\") names a token "
                  "that is not in the vocabulary", src, r, m.first.c_str(), m.second.c_str());
    SMEZO_REQUIRE(id_of.count(m.first + m.second), "%s: merge %zu (\"%s\" \"%s\") makes \"%s\", which is not "
                  "in the vocabulary", src, r, m.first.c_str(), m.second.c_str(), (m.first + m.second).c_str());
  }
  const std::pair<const char*, int32_t> specials[] = {
      {"BOS", v.bos_id}, {"EOS", v.eos_id}, {"UNK", v.unk_id}, {"PAD", v.pad_id}, {"missing-byte", v.missing_byte_id}};
  for (const auto& s : specials)
    SMEZO_REQUIRE(s.second >= -1 && s.second < n, "%s: %s token id %d outside the %lld-token vocabulary", src,
                  s.first, s.second, (long long)n);
  SMEZO_REQUIRE(!v.add_bos || v.bos_id >= 0, "%s: the tokenizer asks for BOS but names no BOS token", src);
  SMEZO_REQUIRE(!v.pre_patterns.empty(), "%s: no pre-tokeniser", src);
}

// --- tokenizer.json

namespace {

using json = nlohmann::json;

// n = the largest id + 1 of `listed` tokens: bounded before n entries are allocated (ids have no holes).
void require_vocab_size(int64_t n, int64_t listed, const std::string& path) {
  SMEZO_REQUIRE(n > 0, "%s: the vocabulary is empty (no token is listed) ---> HINT: is it the tokenizer you meant?",
                path.c_str());
  SMEZO_REQUIRE(n <= listed && n < (int64_t{1} << 31), "%s: token ids run to %lld, but %lld tokens are listed (ids "
                "must run 0..N-1 without holes)", path.c_str(), (long long)n - 1, (long long)listed);
}

json read_json_object(const std::string& path) {
  const std::string text = input_read(path, "tokenizer", kInputTextMaxBytes);
  SMEZO_REQUIRE(!text.empty(), "%s is empty", path.c_str());
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw_error("%s is not valid JSON (%s)", path.c_str(), e.what());
  }
  SMEZO_REQUIRE(j.is_object(), "%s is a JSON %s, expected an object", path.c_str(), j.type_name());
  return j;
}

// A field that must be absent, null or the given neutral value.
void require_neutral(const json& obj, const char* key, const json& neutral, const std::string& where) {
  if (!obj.contains(key) || obj[key].is_null() || obj[key] == neutral) return;
  throw_error("%s: %s = %s is not supported by smezo's BPE tokenizer", where.c_str(), key, obj[key].dump().c_str());
}

// A regex that matches text literally.
std::string regex_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::string(".^$|?*+()[]{}\\/-").find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

// Appends the regex stages of one pre_tokenizer step; *byte_level: set by ByteLevel (the last step).
void parse_pre_step(const json& step, const std::string& where, std::vector<std::string>* patterns,
                    bool* byte_level) {
  SMEZO_REQUIRE(step.is_object() && step.contains("type"), "%s: pre_tokenizer step %s has no type", where.c_str(),
                step.dump().c_str());
  SMEZO_REQUIRE(!*byte_level, "%s: pre_tokenizer step %s comes after ByteLevel; smezo supports ByteLevel only "
                "as the last step", where.c_str(), step.dump().c_str());
  const std::string type = step["type"].get<std::string>();
  if (type == "Sequence") {
    for (const json& inner : step.at("pretokenizers")) parse_pre_step(inner, where, patterns, byte_level);
  } else if (type == "ByteLevel") {
    // HF's default add_prefix_space is true, so an absent field means true too.
    SMEZO_REQUIRE(step.contains("add_prefix_space") && step["add_prefix_space"] == false,
                  "%s: pre_tokenizer ByteLevel with add_prefix_space = true is not supported (only false, as "
                  "GPT-2, OPT and SmolLM2 use)", where.c_str());
    if (step.value("use_regex", true)) patterns->push_back(kBpeGpt2Pattern);
    *byte_level = true;
  } else if (type == "Digits") {
    patterns->push_back(step.value("individual_digits", false) ? kBpeDigitPattern : "\\p{N}+");
  } else if (type == "Split") {
    const std::string behavior = step.value("behavior", std::string());
    SMEZO_REQUIRE(behavior == "Isolated", "%s: pre_tokenizer Split with behavior \"%s\" is not supported "
                  "(only \"Isolated\")", where.c_str(), behavior.c_str());
    SMEZO_REQUIRE(!step.value("invert", false), "%s: pre_tokenizer Split with invert = true is not supported",
                  where.c_str());
    const json& pattern = step.at("pattern");
    if (pattern.contains("Regex")) {
      patterns->push_back(pattern["Regex"].get<std::string>());
    } else if (pattern.contains("String")) {
      patterns->push_back(regex_escape(pattern["String"].get<std::string>()));
    } else {
      throw_error("%s: pre_tokenizer Split pattern %s is neither Regex nor String", where.c_str(),
                  pattern.dump().c_str());
    }
  } else {
    throw_error("%s: pre_tokenizer type \"%s\" is not supported (supported: ByteLevel, Digits, Split, Sequence)",
                where.c_str(), type.c_str());
  }
}

// BOS from the post_processor: *bos_name is set when it prepends a token to every sequence.
void parse_post_processor(const json& pp, const std::string& where, std::string* bos_name) {
  if (pp.is_null()) return;
  const std::string type = pp.at("type").get<std::string>();
  if (type == "ByteLevel") return;  // only trims offsets
  if (type == "Sequence") {
    for (const json& inner : pp.at("processors")) parse_post_processor(inner, where, bos_name);
    return;
  }
  SMEZO_REQUIRE(type == "TemplateProcessing", "%s: post_processor type \"%s\" is not supported (supported: "
                "TemplateProcessing, ByteLevel, Sequence)", where.c_str(), type.c_str());
  const json& single = pp.at("single");
  const size_t n = single.size();
  const bool ends_with_a = n >= 1 && single[n - 1].contains("Sequence");
  SMEZO_REQUIRE(ends_with_a && n <= 2, "%s: post_processor template %s is not supported (only [$A] or [BOS, $A]: "
                "smezo never appends EOS)", where.c_str(), single.dump().c_str());
  if (n == 2) {
    SMEZO_REQUIRE(single[0].contains("SpecialToken"), "%s: post_processor template %s is not supported",
                  where.c_str(), single.dump().c_str());
    const std::string name = single[0]["SpecialToken"].at("id").get<std::string>();
    const json& ids = pp.at("special_tokens").at(name).at("ids");
    SMEZO_REQUIRE(ids.size() == 1, "%s: post_processor special token \"%s\" has %zu ids, expected 1",
                  where.c_str(), name.c_str(), ids.size());
    *bos_name = name;
  }
}

// "bos_token": "<s>" or {"content": "<s>", ...}; "" when absent or null.
std::string config_token(const json& config, const char* key) {
  if (!config.contains(key) || config[key].is_null()) return "";
  const json& t = config[key];
  return t.is_string() ? t.get<std::string>() : t.at("content").get<std::string>();
}

bool is_true(const json& obj, const char* key) {
  return obj.contains(key) && obj[key].is_boolean() && obj[key].get<bool>();
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// tokenizer_config.json / special_tokens_map.json in dir (ending in '/'), when present. mark_special:
// the named special tokens become control tokens (user-defined where added_tokens_decoder says so).
void apply_hf_config(const std::string& dir, bool mark_special, BpeVocab* v) {
  for (const char* name : {"special_tokens_map.json", "tokenizer_config.json"}) {  // the config wins
    const std::string path = dir + name;
    if (!is_file(path)) continue;
    const json config = read_json_object(path);
    std::unordered_map<std::string, int32_t> id_of;
    for (int32_t i = 0; i < static_cast<int32_t>(v->tokens.size()); i++) id_of.emplace(v->tokens[i], i);
    auto lookup = [&](const std::string& token, const char* field) {
      auto it = id_of.find(token);
      SMEZO_REQUIRE(it != id_of.end(), "%s: %s \"%s\" is not a token", path.c_str(), field, token.c_str());
      return it->second;
    };
    try {
      if (mark_special && config.contains("added_tokens_decoder") && config["added_tokens_decoder"].is_object()) {
        for (auto it = config["added_tokens_decoder"].begin(); it != config["added_tokens_decoder"].end(); ++it) {
          char* end = nullptr;
          const long long id = std::strtoll(it.key().c_str(), &end, 10);
          const std::string content = it.value().at("content").get<std::string>();
          SMEZO_REQUIRE(!it.key().empty() && *end == '\0' && id >= 0 && id < static_cast<int64_t>(v->tokens.size()) &&
                        v->tokens[id] == content, "%s: added_tokens_decoder entry \"%s\" (\"%s\") is not that id's "
                        "token in vocab.json", path.c_str(), it.key().c_str(), content.c_str());
          v->types[id] = it.value().value("special", true) ? BPE_TOKEN_CONTROL : BPE_TOKEN_USER_DEFINED;
        }
      }
      if (mark_special && config.contains("additional_special_tokens") && config["additional_special_tokens"].is_array())
        for (const json& t : config["additional_special_tokens"])
          v->types[lookup(t.is_string() ? t.get<std::string>() : t.at("content").get<std::string>(),
                          "additional_special_tokens")] = BPE_TOKEN_CONTROL;
      const struct {
        const char* key;
        int32_t* id;
      } named[] = {{"bos_token", &v->bos_id}, {"eos_token", &v->eos_id}, {"unk_token", &v->unk_id},
                   {"pad_token", &v->pad_id}};
      for (const auto& t : named) {
        const std::string token = config_token(config, t.key);
        if (token.empty()) continue;
        *t.id = lookup(token, t.key);
        if (mark_special) v->types[*t.id] = BPE_TOKEN_CONTROL;
      }
      if (is_true(config, "add_bos_token")) v->add_bos = true;
      SMEZO_REQUIRE(!is_true(config, "add_eos_token"), "%s: add_eos_token = true is not supported (smezo never "
                    "appends EOS)", path.c_str());
      SMEZO_REQUIRE(!is_true(config, "add_prefix_space"), "%s: add_prefix_space = true is not supported",
                    path.c_str());
    } catch (const json::exception& e) {
      throw_error("%s: malformed (%s)", path.c_str(), e.what());
    }
  }
}

// A token's id as a JSON file gives it: an integer in [0, 2^31), checked before it is converted (a float
// or a huge number would not fit an int64: undefined behaviour in the conversion).
int64_t token_id(const json& id, const char* what, const std::string& name, const std::string& path) {
  const std::optional<int64_t> i = json_number<int64_t>(id);
  SMEZO_REQUIRE(i && *i >= 0 && *i < (int64_t{1} << 31), "%s: %s \"%s\" has id %s, not an integer in [0, 2^31)",
                path.c_str(), what, printable(name, 80).c_str(), printable(json_brief(id), 80).c_str());
  return *i;
}

// The model's vocab, then added_tokens (which may reuse a vocab id or extend it), without holes.
void read_json_tokens(const json& root, const json& model, const std::string& path, BpeVocab* v) {
  const json& vocab = model.at("vocab");
  SMEZO_REQUIRE(vocab.is_object(), "%s: model.vocab is not an object", path.c_str());
  const json added = root.value("added_tokens", json::array());
  int64_t n = 0;
  for (auto it = vocab.begin(); it != vocab.end(); ++it)
    n = std::max<int64_t>(n, token_id(it.value(), "token", it.key(), path) + 1);
  for (const json& a : added) {
    const json content = a.value("content", json());
    const std::string name = content.is_string() ? content.get<std::string>() : content.dump();
    n = std::max<int64_t>(n, token_id(a.at("id"), "added token", name, path) + 1);
  }
  require_vocab_size(n, static_cast<int64_t>(vocab.size() + added.size()), path);
  v->tokens.assign(n, std::string());
  v->types.assign(n, 0);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const int64_t id = it.value().get<int64_t>();  // checked above
    SMEZO_REQUIRE(v->types[id] == 0, "%s: id %lld is given to both \"%s\" and \"%s\"", path.c_str(),
                  (long long)id, v->tokens[id].c_str(), it.key().c_str());
    v->tokens[id] = it.key();
    v->types[id] = BPE_TOKEN_NORMAL;
  }
  for (const json& a : added) {
    const int64_t id = a.at("id").get<int64_t>();  // checked above
    const std::string content = a.at("content").get<std::string>();
    for (const char* flag : {"lstrip", "rstrip", "single_word"})
      SMEZO_REQUIRE(!a.value(flag, false), "%s: added token \"%s\" has %s = true, which is not supported",
                    path.c_str(), content.c_str(), flag);
    v->tokens[id] = content;  // HF spells an added token by its content
    v->types[id] = a.value("special", false) ? BPE_TOKEN_CONTROL : BPE_TOKEN_USER_DEFINED;
  }
  for (int64_t id = 0; id < n; id++)
    SMEZO_REQUIRE(v->types[id] != 0, "%s: no token has id %lld (ids must run 0..%lld without holes)",
                  path.c_str(), (long long)id, (long long)n - 1);
}

void read_tokenizer_json(const json& root, const std::string& path, BpeVocab* v) {
  SMEZO_REQUIRE(root.contains("model") && root["model"].is_object(), "%s: no \"model\" object", path.c_str());
  const json& model = root["model"];
  const std::string type = model.value("type", std::string("(none)"));
  SMEZO_REQUIRE(type == "BPE", "%s: model.type is \"%s\"; smezo's byte-level tokenizer reads BPE models (a "
                "sentencepiece model needs its tokenizer.model)", path.c_str(), type.c_str());
  const std::string where = path + ": model";
  require_neutral(model, "dropout", json(), where);
  require_neutral(model, "continuing_subword_prefix", "", where);
  require_neutral(model, "end_of_word_suffix", "", where);
  require_neutral(model, "byte_fallback", false, where);
  v->ignore_merges = model.value("ignore_merges", false);

  read_json_tokens(root, model, path, v);

  const json& merges = model.at("merges");
  v->merges.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); r++) {
    const json& m = merges[r];
    if (m.is_string()) {  // "a b": byte-level tokens never hold a real space
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      SMEZO_REQUIRE(space != std::string::npos && s.find(' ', space + 1) == std::string::npos,
                    "%s: merge %zu \"%s\" is not two tokens separated by one space", path.c_str(), r, s.c_str());
      v->merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else {
      SMEZO_REQUIRE(m.is_array() && m.size() == 2, "%s: merge %zu %s is not a pair", path.c_str(), r,
                    m.dump().c_str());
      v->merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    }
  }

  const json normalizer = root.value("normalizer", json());
  v->nfc = normalizer.is_object() && normalizer.size() == 1 && normalizer.value("type", std::string()) == "NFC";
  SMEZO_REQUIRE(normalizer.is_null() || v->nfc, "%s: normalizer %s is not supported (only null, or {\"type\": "
                "\"NFC\"} as Qwen's)", path.c_str(), normalizer.dump().c_str());
  bool byte_level = false;
  SMEZO_REQUIRE(root.contains("pre_tokenizer") && !root["pre_tokenizer"].is_null(), "%s: no pre_tokenizer; smezo "
                "reads byte-level BPE (GPT-2 style) tokenizers only", path.c_str());
  parse_pre_step(root["pre_tokenizer"], path, &v->pre_patterns, &byte_level);
  SMEZO_REQUIRE(byte_level, "%s: pre_tokenizer has no ByteLevel step; smezo reads byte-level BPE (GPT-2 style) "
                "tokenizers only", path.c_str());
  const json decoder = root.value("decoder", json());
  SMEZO_REQUIRE(decoder.is_object() && decoder.value("type", std::string()) == "ByteLevel", "%s: decoder %s is not "
                "supported (only ByteLevel)", path.c_str(), decoder.dump().c_str());

  std::string bos_name;
  parse_post_processor(root.value("post_processor", json()), path, &bos_name);

  std::unordered_map<std::string, int32_t> id_of;
  for (int32_t i = 0; i < static_cast<int32_t>(v->tokens.size()); i++) id_of.emplace(v->tokens[i], i);
  auto lookup = [&](const std::string& name, const std::string& field) {
    auto it = id_of.find(name);
    SMEZO_REQUIRE(it != id_of.end(), "%s: %s \"%s\" is not a token", path.c_str(), field.c_str(), name.c_str());
    return it->second;
  };
  if (model.contains("unk_token") && !model["unk_token"].is_null()) {
    v->unk_id = lookup(model["unk_token"].get<std::string>(), "model.unk_token");
    v->missing_byte_id = v->unk_id;  // HF's BPE gives unk for a character it has no token for
  }
  if (!bos_name.empty()) {
    v->bos_id = lookup(bos_name, "post_processor BOS");
    v->add_bos = true;
  }

  const int32_t template_bos = v->bos_id;
  apply_hf_config(dir_of(path), false, v);
  SMEZO_REQUIRE(template_bos < 0 || v->bos_id == template_bos, "%s: tokenizer_config.json's bos_token \"%s\" "
                "differs from the BOS \"%s\" that the post_processor prepends", path.c_str(),
                v->tokens[v->bos_id].c_str(), bos_name.c_str());
}

}  // namespace

BpeVocab bpe_vocab_from_tokenizer_json(const std::string& path) {
  const json root = read_json_object(path);
  BpeVocab v;
  v.source = path;
  try {
    read_tokenizer_json(root, path, &v);
  } catch (const json::exception& e) {
    throw_error("%s: malformed tokenizer.json (%s)", path.c_str(), e.what());
  }
  bpe_vocab_validate(v);
  return v;
}

// --- vocab.json + merges.txt (GPT-2's own files, which OPT's repositories ship)

BpeVocab bpe_vocab_from_gpt2_files(const std::string& dir_in) {
  const std::string dir = dir_in.empty() || dir_in.back() == '/' ? dir_in : dir_in + "/";
  const std::string vocab_path = dir + "vocab.json", merges_path = dir + "merges.txt";
  BpeVocab v;
  v.source = vocab_path;
  const json vocab = read_json_object(vocab_path);
  int64_t n = 0;
  try {
    for (auto it = vocab.begin(); it != vocab.end(); ++it)
      n = std::max<int64_t>(n, token_id(it.value(), "token", it.key(), vocab_path) + 1);
    require_vocab_size(n, static_cast<int64_t>(vocab.size()), vocab_path);
    v.tokens.assign(n, std::string());
    v.types.assign(n, 0);
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
      const int64_t id = it.value().get<int64_t>();  // checked above
      SMEZO_REQUIRE(v.types[id] == 0, "%s: token \"%s\" has id %lld, already taken", vocab_path.c_str(),
                    it.key().c_str(), (long long)id);
      v.tokens[id] = it.key();
      v.types[id] = BPE_TOKEN_NORMAL;
    }
  } catch (const json::exception& e) {
    throw_error("%s: malformed vocab.json (%s)", vocab_path.c_str(), e.what());
  }
  for (int64_t id = 0; id < n; id++)
    SMEZO_REQUIRE(v.types[id] != 0, "%s: no token has id %lld (ids must run 0..%lld without holes)",
                  vocab_path.c_str(), (long long)id, (long long)n - 1);

  const std::string text = input_read(merges_path, "tokenizer", kInputTextMaxBytes);
  size_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    line_no++;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t space = line.find(' ');
    SMEZO_REQUIRE(space != std::string::npos && line.find(' ', space + 1) == std::string::npos,
                  "%s:%zu: \"%s\" is not two tokens separated by one space", merges_path.c_str(), line_no,
                  line.c_str());
    v.merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  v.pre_patterns = {kBpeGpt2Pattern};  // GPT-2's ByteLevel(use_regex), no prefix space
  apply_hf_config(dir, true, &v);
  bpe_vocab_validate(v);
  return v;
}

}  // namespace smezo
