// Tests on the real SmolLM2-135M-Instruct GGUF (weights/fetch_smollm2.sh puts it in
// weights/; $SMEZO_SMOLLM2 overrides the path). They skip, saying why, when it is absent.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>

#include "formats/gguf.h"

namespace {

std::string smollm2_path() {
  const char* env = std::getenv("SMEZO_SMOLLM2");
  std::string path = env && *env ? env : "weights/SmolLM2-135M-Instruct.Q4_1.gguf";
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? path : "";
}

#define SKIP_WITHOUT_SMOLLM2(path)                                                          \
  if (path.empty())                                                                         \
  GTEST_SKIP() << "SmolLM2 GGUF not found at weights/SmolLM2-135M-Instruct.Q4_1.gguf "     \
                  "(or $SMEZO_SMOLLM2); run weights/fetch_smollm2.sh to fetch it"

}  // namespace

TEST(GgufSmolLM2, Metadata) {
  const std::string path = smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  auto f = smezo::GgufFile::open(path);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32);
  EXPECT_EQ(f->metadata().size(), 33u);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_u32("llama.block_count"), 30u);
  EXPECT_EQ(f->get_u32("llama.embedding_length"), 576u);
  EXPECT_EQ(f->get_u32("llama.attention.head_count_kv"), 3u);
  EXPECT_EQ(f->get_f32("llama.rope.freq_base"), 100000.0f);
  EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "gpt2");
  std::vector<std::string> tokens = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 49152u);
  EXPECT_EQ(tokens[0], "<|endoftext|>");
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.merges").size(), 48900u);
  EXPECT_EQ(f->get_i64_array("tokenizer.ggml.token_type").size(), 49152u);
  EXPECT_EQ(f->get_u32("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_FALSE(f->get_bool("tokenizer.ggml.add_bos_token"));
  ASSERT_EQ(f->tensors().size(), 272u);
  const smezo::GgufTensorInfo* emb = f->find_tensor("token_embd.weight");
  ASSERT_TRUE(emb);
  EXPECT_EQ(emb->type, smezo::GGUF_TYPE_Q8_0);
  EXPECT_EQ(emb->dims, (std::vector<int64_t>{576, 49152}));
  const smezo::GgufTensorInfo* last = &f->tensors().back();
  EXPECT_LE(last->offset + last->nbytes, f->file_size());
}
