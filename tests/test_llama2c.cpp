// The llama2.c checkpoint reader on the real stories260K and on corrupted copies of it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "common/assets.h"
#include "common/check.h"
#include "model/llama2c.h"
#include "model/model_loader.h"
#include "test_util.h"

using namespace smezo;
using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::write_file;

namespace {

std::string stories_bytes() { return read_file(asset_path("models/stories260K.bin")); }

std::string load_error(const std::string& path) {
  return smezo_test::error_of([&] { load_weights(path); });
}

}  // namespace

TEST(Llama2c, Stories260KConfig) {
  WeightSource src = load_llama2c(asset_path("models/stories260K.bin"));
  const ModelConfig& c = src.config;
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.max_seq_len, 512);
  EXPECT_TRUE(c.tied_lm_head);
  EXPECT_EQ(c.rope_style, ROPE_INTERLEAVED);
  int64_t total = 0;
  for (const auto& kv : src.tensors) total += kv.second.numel();
  EXPECT_EQ(total, 260032 - 0);  // the model card's parameter count (tied head counted once)
}

TEST(Llama2c, TruncatedFileNamesTensor) {
  std::string dir = make_temp_dir("l2c");
  std::string bytes = stories_bytes();
  write_file(dir + "/trunc.bin", bytes.substr(0, bytes.size() / 2));
  std::string err = load_error(dir + "/trunc.bin");
  EXPECT_THAT(err, testing::HasSubstr("trunc.bin"));
  EXPECT_THAT(err, testing::HasSubstr("extends past the end"));
  EXPECT_THAT(err, testing::HasSubstr("tensor w1 "));  // the first tensor that does not fit
}

TEST(Llama2c, CorruptHeaderNamesField) {
  std::string dir = make_temp_dir("l2c");
  std::string bytes = stories_bytes();
  int32_t bad = -7;
  std::memcpy(&bytes[4 * 3], &bad, 4);  // n_heads
  write_file(dir + "/hdr.bin", bytes);
  std::string err = load_error(dir + "/hdr.bin");
  EXPECT_THAT(err, testing::HasSubstr("n_heads"));
  EXPECT_THAT(err, testing::HasSubstr("hdr.bin"));
  write_file(dir + "/short.bin", "abc");
  EXPECT_THAT(load_error(dir + "/short.bin"), testing::HasSubstr("too short"));
}

TEST(Llama2c, WrongSizeForHeaderIsAnError) {
  std::string dir = make_temp_dir("l2c");
  write_file(dir + "/extra.bin", stories_bytes() + std::string(64, '\0'));
  EXPECT_THAT(load_error(dir + "/extra.bin"), testing::HasSubstr("left over"));
}

TEST(ModelLoader, MissingAndUnknownFiles) {
  EXPECT_THAT(load_error("no/such/model.bin"), testing::HasSubstr("no/such/model.bin"));
  std::string dir = make_temp_dir("loader");
  write_file(dir + "/model.onnx", "x");
  EXPECT_THAT(load_error(dir + "/model.onnx"), testing::HasSubstr("unknown model format"));
}

namespace {

// stories260K's bytes with header field i (0..6) set to v.
std::string with_header_field(int i, int32_t v) {
  std::string bytes = stories_bytes();
  std::memcpy(&bytes[4 * i], &v, 4);
  return bytes;
}

}  // namespace

// Header sizes whose products overflowed int64 (UB) or drove allocations are refused by name,
// at once, whatever the file size.
TEST(Llama2c, HeaderFieldsBeyondTheirBoundsAreNamed) {
  std::string dir = make_temp_dir("l2c_bounds");
  struct Case {
    int field;
    int32_t value;
    const char* expect;
  } cases[] = {
      {2, 1 << 20, "n_layers = 1048576 is not a valid size (1..4096)"},
      {0, (1 << 24) - 2, "dim = 16777214 is not a valid size (1..1048576)"},
      {5, INT32_MIN, "vocab_size = -2147483648 is not a valid size"},
      {6, 0, "seq_len = 0"},
      {4, 16, "n_heads 8 is not a multiple of n_kv_heads 16"},
      {4, 3, "n_heads 8 is not a multiple of n_kv_heads 3"},
      {3, 64, "head_dim dim / n_heads = 1 must be even"},
  };
  for (const Case& c : cases) {
    const std::string path = dir + "/f" + std::to_string(c.field) + "_" + std::to_string(c.value) + ".bin";
    write_file(path, with_header_field(c.field, c.value));
    std::string err = load_error(path);
    EXPECT_THAT(err, testing::HasSubstr(path)) << c.expect;
    EXPECT_THAT(err, testing::HasSubstr(c.expect));
  }
}

// Sizes each in range whose arrays together need more bytes than int64 holds, or than the
// file has: refused before any view is made.
TEST(Llama2c, HugeArraysAreCheckedAgainstTheFileWithoutOverflow) {
  std::string dir = make_temp_dir("l2c_huge");
  std::string bytes = stories_bytes();
  const int32_t h[7] = {1 << 20, 1 << 20, 4096, 1 << 10, 1 << 10, -(int32_t)((1u << 31) - 1), 1 << 30};
  std::memcpy(&bytes[0], h, sizeof h);
  write_file(dir + "/huge.bin", bytes);
  std::string err = load_error(dir + "/huge.bin");
  EXPECT_THAT(err, testing::HasSubstr("tensor token_embedding"));
  EXPECT_THAT(err, testing::HasSubstr("extends past the end of the file"));
}

TEST(Llama2c, VocabularyTooSmallForBosEos) {
  std::string dir = make_temp_dir("l2c_vocab");
  write_file(dir + "/v.bin", with_header_field(5, 2));
  EXPECT_THAT(load_error(dir + "/v.bin"), testing::HasSubstr("eos token 2 is outside the vocabulary"));
}
