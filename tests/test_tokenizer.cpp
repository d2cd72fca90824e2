// The sentencepiece tokenizer on the real LLaMA-2, Mistral and TinyStories models.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/assets.h"
#include "common/check.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

using namespace smezo;

TEST(Tokenizer, Llama2HelloWorld) {
  auto tok = load_sentencepiece_tokenizer(asset_path("tokenizers/llama2.model"));
  EXPECT_EQ(tok->vocab_size(), 32000);
  EXPECT_EQ(tok->encode("Hello world", false), (std::vector<int32_t>{15043, 3186}));
  EXPECT_EQ(tok->encode("Hello world", true), (std::vector<int32_t>{1, 15043, 3186}));
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->decode({1, 15043, 3186}), "Hello world");
}

TEST(Tokenizer, MistralAndTinyStoriesRoundTrip) {
  for (const char* name : {"tokenizers/mistral-7b-v0.1.model", "tokenizers/tinystories-512.model"}) {
    auto tok = load_sentencepiece_tokenizer(asset_path(name));
    std::string text = "Once upon a time, there was a little girl named Lily.";
    std::vector<int32_t> ids = tok->encode(text, true);
    EXPECT_EQ(ids[0], tok->bos_id());
    EXPECT_EQ(tok->decode(ids), text) << name;
    // streaming pieces concatenate to the same text
    std::string streamed;
    for (size_t i = 1; i < ids.size(); i++) streamed += tok->decode_piece(ids[i - 1], ids[i]);
    EXPECT_EQ(streamed, text) << name;
  }
}

TEST(Tokenizer, ByteFallbackPieceIsTheByte) {
  auto tok = load_sentencepiece_tokenizer(asset_path("tokenizers/llama2.model"));
  std::vector<int32_t> ids = tok->encode("a\nb", false);
  std::string streamed;
  for (size_t i = 0; i < ids.size(); i++) streamed += tok->decode_piece(i ? ids[i - 1] : -1, ids[i]);
  EXPECT_EQ(streamed, " a\nb");
}

TEST(Tokenizer, MissingOrBadFileIsNamed) {
  EXPECT_THAT([] { load_sentencepiece_tokenizer("no/such/tokenizer.model"); },
              testing::ThrowsMessage<Error>(testing::HasSubstr("no/such/tokenizer.model")));
  std::string dir = smezo_test::make_temp_dir("tok");
  smezo_test::write_file(dir + "/bad.model", "this is not a protobuf");
  EXPECT_THAT([&] { load_sentencepiece_tokenizer(dir + "/bad.model"); },
              testing::ThrowsMessage<Error>(testing::HasSubstr("bad.model")));
}

namespace {

// One SentencePiece message inside a ModelProto (protobuf: field 1 piece, 2 score, 3 type).
std::string proto_piece(const std::string& piece, int type) {
  std::string m = "\x0a" + std::string(1, static_cast<char>(piece.size())) + piece;
  m += std::string("\x15\0\0\0\0", 5);  // score 0.0f
  m += "\x18" + std::string(1, static_cast<char>(type));
  return "\x0a" + std::string(1, static_cast<char>(m.size())) + m;
}

}  // namespace

// sentencepiece quotes the file's pieces in its errors; they reach the user escaped.
TEST(Tokenizer, FileBytesInErrorsAreEscaped) {
  std::string dir = smezo_test::make_temp_dir("tok_esc");
  const std::string evil = "\x1b[2J";
  smezo_test::write_file(dir + "/dup.model", proto_piece("<unk>", 2) + proto_piece("<s>", 3) +
                                                  proto_piece("</s>", 3) + proto_piece(evil, 1) +
                                                  proto_piece(evil, 1));
  std::string msg = smezo_test::error_of([&] { load_sentencepiece_tokenizer(dir + "/dup.model"); });
  EXPECT_THAT(msg, testing::HasSubstr(dir + "/dup.model is not a sentencepiece model"));
  EXPECT_THAT(msg, testing::HasSubstr("\\x1b[2J is already defined"));
  EXPECT_EQ(msg.find('\x1b'), std::string::npos);
}

// Found by fuzzing (tests/fuzz/fuzz_tokenizer.cpp): a model with an empty piece made
// libsentencepiece throw its own exception from its trie builder; the message named no file
// (and the fuzzer saw an exception that was not a smezo::Error). The 30 bytes it found:
TEST(Tokenizer, EmptyPieceIsAnErrorNamingTheFile) {
  static const unsigned char kModel[] = {
      0x0a, 0x0e, 0x0a, 0x05, '<',  'u',  'n',  'k',  '>',  0x15, 0x00, 0x00, 0x00, 0x00, 0x18,
      0x02, 0x0a, 0x0c, 0x0a, 0x03, '<',  0x0a, 0x0e, 0x0a, 0x05, 0x00, 0x00, 0x00, 0x18, 0x02};
  std::string dir = smezo_test::make_temp_dir("tok_empty_piece");
  smezo_test::write_file(dir + "/t.model", std::string(reinterpret_cast<const char*>(kModel), sizeof kModel));
  std::string msg = smezo_test::error_of([&] { load_sentencepiece_tokenizer(dir + "/t.model"); });
  EXPECT_THAT(msg, testing::HasSubstr(dir + "/t.model is not a sentencepiece model"));
  EXPECT_THAT(msg, testing::HasSubstr("zero-length key"));
}
