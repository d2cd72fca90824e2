// The byte-level BPE tokenizer: alphabet and UTF-8 handling, the merge loop against a naive
// reference, the PCRE2 pre-tokeniser, the tokenizer.json loader and its errors, and ids
// against Hugging Face on two small committed vocabularies (tests/fixtures/bpe, written by
// tools/oracles/bpe_oracle.py tiny).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "test_util.h"
#include "tokenizer/bpe_bytes.h"
#include "tokenizer/bpe_merge.h"
#include "tokenizer/bpe_pretokenizer.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/bpe_vocab.h"

using namespace smezo;
using json = nlohmann::json;
using smezo_test::error_of;
using testing::HasSubstr;

namespace {

const std::string kFixtures = "tests/fixtures/bpe/";

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

struct FixtureCase {
  json line;
  std::string text;  // the raw bytes handed to encode
};

std::vector<FixtureCase> read_fixture(const std::string& path, const std::string& vocab = "") {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << "cannot read " << path;
  std::vector<FixtureCase> cases;
  std::string line;
  while (std::getline(f, line)) {
    json j = json::parse(line);
    if (!vocab.empty() && j.value("vocab", std::string()) != vocab) continue;
    FixtureCase c;
    c.text = j.contains("hex") ? from_hex(j["hex"].get<std::string>()) : j["text"].get<std::string>();
    c.line = std::move(j);
    cases.push_back(std::move(c));
  }
  return cases;
}

std::string shown(const std::string& text) {
  std::string out = text.size() > 60 ? text.substr(0, 60) + "..." : text;
  return json(utf8_sanitize(out)).dump();
}

// Encode every case, compare ids and decode with HF's; returns the number that agree.
int check_against_fixture(const Tokenizer& tok, const std::vector<FixtureCase>& cases) {
  int agree = 0;
  for (const FixtureCase& c : cases) {
    const std::vector<int32_t> expected = c.line["ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> got = tok.encode(c.text, false);
    EXPECT_EQ(got, expected) << "text " << shown(c.text);
    agree += got == expected;
    const std::string decoded = c.line.contains("decoded") ? c.line["decoded"].get<std::string>() : c.text;
    EXPECT_EQ(tok.decode(expected), decoded) << "text " << shown(c.text);
    // Streaming pieces are raw bytes; together they are the decoded text.
    std::string streamed;
    for (size_t i = 0; i < expected.size(); i++) streamed += tok.decode_piece(i ? expected[i - 1] : -1, expected[i]);
    EXPECT_EQ(utf8_sanitize(streamed), decoded) << "text " << shown(c.text);
  }
  return agree;
}

std::unique_ptr<BpeTokenizer> tiny(const std::string& name) {
  return std::make_unique<BpeTokenizer>(bpe_vocab_from_tokenizer_json(kFixtures + name + "/tokenizer.json"));
}

// Straightforward BPE: merge the lowest-rank adjacent pair, leftmost first, until none.
std::vector<int32_t> naive_bpe(const BpeVocab& v, const std::string& word) {
  std::map<std::string, int32_t> id_of;
  for (size_t i = 0; i < v.tokens.size(); i++) id_of.emplace(v.tokens[i], static_cast<int32_t>(i));
  std::map<std::pair<std::string, std::string>, size_t> rank;
  for (size_t r = 0; r < v.merges.size(); r++) rank[v.merges[r]] = r;  // a later duplicate wins
  std::vector<std::string> symbols;
  for (unsigned char b : word) symbols.push_back(bpe_bytes_to_spelling(std::string(1, static_cast<char>(b))));
  for (;;) {
    size_t best = SIZE_MAX, at = 0;
    for (size_t i = 0; i + 1 < symbols.size(); i++) {
      auto it = rank.find({symbols[i], symbols[i + 1]});
      if (it != rank.end() && it->second < best) best = it->second, at = i;
    }
    if (best == SIZE_MAX) break;
    symbols[at] += symbols[at + 1];
    symbols.erase(symbols.begin() + static_cast<long>(at) + 1);
  }
  std::vector<int32_t> ids;
  for (const auto& s : symbols) ids.push_back(id_of.at(s));
  return ids;
}

}  // namespace

// --- bytes and UTF-8

TEST(BpeBytes, AlphabetIsGpt2s) {
  std::set<uint32_t> seen;
  for (int b = 0; b < 256; b++) {
    uint32_t cp = bpe_byte_to_codepoint(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(cp).second) << "byte " << b;
    EXPECT_EQ(bpe_codepoint_to_byte(cp), b);
  }
  EXPECT_EQ(bpe_byte_to_codepoint(' '), 0x120u);   // 'Ġ'
  EXPECT_EQ(bpe_byte_to_codepoint('\n'), 0x10Au);  // 'Ċ'
  EXPECT_EQ(bpe_byte_to_codepoint('A'), uint32_t{'A'});
  EXPECT_EQ(bpe_byte_to_codepoint(0xE9), 0xE9u);   // 'é' is printable Latin-1
  EXPECT_EQ(bpe_byte_to_codepoint(0xAD), 0x143u);  // soft hyphen is the last remapped byte
  EXPECT_EQ(bpe_codepoint_to_byte(0x4E00), -1);
  EXPECT_EQ(bpe_token_bytes("\xC4\xA0hello"), " hello");
  EXPECT_EQ(bpe_token_bytes("<|im_start|>"), "<|im_start|>");
  EXPECT_EQ(bpe_token_bytes("\xE4\xBD\xA0"), "\xE4\xBD\xA0");  // not in the alphabet: its own text
  EXPECT_EQ(bpe_bytes_to_spelling(" a\n"), "\xC4\xA0" "a\xC4\x8A");
}

TEST(BpeBytes, SanitizeReplacesMaximalSubpartsLikePython) {
  const std::string fffd = "\xEF\xBF\xBD";
  // Expected values: Python's bytes.fromhex(h).decode("utf-8", "replace").
  EXPECT_EQ(utf8_sanitize(from_hex("ff")), fffd);
  EXPECT_EQ(utf8_sanitize(from_hex("61ff62")), "a" + fffd + "b");
  EXPECT_EQ(utf8_sanitize(from_hex("e282")), fffd);              // truncated: one
  EXPECT_EQ(utf8_sanitize(from_hex("e28241")), fffd + "A");
  EXPECT_EQ(utf8_sanitize(from_hex("eda080")), fffd + fffd + fffd);  // surrogate: three
  EXPECT_EQ(utf8_sanitize(from_hex("c0af")), fffd + fffd);      // overlong
  EXPECT_EQ(utf8_sanitize(from_hex("f4908080")), fffd + fffd + fffd + fffd);  // > U+10FFFF
  EXPECT_EQ(utf8_sanitize(from_hex("f09f98")), fffd);
  EXPECT_EQ(utf8_sanitize(from_hex("e4bda0e5a5bd80")), "\xE4\xBD\xA0\xE5\xA5\xBD" + fffd);
  const std::string valid = "caf\xC3\xA9 \xF0\x9F\x98\x80 \xE4\xBD\xA0";
  EXPECT_TRUE(utf8_is_valid(valid));
  EXPECT_EQ(utf8_sanitize(valid), valid);
  EXPECT_FALSE(utf8_is_valid(from_hex("c3")));
}

// --- merging

TEST(BpeMerge, LowestRankFirstThenLeftmost) {
  BpeMerger m;
  for (int b = 0; b < 256; b++) m.set_byte_id(static_cast<uint8_t>(b), b);
  const int32_t ab = 300, bc = 301, aa = 302, aaaa = 303;
  m.add_merge('b', 'c', bc, 0);
  m.add_merge('a', 'b', ab, 1);
  m.add_merge('a', 'a', aa, 2);
  m.add_merge(aa, aa, aaaa, 3);
  std::vector<int32_t> out;
  m.merge_word("abc", 3, &out);
  EXPECT_EQ(out, (std::vector<int32_t>{'a', bc}));  // bc outranks ab
  out.clear();
  m.merge_word("aaa", 3, &out);
  EXPECT_EQ(out, (std::vector<int32_t>{aa, 'a'}));  // leftmost pair first
  out.clear();
  m.merge_word("aaaaa", 5, &out);
  EXPECT_EQ(out, (std::vector<int32_t>{aaaa, 'a'}));
  out.clear();
  m.merge_word("x", 1, &out);
  m.merge_word("", 0, &out);
  EXPECT_EQ(out, (std::vector<int32_t>{'x'}));
}

TEST(BpeMerge, MatchesNaiveReferenceOnRandomWords) {
  auto tok = tiny("tiny_gpt2");
  const BpeVocab& v = tok->vocab();
  // Words drawn from the letters the vocabulary merges most, so long merge chains occur.
  const std::string letters = "etaoinshr";
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 300; trial++) {
    std::string word;
    const int len = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < len; i++) word += letters[rng() % letters.size()];
    EXPECT_EQ(tok->encode(word, false), naive_bpe(v, word)) << word;
  }
}

// --- pre-tokenisation

TEST(BpePreTokenizer, Gpt2AndSmollmSplits) {
  auto words_of = [](const BpePreTokenizer& pre, const std::string& text) {
    std::vector<std::pair<size_t, size_t>> ranges;
    pre.split(text, 0, text.size(), &ranges);
    std::vector<std::string> words;
    size_t expect_begin = 0;
    for (const auto& r : ranges) {
      EXPECT_EQ(r.first, expect_begin) << "the words must tile the text";
      expect_begin = r.second;
      words.push_back(text.substr(r.first, r.second - r.first));
    }
    EXPECT_EQ(expect_begin, text.size());
    return words;
  };
  using W = std::vector<std::string>;
  BpePreTokenizer gpt2({kBpeGpt2Pattern});
  EXPECT_EQ(words_of(gpt2, "Hello  world's 42 !!\t\n"), (W{"Hello", " ", " world", "'s", " 42", " !!", "\t\n"}));
  BpePreTokenizer smollm(bpe_pre_patterns_for_gguf("smollm", "test"));
  EXPECT_EQ(words_of(smollm, "a  12 b"), (W{"a", "  ", "1", "2", " b"}));
  // U+180E is PCRE2 whitespace but not Unicode White_Space (nor HF's \s).
  EXPECT_EQ(words_of(gpt2, "x \xE1\xA0\x8Ey"), (W{"x", " \xE1\xA0\x8E", "y"}));
  // Invalid UTF-8 must not crash the matcher; the words still tile the text.
  const std::string bad = from_hex("61ff20e282202020c0af62");
  words_of(gpt2, bad);
  words_of(smollm, bad);
}

TEST(BpePreTokenizer, WhitespaceRewriteAndErrors) {
  EXPECT_EQ(bpe_rewrite_whitespace_classes(R"(\s+(?!\S)|[^\s\p{L}]|\\s|\Q\s\E)"),
            R"(\p{White_Space}+(?!\P{White_Space})|[^\p{White_Space}\p{L}]|\\s|\Q\s\E)");
  EXPECT_THAT(error_of([] { BpePreTokenizer p({"(unclosed"}); }), HasSubstr("does not compile"));
  EXPECT_THAT(error_of([] { bpe_pre_patterns_for_gguf("falcon", "model.gguf"); }),
              HasSubstr("model.gguf: tokenizer.ggml.pre \"falcon\" is not a supported pre-tokeniser"));
}

// --- the tiny vocabularies against Hugging Face

TEST(BpeTokenizer, TinyVocabulariesMatchHuggingFace) {
  // tiny_gpt2_files: vocab.json + merges.txt + tokenizer_config.json (OPT's form)
  for (const char* name : {"tiny_gpt2", "tiny_smollm", "tiny_gpt2_files"}) {
    SCOPED_TRACE(name);
    auto tok = load_bpe_tokenizer_hf_dir(kFixtures + name);
    const auto cases = read_fixture(kFixtures + "tiny_ids.jsonl", name);
    ASSERT_GT(cases.size(), 90u);
    EXPECT_EQ(check_against_fixture(*tok, cases), static_cast<int>(cases.size()));
  }
}

TEST(BpeTokenizer, BosEosFromPostProcessorAndConfig) {
  auto gpt2 = tiny("tiny_gpt2");  // post_processor prepends <|endoftext|>
  EXPECT_TRUE(gpt2->add_bos_by_default());
  EXPECT_EQ(gpt2->bos_id(), 0);
  EXPECT_EQ(gpt2->eos_id(), -1);
  const std::vector<int32_t> plain = gpt2->encode("Hi", false);
  std::vector<int32_t> with_bos = {0};
  with_bos.insert(with_bos.end(), plain.begin(), plain.end());
  EXPECT_EQ(gpt2->encode("Hi", true), with_bos);
  EXPECT_EQ(gpt2->decode(with_bos), "Hi");

  auto smollm = tiny("tiny_smollm");  // no BOS template; tokenizer_config.json names them
  EXPECT_FALSE(smollm->add_bos_by_default());
  EXPECT_EQ(smollm->bos_id(), 1);
  EXPECT_EQ(smollm->eos_id(), 2);
  EXPECT_EQ(smollm->vocab().unk_id, 0);
  EXPECT_EQ(smollm->vocab_size(), 700);
  EXPECT_EQ(smollm->encode("Hi", true)[0], 1);
  EXPECT_EQ(smollm->decode_piece(5, 1), "");  // control tokens stream as nothing
  EXPECT_THAT(error_of([&] { smollm->decode({700}); }), HasSubstr("token id 700 outside"));
}

TEST(BpeTokenizer, Gpt2FilesSpecialTokensAndBos) {
  auto tok = std::make_unique<BpeTokenizer>(bpe_vocab_from_gpt2_files(kFixtures + "tiny_gpt2_files"));
  EXPECT_TRUE(tok->add_bos_by_default());  // add_bos_token: true, as OPT's config says
  EXPECT_EQ(tok->bos_id(), 0);
  EXPECT_EQ(tok->eos_id(), 0);
  EXPECT_EQ(tok->vocab().types[1], BPE_TOKEN_CONTROL);  // additional_special_tokens
  EXPECT_EQ(tok->vocab().types[3], BPE_TOKEN_NORMAL);
  EXPECT_EQ(tok->encode("<|im_start|>", false), std::vector<int32_t>{1});
  EXPECT_EQ(tokenizer_kind_of_hf_dir(kFixtures + "tiny_gpt2_files"), TOKENIZER_BPE);

  const std::string dir = smezo_test::make_temp_dir("bpe_gpt2_files");
  smezo_test::write_file(dir + "/vocab.json", smezo_test::read_file(kFixtures + "tiny_gpt2_files/vocab.json"));
  EXPECT_THAT(error_of([&] { load_bpe_tokenizer_hf_dir(dir); }), HasSubstr("neither tokenizer.json nor vocab.json"));
  smezo_test::write_file(dir + "/merges.txt", "#version: 0.2\n\xC4\xA0 t\nbad line here\n");
  EXPECT_THAT(error_of([&] { load_bpe_tokenizer_hf_dir(dir); }),
              HasSubstr("merges.txt:3: \"bad line here\" is not two tokens"));
  smezo_test::write_file(dir + "/merges.txt", "#version: 0.2\n\xC4\xA0 t\n");
  smezo_test::write_file(dir + "/tokenizer_config.json", R"({"add_eos_token": true})");
  EXPECT_THAT(error_of([&] { load_bpe_tokenizer_hf_dir(dir); }), HasSubstr("add_eos_token = true is not supported"));
  smezo_test::write_file(dir + "/tokenizer_config.json", R"({"bos_token": "<s>"})");
  EXPECT_THAT(error_of([&] { load_bpe_tokenizer_hf_dir(dir); }),
              HasSubstr("tokenizer_config.json: bos_token \"<s>\" is not a token"));
  smezo_test::write_file(dir + "/tokenizer_config.json", R"({"bos_token": {"content": "<|endoftext|>"}})");
  EXPECT_EQ(load_bpe_tokenizer_hf_dir(dir)->bos_id(), 0);
}

TEST(BpeTokenizer, ConcurrentEncodesAgree) {
  auto tok = tiny("tiny_smollm");
  const auto cases = read_fixture(kFixtures + "tiny_ids.jsonl", "tiny_smollm");
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; round++)
        for (const auto& c : cases) mismatches[t] += tok->encode(c.text, false) != c.line["ids"].get<std::vector<int32_t>>();
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

// --- tokenizer.json errors: one message naming the file and the field

TEST(BpeTokenizerJson, UnsupportedOrBrokenFilesAreNamed) {
  const json base = json::parse(smezo_test::read_file(kFixtures + "tiny_smollm/tokenizer.json"));
  const std::string dir = smezo_test::make_temp_dir("bpe_json");
  auto error_with = [&](const std::function<void(json&)>& edit) {
    json j = base;
    edit(j);
    const std::string path = dir + "/tokenizer.json";
    smezo_test::write_file(path, j.dump());
    return error_of([&] { load_bpe_tokenizer_json(path); });
  };
  EXPECT_THAT(error_with([](json& j) { j["model"]["type"] = "WordPiece"; }),
              HasSubstr("tokenizer.json: model.type is \"WordPiece\""));
  EXPECT_THAT(error_with([](json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }),
              HasSubstr("pre_tokenizer type \"Whitespace\" is not supported"));
  EXPECT_THAT(error_with([](json& j) { j["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = true; }),
              HasSubstr("add_prefix_space = true is not supported"));
  EXPECT_THAT(error_with([](json& j) { j["pre_tokenizer"] = j["pre_tokenizer"]["pretokenizers"][0]; }),
              HasSubstr("pre_tokenizer has no ByteLevel step"));
  EXPECT_THAT(error_with([](json& j) {
                j["pre_tokenizer"]["pretokenizers"].push_back({{"type", "Digits"}, {"individual_digits", true}});
              }),
              HasSubstr("comes after ByteLevel"));
  EXPECT_THAT(error_with([](json& j) { j["normalizer"] = {{"type", "NFKC"}}; }),
              HasSubstr("normalizer {\"type\":\"NFKC\"} is not supported (only null, or {\"type\": \"NFC\"}"));
  EXPECT_THAT(error_with([](json& j) { j["decoder"] = nullptr; }), HasSubstr("decoder null is not supported"));
  EXPECT_THAT(error_with([](json& j) { j["model"]["merges"][0] = json::array({"zz", "q"}); }),
              HasSubstr("merge 0 (\"zz\" \"q\") names a token that is not in the vocabulary"));
  EXPECT_THAT(error_with([](json& j) { j["model"]["merges"][0] = "a b c"; }),
              HasSubstr("merge 0 \"a b c\" is not two tokens"));
  EXPECT_THAT(error_with([](json& j) { j["model"]["vocab"].erase("Q"); }), HasSubstr("no token has id"));
  EXPECT_THAT(error_with([](json& j) { j["model"]["byte_fallback"] = true; }),
              HasSubstr("byte_fallback = true is not supported"));
  EXPECT_THAT(error_with([](json& j) { j["added_tokens"][1]["lstrip"] = true; }),
              HasSubstr("added token \"<|im_start|>\" has lstrip = true"));
  EXPECT_THAT(error_with([](json& j) { j["post_processor"] = {{"type", "RobertaProcessing"}}; }),
              HasSubstr("post_processor type \"RobertaProcessing\" is not supported"));
  EXPECT_THAT(error_with([](json& j) {
                j["pre_tokenizer"]["pretokenizers"][0] = {
                    {"type", "Split"}, {"pattern", {{"Regex", "(bad"}}}, {"behavior", "Isolated"}};
              }),
              HasSubstr("does not compile"));
  EXPECT_THAT(error_of([] { load_bpe_tokenizer_json("no/such/tokenizer.json"); }),
              HasSubstr("no/such/tokenizer.json"));
  smezo_test::write_file(dir + "/broken.json", "{\"model\": ");
  EXPECT_THAT(error_of([&] { load_bpe_tokenizer_json(dir + "/broken.json"); }), HasSubstr("broken.json is not valid JSON"));
}

// A model folder whose tokenizer.json has no "model" object or is not JSON: the kind check
// names the file rather than failing inside the JSON library.
TEST(BpeTokenizerJson, KindOfAFolderWithABrokenTokenizerJson) {
  const std::string dir = smezo_test::make_temp_dir("bpe_kind");
  smezo_test::write_file(dir + "/tokenizer.json", R"({"version": "1.0"})");
  EXPECT_THAT(error_of([&] { tokenizer_kind_of_hf_dir(dir); }),
              HasSubstr(dir + "/tokenizer.json: cannot read model.type"));
  smezo_test::write_file(dir + "/tokenizer.json", "{not json");
  EXPECT_THAT(error_of([&] { tokenizer_kind_of_hf_dir(dir); }),
              HasSubstr(dir + "/tokenizer.json: cannot read model.type"));
}

TEST(BpeTokenizerJson, SplitStringAndIgnoreMerges) {
  json j = json::parse(smezo_test::read_file(kFixtures + "tiny_gpt2/tokenizer.json"));
  const std::string dir = smezo_test::make_temp_dir("bpe_json_split");
  // A literal Split on "." before ByteLevel: no word may hold a '.' with other characters.
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"String", "."}}}, {"behavior", "Isolated"}},
                          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}}}};
  smezo_test::write_file(dir + "/tokenizer.json", j.dump());
  auto tok = load_bpe_tokenizer_json(dir + "/tokenizer.json");
  for (int32_t id : tok->encode("a.b ... c.", false)) {
    const std::string piece = tok->decode_piece(-1, id);
    EXPECT_TRUE(piece == "." || piece.find('.') == std::string::npos) << piece;
  }
  EXPECT_EQ(tok->decode(tok->encode("a.b ... c.", false)), "a.b ... c.");

  // ignore_merges: a word that is a whole token is taken as it is, even where merges would
  // not build it. Add a token "xyz" that no merge makes.
  json k = json::parse(smezo_test::read_file(kFixtures + "tiny_gpt2/tokenizer.json"));
  const int32_t id = static_cast<int32_t>(k["model"]["vocab"].size());
  k["model"]["vocab"]["xyz"] = id;
  k["model"]["ignore_merges"] = true;
  smezo_test::write_file(dir + "/tokenizer.json", k.dump());
  EXPECT_EQ(load_bpe_tokenizer_json(dir + "/tokenizer.json")->encode("xyz", false), std::vector<int32_t>{id});
  k["model"]["ignore_merges"] = false;
  smezo_test::write_file(dir + "/tokenizer.json", k.dump());
  EXPECT_EQ(load_bpe_tokenizer_json(dir + "/tokenizer.json")->encode("xyz", false).size(), 3u);
}
