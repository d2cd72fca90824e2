// The newer families' byte-level BPE tokenizers against Hugging Face on small committed vocabularies
// (tests/fixtures/bpe/tiny_llama3, tiny_qwen2; ids in families_ids.jsonl, written by
// tools/oracles/bpe_oracle.py families): Llama 3's Split regex with ignore_merges and a BOS from a
// Sequence post_processor, Qwen2's regex under an NFC normalizer; smezo's NFC against Python's on 300
// texts of combining marks, Hangul and composition exceptions (and Qwen2's ids of them). And the GGUF
// pre-tokeniser names llama.cpp writes for them ("llama-bpe", "qwen2") are those files' regexes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tokenizer/bpe_nfc.h"
#include "tokenizer/bpe_pretokenizer.h"
#include "tokenizer/tokenizer.h"

using namespace smezo;
using json = nlohmann::json;
using testing::HasSubstr;

namespace {

const std::string kFixtures = "tests/fixtures/bpe/";

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

std::vector<json> fixture_lines(const std::string& vocab) {
  std::ifstream f(kFixtures + "families_ids.jsonl");
  EXPECT_TRUE(f.good());
  std::vector<json> out;
  for (std::string line; std::getline(f, line);) {
    json j = json::parse(line);
    if (j.at("vocab") == vocab) out.push_back(std::move(j));
  }
  return out;
}

// The Split regex of a tokenizer.json's pre_tokenizer Sequence.
std::string split_regex(const std::string& dir) {
  const json j = json::parse(smezo_test::read_file(kFixtures + dir + "/tokenizer.json"));
  return j.at("pre_tokenizer").at("pretokenizers").at(0).at("pattern").at("Regex").get<std::string>();
}

}  // namespace

TEST(BpeFamilies, Llama3AndQwen2TokenizersMatchHuggingFace) {
  for (const char* name : {"tiny_llama3", "tiny_qwen2"}) {
    SCOPED_TRACE(name);
    auto tok = load_bpe_tokenizer_hf_dir(kFixtures + name);
    const std::vector<json> lines = fixture_lines(name);
    ASSERT_GT(lines.size(), 90u);
    for (const json& l : lines) {
      const std::string text = l.contains("hex") ? from_hex(l["hex"]) : l["text"].get<std::string>();
      EXPECT_EQ(tok->encode(text, false), l.at("ids").get<std::vector<int32_t>>()) << l.dump();
    }
  }
  auto llama3 = load_bpe_tokenizer_hf_dir(kFixtures + "tiny_llama3");
  EXPECT_TRUE(llama3->add_bos_by_default());
  EXPECT_EQ(llama3->encode("Hi", true).front(), 0);  // <|begin_of_text|>
  EXPECT_FALSE(load_bpe_tokenizer_hf_dir(kFixtures + "tiny_qwen2")->add_bos_by_default());
}

TEST(BpeFamilies, GgufPreTokenizerNamesAreTheFilesRegexes) {
  EXPECT_EQ(bpe_pre_patterns_for_gguf("llama-bpe", "x"), std::vector<std::string>{split_regex("tiny_llama3")});
  EXPECT_EQ(bpe_pre_patterns_for_gguf("qwen2", "x"), std::vector<std::string>{split_regex("tiny_qwen2")});
  EXPECT_THAT(smezo_test::error_of([] { bpe_pre_patterns_for_gguf("deepseek-llm", "m.gguf"); }),
              HasSubstr("m.gguf: tokenizer.ggml.pre \"deepseek-llm\" is not a supported pre-tokeniser (supported: "
                        "gpt-2, smollm, llama-bpe, qwen2)"));
}

TEST(BpeFamilies, NfcIsPythonsAndQwen2EncodesItsNfc) {
  auto qwen2 = load_bpe_tokenizer_hf_dir(kFixtures + "tiny_qwen2");
  const std::vector<json> lines = fixture_lines("nfc");
  ASSERT_EQ(lines.size(), 300u);
  int changed = 0;
  for (const json& l : lines) {
    const std::string text = l.at("text"), want = l.at("nfc");
    EXPECT_EQ(nfc_normalize(text), want) << l.dump();
    EXPECT_EQ(qwen2->encode(text, false), l.at("qwen2_ids").get<std::vector<int32_t>>()) << l.dump();
    changed += text != want;
  }
  EXPECT_GT(changed, 100);  // the cases really exercise composition and ordering (147 of 300 change)
}

TEST(BpeFamilies, NfcCheckFindsWhatNfcMayChange) {
  uint32_t cp = 0;
  EXPECT_EQ(nfc_first_unsafe("plain ASCII, caf\xC3\xA9, \xE6\x97\xA5\xE6\x9C\xAC", &cp), -1);  // precomposed: stays
  EXPECT_EQ(nfc_first_unsafe("cafe\xCC\x81", &cp), 4);  // e + U+0301 composes
  EXPECT_EQ(cp, 0x0301u);
  EXPECT_EQ(nfc_first_unsafe("x\xE2\x84\xAB", &cp), 1);  // U+212B ANGSTROM SIGN -> U+00C5
  EXPECT_EQ(cp, 0x212Bu);
  EXPECT_EQ(nfc_first_unsafe("\xE1\x84\x80\xE1\x85\xA1", &cp), 3);  // Hangul L + V jamo compose
  EXPECT_EQ(cp, 0x1161u);
}
