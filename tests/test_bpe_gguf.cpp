// The byte-level BPE tokenizer from GGUF metadata: a tiny GGUF written from the committed
// tiny vocabulary (runs everywhere), its errors, the tokenizer-kind functions, and the real
// SmolLM2-135M-Instruct GGUF against Hugging Face's ids (tests/fixtures/bpe/smollm2_ids.jsonl,
// written by tools/oracles/bpe_oracle.py smollm2; skipped, saying why, when the GGUF is absent).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "test_gguf_writer.h"
#include "test_util.h"
#include "tokenizer/bpe_bytes.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/bpe_vocab.h"
#include "tokenizer/tokenizer.h"

using namespace smezo;
using json = nlohmann::json;
using smezo_test::error_of;
using testing::HasSubstr;

using smezo_test::smollm2_path;

namespace {

const std::string kFixtures = "tests/fixtures/bpe/";

struct Case {
  std::string text;
  std::vector<int32_t> ids;
  std::string decoded;
  std::string kind;
};

std::vector<Case> read_cases(const std::string& path, const std::string& vocab = "") {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << "cannot read " << path;
  std::vector<Case> cases;
  std::string line;
  while (std::getline(f, line)) {
    const json j = json::parse(line);
    if (!vocab.empty() && j.value("vocab", std::string()) != vocab) continue;
    Case c;
    if (j.contains("hex")) {
      const std::string hex = j["hex"].get<std::string>();
      for (size_t i = 0; i + 1 < hex.size(); i += 2)
        c.text.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    } else {
      c.text = j["text"].get<std::string>();
    }
    c.ids = j["ids"].get<std::vector<int32_t>>();
    c.decoded = j.contains("decoded") ? j["decoded"].get<std::string>() : c.text;
    c.kind = j.value("kind", std::string());
    cases.push_back(std::move(c));
  }
  return cases;
}

// The tiny_smollm vocabulary written as a GGUF's tokenizer metadata; edit() may change it.
std::string write_tiny_gguf(const std::string& dir, const std::function<void(smezo_test::GgufBuilder&)>& extra = {},
                            bool with_pre = true, const std::string& model = "gpt2") {
  const BpeVocab v = bpe_vocab_from_tokenizer_json(kFixtures + "tiny_smollm/tokenizer.json");
  smezo_test::GgufBuilder b;
  b.add_string("general.architecture", "llama");
  b.add_string("tokenizer.ggml.model", model);
  if (with_pre) b.add_string("tokenizer.ggml.pre", "smollm");
  b.add_string_array("tokenizer.ggml.tokens", v.tokens);
  b.add_i32_array("tokenizer.ggml.token_type", v.types);
  std::vector<std::string> merges;
  for (const auto& m : v.merges) merges.push_back(m.first + " " + m.second);
  b.add_string_array("tokenizer.ggml.merges", merges);
  b.add_u32("tokenizer.ggml.bos_token_id", 1);
  b.add_u32("tokenizer.ggml.eos_token_id", 2);
  b.add_u32("tokenizer.ggml.unknown_token_id", 0);
  b.add_bool("tokenizer.ggml.add_bos_token", false);
  if (extra) extra(b);
  const std::string path = dir + "/tiny.gguf";
  b.write(path);
  return path;
}


}  // namespace

// --- a tiny GGUF (no download needed)

TEST(BpeGguf, TinyVocabularyMatchesHuggingFace) {
  const std::string dir = smezo_test::make_temp_dir("bpe_gguf");
  auto tok = load_bpe_tokenizer_gguf(write_tiny_gguf(dir));
  EXPECT_EQ(tok->vocab_size(), 700);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_FALSE(tok->add_bos_by_default());
  EXPECT_EQ(tokenizer_kind_of_gguf(dir + "/tiny.gguf"), TOKENIZER_BPE);
  const std::vector<Case> cases = read_cases(kFixtures + "tiny_ids.jsonl", "tiny_smollm");
  ASSERT_GT(cases.size(), 90u);
  for (const Case& c : cases) {
    EXPECT_EQ(tok->encode(c.text, false), c.ids) << json(utf8_sanitize(c.text)).dump();
    EXPECT_EQ(tok->decode(c.ids), c.decoded);
  }
}

TEST(BpeGguf, MetadataErrorsAreOneLineNamingTheKey) {
  const std::string dir = smezo_test::make_temp_dir("bpe_gguf_err");
  EXPECT_THAT(error_of([&] { load_bpe_tokenizer_gguf(write_tiny_gguf(dir, {}, false)); }),
              HasSubstr("tiny.gguf: no tokenizer.ggml.pre"));
  EXPECT_THAT(error_of([&] {
                load_bpe_tokenizer_gguf(write_tiny_gguf(
                    dir, [](smezo_test::GgufBuilder& b) { b.add_string("tokenizer.ggml.pre", "falcon"); }, false));
              }),
              HasSubstr("tiny.gguf: tokenizer.ggml.pre \"falcon\" is not a supported pre-tokeniser (supported: "
                        "gpt-2, smollm, llama-bpe, qwen2)"));
  EXPECT_THAT(error_of([&] { load_bpe_tokenizer_gguf(write_tiny_gguf(dir, {}, true, "llama")); }),
              HasSubstr("tokenizer.ggml.model is \"llama\", not \"gpt2\""));
  EXPECT_THAT(error_of([&] {
                load_bpe_tokenizer_gguf(
                    write_tiny_gguf(dir, [](smezo_test::GgufBuilder& b) { b.add_bool("tokenizer.ggml.add_eos_token", true); }));
              }),
              HasSubstr("add_eos_token = true is not supported"));
  EXPECT_THAT(error_of([&] {
                smezo_test::GgufBuilder b;
                b.add_string("tokenizer.ggml.model", "gpt2");
                b.add_string("tokenizer.ggml.pre", "gpt-2");
                b.add_string_array("tokenizer.ggml.tokens", {"a", "b", "ab", "\xC4\xA0"});
                b.add_string_array("tokenizer.ggml.merges", {"a b", "b c"});
                b.write(dir + "/bad_merge.gguf");
                load_bpe_tokenizer_gguf(dir + "/bad_merge.gguf");
              }),
              HasSubstr("bad_merge.gguf: merge 1 (\"b\" \"c\") names a token that is not in the vocabulary"));
  EXPECT_THAT(error_of([&] {
                smezo_test::GgufBuilder b;
                b.add_string("tokenizer.ggml.model", "gpt2");
                b.add_string("tokenizer.ggml.pre", "gpt-2");
                b.add_string_array("tokenizer.ggml.tokens", {"a", "\xC4\xA0"});
                b.add_string_array("tokenizer.ggml.merges", {});
                b.add_u32("tokenizer.ggml.bos_token_id", 7);
                b.write(dir + "/bad_bos.gguf");
                load_bpe_tokenizer_gguf(dir + "/bad_bos.gguf");
              }),
              HasSubstr("tokenizer.ggml.bos_token_id = 7 is outside the 2-token vocabulary"));
}

TEST(TokenizerKind, FromGgufModelAndHfDirectory) {
  EXPECT_EQ(tokenizer_kind_for_gguf_model("gpt2", "m.gguf"), TOKENIZER_BPE);
  EXPECT_EQ(tokenizer_kind_for_gguf_model("llama", "m.gguf"), TOKENIZER_SENTENCEPIECE);
  EXPECT_THAT(error_of([] { tokenizer_kind_for_gguf_model("bert", "m.gguf"); }),
              HasSubstr("m.gguf: tokenizer.ggml.model \"bert\" is not supported"));
  EXPECT_STREQ(tokenizer_kind_name(TOKENIZER_BPE), "byte-level BPE");
  EXPECT_EQ(tokenizer_kind_of_hf_dir(kFixtures + "tiny_smollm"), TOKENIZER_BPE);
  const std::string dir = smezo_test::make_temp_dir("tok_kind");
  EXPECT_THAT(error_of([&] { tokenizer_kind_of_hf_dir(dir); }), HasSubstr("has neither tokenizer.model"));
  smezo_test::write_file(dir + "/tokenizer.json", R"({"model": {"type": "WordPiece"}})");
  EXPECT_THAT(error_of([&] { tokenizer_kind_of_hf_dir(dir); }), HasSubstr("model.type is \"WordPiece\""));
  smezo_test::write_file(dir + "/tokenizer.model", "x");
  EXPECT_EQ(tokenizer_kind_of_hf_dir(dir), TOKENIZER_SENTENCEPIECE);
}

// --- the real SmolLM2-135M-Instruct GGUF

TEST(BpeSmolLM2, MatchesHuggingFaceOnTaskPromptsAndEdgeCases) {
  const std::string path = smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  auto tok = load_bpe_tokenizer_gguf(path);
  EXPECT_EQ(tokenizer_kind_of_gguf(path), TOKENIZER_BPE);
  EXPECT_EQ(tok->vocab_size(), 49152);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_FALSE(tok->add_bos_by_default());
  // A bigger fixture (tools/oracles/bpe_oracle.py smollm2 --every-kind --out F) can replace the
  // committed one.
  const char* env = std::getenv("SMEZO_BPE_SMOLLM2_FIXTURE");
  const std::string fixture = env && *env ? env : kFixtures + "smollm2_ids.jsonl";
  const std::vector<Case> cases = read_cases(fixture);
  ASSERT_GE(cases.size(), 600u);
  int n_edge = 0, n_prompts = 0, same_ids = 0, same_text = 0;
  int64_t n_tokens = 0;
  for (const Case& c : cases) {
    (c.kind == "edge" ? n_edge : n_prompts)++;
    const std::vector<int32_t> got = tok->encode(c.text, false);
    EXPECT_EQ(got, c.ids) << json(utf8_sanitize(c.text.substr(0, 200))).dump();
    same_ids += got == c.ids;
    const std::string decoded = tok->decode(c.ids);
    EXPECT_EQ(decoded, c.decoded);
    same_text += decoded == c.decoded;
    n_tokens += static_cast<int64_t>(c.ids.size());
  }
  std::printf("[ smollm2  ] %s: %d edge cases + %d task prompts (%lld tokens): %d identical ids, %d identical "
              "decodes\n", fixture.c_str(), n_edge, n_prompts, (long long)n_tokens, same_ids, same_text);
}

TEST(BpeSmolLM2, ChatTemplateBosAndStreaming) {
  const std::string path = smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  auto tok = load_bpe_tokenizer_gguf(path);
  // Ids from HF (AutoTokenizer from this GGUF): <|im_start|> = 1, "user" = 4093, "\n" = 198,
  // "hi" = 6004, <|im_end|> = 2.
  EXPECT_EQ(tok->encode("<|im_start|>user\nhi<|im_end|>", false), (std::vector<int32_t>{1, 4093, 198, 6004, 2}));
  EXPECT_EQ(tok->encode("Hello world", true), (std::vector<int32_t>{1, 19556, 905}));
  EXPECT_EQ(tok->decode({1, 4093, 198, 6004, 2}), "user\nhi");
  // An emoji spans several tokens: the streamed pieces are raw bytes that join into it.
  const std::string text = "smile \xF0\x9F\x98\x80 ok";
  const std::vector<int32_t> ids = tok->encode(text, false);
  std::string streamed;
  int partial = 0;
  for (size_t i = 0; i < ids.size(); i++) {
    const std::string piece = tok->decode_piece(i ? ids[i - 1] : -1, ids[i]);
    partial += !utf8_is_valid(piece);
    streamed += piece;
  }
  EXPECT_EQ(streamed, text);
  EXPECT_GT(partial, 0) << "expected the emoji to be split over byte tokens";
}

TEST(BpeSmolLM2, EncodeSpeedOnALongText) {
  const std::string path = smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  std::string text;
  for (const Case& c : read_cases(kFixtures + "smollm2_ids.jsonl"))
    if (c.kind != "edge") text += c.text + "\n";
  ASSERT_GT(text.size(), 200000u);
  using clock = std::chrono::steady_clock;
  auto tok = load_bpe_tokenizer_gguf(path);  // a fresh word cache
  auto t0 = clock::now();
  const std::vector<int32_t> cold = tok->encode(text, false);
  auto t1 = clock::now();
  const std::vector<int32_t> warm = tok->encode(text, false);
  auto t2 = clock::now();
  EXPECT_EQ(cold, warm);
  EXPECT_EQ(tok->decode(cold), text);
  const double s_cold = std::chrono::duration<double>(t1 - t0).count();
  const double s_warm = std::chrono::duration<double>(t2 - t1).count();
  std::printf("[ smollm2  ] encode %zu bytes -> %zu tokens: %.3f s cold cache (%.2f M tokens/s), %.3f s warm "
              "(%.2f M tokens/s)\n", text.size(), cold.size(), s_cold, cold.size() / s_cold / 1e6, s_warm,
              warm.size() / s_warm / 1e6);
}
