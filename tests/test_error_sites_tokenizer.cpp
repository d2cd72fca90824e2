// The tokenizer readers' refusals, each triggered by a file that has the fault and checked by its
// message (tools/checks/untested_errors.py lists the sites no test reaches): tokenizer.json,
// vocab.json + merges.txt and their configs, GGUF tokenizer metadata, a vocabulary as validated,
// and the tokenizers' own checks of what they are asked.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "test_gguf_writer.h"
#include "test_util.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/bpe_vocab.h"
#include "tokenizer/tokenizer.h"

using namespace smezo;
using json = nlohmann::json;
using smezo_test::error_of;
using smezo_test::make_temp_dir;
using smezo_test::write_file;
using testing::HasSubstr;

namespace {

const std::string kFixtures = "tests/fixtures/bpe/";

struct JsonCase {
  const char* what;
  std::function<void(json&)> edit;
  std::string says;
};

// Each edit of a fixture's tokenizer.json, loaded: its message holds `says` and the file's path.
void expect_refusals(const std::string& fixture, const std::vector<JsonCase>& cases) {
  const json base = json::parse(smezo_test::read_file(kFixtures + fixture + "/tokenizer.json"));
  for (const JsonCase& c : cases) {
    const std::string dir = make_temp_dir("tok_sites");
    json j = base;
    c.edit(j);
    write_file(dir + "/tokenizer.json", j.dump());
    const std::string msg = error_of([&] { load_bpe_tokenizer_json(dir + "/tokenizer.json"); });
    EXPECT_THAT(msg, HasSubstr(c.says)) << c.what;
    EXPECT_THAT(msg, HasSubstr(dir + "/tokenizer.json")) << c.what;
  }
}

}  // namespace

TEST(TokenizerErrorSites, TokenizerJsonFields) {
  expect_refusals("tiny_smollm", {
      {"no token at all", [](json& j) { j["model"]["vocab"] = json::object(); j["added_tokens"] = json::array(); },
       "the vocabulary is empty (no token is listed)"},
      {"an id far past the tokens listed", [](json& j) { j["model"]["vocab"]["far"] = 5000000; },
       "token ids run to 5000000, but 704 tokens are listed"},
      {"vocab not an object", [](json& j) { j["model"]["vocab"] = json::array(); }, "model.vocab is not an object"},
      {"a negative id", [](json& j) { j["model"]["vocab"]["neg"] = -3; },
       "token \"neg\" has id -3, not an integer in [0, 2^31)"},
      {"a fractional id", [](json& j) { j["model"]["vocab"]["huge"] = 2.3e44; }, "token \"huge\" has id 2.3e+44"},
      {"an id twice", [](json& j) { j["model"]["vocab"]["Ġt"] = 7; }, "is given to both"},
      {"an added token's negative id", [](json& j) { j["added_tokens"][0]["id"] = -2; },
       "added token \"<|endoftext|>\" has id -2, not an integer"},
      {"no model", [](json& j) { j.erase("model"); }, "no \"model\" object"},
      {"a merge of one token", [](json& j) { j["model"]["merges"][0] = json::array({"a"}); },
       "merge 0 [\"a\"] is not a pair"},
      {"no merges", [](json& j) { j["model"].erase("merges"); }, "malformed tokenizer.json"},
      {"a pre-tokeniser step without a type", [](json& j) { j["pre_tokenizer"]["pretokenizers"][0] = {{"x", 1}}; },
       "pre_tokenizer step {\"x\":1} has no type"},
      {"a Split on neither", [](json& j) {
         j["pre_tokenizer"]["pretokenizers"][0] = {
             {"type", "Split"}, {"behavior", "Isolated"}, {"pattern", {{"X", "a"}}}};
       },
       "pre_tokenizer Split pattern {\"X\":\"a\"} is neither Regex nor String"},
      {"no space token", [](json& j) {
         const int64_t id = j["model"]["vocab"]["Ġ"];
         j["model"]["vocab"].erase("Ġ");
         j["model"]["vocab"]["not-a-space"] = id;
         j["model"]["merges"] = json::array();
       },
       "the space's byte-level character"},
      {"a merge making an unknown token", [](json& j) {
         j["model"]["vocab"]["zq"] = 700;  // "z" and "q" are tokens; "zq" is, but not "qz"
         j["model"]["merges"] = json::array({json::array({"q", "z"})});
       },
       "merge 0 (\"q\" \"z\") makes \"qz\", which is not in the vocabulary"},
  });
  expect_refusals("tiny_gpt2", {
      {"a BOS of two ids", [](json& j) { j["post_processor"]["special_tokens"]["<|endoftext|>"]["ids"] = {0, 1}; },
       "post_processor special token \"<|endoftext|>\" has 2 ids, expected 1"},
  });
}

TEST(TokenizerErrorSites, TokenizerJsonFileAndConfig) {
  const std::string dir = make_temp_dir("tok_sites_file");
  write_file(dir + "/tokenizer.json", "");
  EXPECT_THAT(error_of([&] { load_bpe_tokenizer_json(dir + "/tokenizer.json"); }),
              HasSubstr(dir + "/tokenizer.json is empty"));
  write_file(dir + "/tokenizer.json", "[1, 2]");
  EXPECT_THAT(error_of([&] { load_bpe_tokenizer_json(dir + "/tokenizer.json"); }),
              HasSubstr(dir + "/tokenizer.json is a JSON array, expected an object"));
  // the post_processor prepends <|endoftext|>; a tokenizer_config.json naming another BOS contradicts it
  write_file(dir + "/tokenizer.json", smezo_test::read_file(kFixtures + "tiny_gpt2/tokenizer.json"));
  write_file(dir + "/tokenizer_config.json", R"({"bos_token": "<|im_start|>"})");
  EXPECT_THAT(error_of([&] { load_bpe_tokenizer_json(dir + "/tokenizer.json"); }),
              HasSubstr("tokenizer_config.json's bos_token \"<|im_start|>\" differs from the BOS \"<|endoftext|>\""));
  write_file(dir + "/tokenizer_config.json", R"({"bos_token": 5})");
  EXPECT_THAT(error_of([&] { load_bpe_tokenizer_json(dir + "/tokenizer.json"); }),
              HasSubstr(dir + "/tokenizer_config.json: malformed ("));
}

TEST(TokenizerErrorSites, VocabJsonAndMergesTxt) {
  const std::string fixture = kFixtures + "tiny_gpt2_files/";
  auto folder = [&](const std::string& vocab, const std::string& merges, const std::string& config) {
    const std::string dir = make_temp_dir("tok_sites_gpt2");
    write_file(dir + "/vocab.json", vocab.empty() ? smezo_test::read_file(fixture + "vocab.json") : vocab);
    write_file(dir + "/merges.txt", merges.empty() ? smezo_test::read_file(fixture + "merges.txt") : merges);
    write_file(dir + "/tokenizer_config.json", config.empty() ? smezo_test::read_file(fixture + "tokenizer_config.json")
                                                              : config);
    return dir;
  };
  std::string dir = folder(R"({"a": 0, "b": 0})", "#version: 0.2\n", "{}");
  EXPECT_THAT(error_of([&] { bpe_vocab_from_gpt2_files(dir); }),
              HasSubstr("token \"b\" has id 0, already taken"));
  dir = folder(R"({"a": "zero"})", "#version: 0.2\n", "{}");
  EXPECT_THAT(error_of([&] { bpe_vocab_from_gpt2_files(dir); }),
              HasSubstr("vocab.json: token \"a\" has id \"zero\", not an integer in [0, 2^31)"));
  dir = folder("", "#version: 0.2\na b c\n", "");
  EXPECT_THAT(error_of([&] { bpe_vocab_from_gpt2_files(dir); }),
              HasSubstr("merges.txt:2: \"a b c\" is not two tokens separated by one space"));
  dir = folder("", "", R"({"added_tokens_decoder": {"0": {"content": "not-token-0"}}})");
  EXPECT_THAT(error_of([&] { bpe_vocab_from_gpt2_files(dir); }),
              HasSubstr("added_tokens_decoder entry \"0\" (\"not-token-0\") is not that id's token in vocab.json"));
  dir = folder(R"({"a": 3})", "#version: 0.2\n", "{}");
  EXPECT_THAT(error_of([&] { bpe_vocab_from_gpt2_files(dir); }),
              HasSubstr("token ids run to 3, but 1 tokens are listed"));
}

TEST(TokenizerErrorSites, VocabularyChecks) {
  const BpeVocab good = bpe_vocab_from_tokenizer_json(kFixtures + "tiny_smollm/tokenizer.json");
  auto refusal = [&](const std::function<void(BpeVocab&)>& edit) {
    BpeVocab v = good;
    edit(v);
    return error_of([&] { bpe_vocab_validate(v); });
  };
  EXPECT_THAT(refusal([](BpeVocab& v) { v.tokens.clear(); v.types.clear(); }),
              HasSubstr("the BPE vocabulary is empty"));
  EXPECT_THAT(refusal([](BpeVocab& v) { v.types.pop_back(); }), HasSubstr("699 token types for 700 tokens"));
  EXPECT_THAT(refusal([](BpeVocab& v) { v.types[5] = 9; }), HasSubstr("expected 1..6 (normal .. byte)"));
  EXPECT_THAT(refusal([](BpeVocab& v) { v.add_bos = true; v.bos_id = -1; }),
              HasSubstr("the tokenizer asks for BOS but names no BOS token"));
  EXPECT_THAT(refusal([](BpeVocab& v) { v.pre_patterns.clear(); }), HasSubstr(": no pre-tokeniser"));
  // the tokenizer's own checks of what it is asked
  BpeVocab no_bos = good;
  no_bos.bos_id = -1;
  no_bos.add_bos = false;
  const BpeTokenizer tok(no_bos);
  EXPECT_THAT(error_of([&] { tok.encode("hi", true); }), HasSubstr("the tokenizer has no BOS token to prepend"));
  EXPECT_THAT(error_of([&] { tok.decode({3, 700}); }), HasSubstr("token id 700 outside the tokenizer's 700"));
  EXPECT_THAT(error_of([&] { tok.decode_piece(-1, -4); }), HasSubstr("token id -4 outside the tokenizer's 700"));
}

// GGUF tokenizer metadata: the fields that GGUF files of other tools get wrong.
TEST(TokenizerErrorSites, GgufMetadata) {
  const BpeVocab v = bpe_vocab_from_tokenizer_json(kFixtures + "tiny_smollm/tokenizer.json");
  std::vector<std::string> merges;
  for (const auto& m : v.merges) merges.push_back(m.first + " " + m.second);
  auto refusal = [&](bool pre, const std::vector<int32_t>& types, const std::vector<std::string>& m) {
    smezo_test::GgufBuilder b;
    b.add_string("general.architecture", "llama");
    b.add_string("tokenizer.ggml.model", "gpt2");
    if (pre) b.add_string("tokenizer.ggml.pre", "smollm");
    b.add_string_array("tokenizer.ggml.tokens", v.tokens);
    b.add_i32_array("tokenizer.ggml.token_type", types);
    b.add_string_array("tokenizer.ggml.merges", m);
    const std::string path = make_temp_dir("tok_sites_gguf") + "/t.gguf";
    b.write(path);
    return error_of([&] { load_bpe_tokenizer_gguf(path); });
  };
  EXPECT_THAT(refusal(false, v.types, merges), HasSubstr("no tokenizer.ggml.pre, so the pre-tokeniser is unknown"));
  EXPECT_THAT(refusal(true, std::vector<int32_t>(v.types.begin(), v.types.end() - 1), merges),
              HasSubstr("tokenizer.ggml.token_type has 699 entries for 700 tokens"));
  std::vector<int32_t> bad_types = v.types;
  bad_types[3] = 11;
  EXPECT_THAT(refusal(true, bad_types, merges), HasSubstr("tokenizer.ggml.token_type[3] = 11, expected 0..6"));
  std::vector<std::string> bad_merges = merges;
  bad_merges[2] = "nospace";
  EXPECT_THAT(refusal(true, v.types, bad_merges),
              HasSubstr("tokenizer.ggml.merges[2] \"nospace\" is not two tokens separated by one space"));
}
