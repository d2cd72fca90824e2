// Tests on the real SmolLM2-135M-Instruct GGUF (weights/fetch_smollm2.sh puts it in
// weights/; $SMEZO_SMOLLM2 overrides the path). They skip, saying why, when it is absent.
// The logits are checked against tests/fixtures/smollm2_logits.json: a slice of Hugging Face
// transformers' fp32 logits on the same file, written by tools/oracles/gguf_oracle.py. Tolerance
// (tools/oracles/hf_oracle.py's fp32 rule): |ours - ref| <= 1e-4 * (1 + max|ref|) per prompt; the
// argmax must agree wherever the reference's top-2 gap exceeds twice that.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cpu/cpu_backend.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#endif
#include "formats/gguf.h"
#include "model/model.h"
#include "model/model_loader.h"
#include "model_fixture.h"
#include "test_util.h"

using nlohmann::json;

using smezo_test::smollm2_path;

namespace {


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

namespace {

json load_fixture() {
  return json::parse(smezo_test::read_file("tests/fixtures/smollm2_logits.json"));
}

// All prompts of the fixture packed into one batch, logits at every position.
smezo::ForwardBatch make_batch(const json& fx) {
  smezo::ForwardBatch b;
  for (const json& prompt : fx["prompts"]) {
    std::vector<int32_t> t = prompt["tokens"].get<std::vector<int32_t>>();
    b.tokens.insert(b.tokens.end(), t.begin(), t.end());
    b.seq_lens.push_back(static_cast<int64_t>(t.size()));
  }
  for (size_t i = 0; i < b.tokens.size(); i++) b.logit_rows.push_back(static_cast<int64_t>(i));
  return b;
}

// Compares one position's logits (a full vocabulary row) with the fixture; returns the
// largest error seen and counts argmax agreement.
struct RowCheck {
  double max_err = 0;
  int argmax_agree = 0;
  int failures = 0;
};

void check_row(const float* row, int64_t vocab, const json& prompt, const json& subset, size_t pos,
               double tol, RowCheck* rc) {
  const std::string where = prompt["name"].get<std::string>() + " position " + std::to_string(pos);
  auto expect_near = [&](double got, double want, const std::string& what) {
    const double err = std::fabs(got - want);
    rc->max_err = std::max(rc->max_err, err);
    if (!(err <= tol) && rc->failures++ < 10)
      ADD_FAILURE() << where << " " << what << ": smezo " << got << ", transformers " << want
                    << " (tolerance " << tol << ")";
  };
  const json& want_subset = prompt["subset"][pos];
  for (size_t j = 0; j < subset.size(); j++)
    expect_near(row[subset[j].get<int64_t>()], want_subset[j].get<double>(),
                "logit of token " + std::to_string(subset[j].get<int64_t>()));
  const int64_t argmax = std::max_element(row, row + vocab) - row;
  double m = row[argmax], sum = 0;
  for (int64_t v = 0; v < vocab; v++) sum += std::exp(static_cast<double>(row[v]) - m);
  expect_near(m, prompt["max"][pos].get<double>(), "max logit");
  expect_near(m + std::log(sum), prompt["logsumexp"][pos].get<double>(), "logsumexp");
  const int64_t want = prompt["argmax"][pos].get<int64_t>();
  if (argmax == want) {
    rc->argmax_agree++;
  } else if (prompt["top2_gap"][pos].get<double>() > 2 * tol && rc->failures++ < 10) {
    ADD_FAILURE() << where << ": argmax " << argmax << ", transformers " << want
                  << " (a decisive difference: top-2 gap " << prompt["top2_gap"][pos] << ")";
  }
}

}  // namespace

TEST(GgufSmolLM2, ConfigComesFromTheMetadata) {
  const std::string path = smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  smezo::WeightSource src = smezo::load_weights(path);
  const smezo::ModelConfig& c = src.config;
  EXPECT_EQ(c.family, "llama");
  EXPECT_EQ(c.dim, 576);
  EXPECT_EQ(c.hidden_dim, 1536);
  EXPECT_EQ(c.n_layers, 30);
  EXPECT_EQ(c.n_heads, 9);
  EXPECT_EQ(c.n_kv_heads, 3);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.vocab_size, 49152);
  EXPECT_EQ(c.max_seq_len, 8192);
  EXPECT_FLOAT_EQ(c.norm_eps, 1e-5f);
  EXPECT_EQ(c.rope_theta, 100000.0f);
  EXPECT_EQ(c.rope_style, smezo::ROPE_INTERLEAVED);
  EXPECT_TRUE(c.tied_lm_head);
  EXPECT_EQ(c.bos_token, 1);
  EXPECT_EQ(c.eos_token, 2);
  EXPECT_EQ(src.tensors.size(), 272u);
  const smezo::HostTensorView* q = src.find("model.layers.7.self_attn.q_proj.weight");
  ASSERT_TRUE(q);
  EXPECT_STREQ(q->storage_name(), "Q4_1");
  EXPECT_EQ(q->shape, (std::vector<int64_t>{576, 576}));
  EXPECT_STREQ(src.find("model.embed_tokens.weight")->storage_name(), "Q8_0");
  EXPECT_STREQ(src.find("model.norm.weight")->storage_name(), "F32");
}

// Every prompt of the fixture in one packed batch (so packing is exercised too), then the
// chat prompt again through the key/value cache (the generation path).
void expect_logits_match_transformers(smezo::Backend& backend) {
  const std::string path = smollm2_path();
  const json fx = load_fixture();
  smezo::WeightSource src = smezo::load_weights(path);
  const smezo::ForwardBatch batch = make_batch(fx);
  smezo::Model model(src, backend, smezo::DTYPE_F32, batch.tokens.size(),
                     batch.tokens.size());
  std::vector<float> logits;
  model.forward(batch, smezo::Probe{}, &logits);
  const int64_t vocab = model.config().vocab_size;
  ASSERT_EQ(static_cast<int64_t>(logits.size()), static_cast<int64_t>(batch.tokens.size()) * vocab);
  int64_t row = 0;
  for (const json& prompt : fx["prompts"]) {
    const double tol = 1e-4 * (1 + prompt["max_abs_logit"].get<double>());
    RowCheck rc;
    const size_t n = prompt["tokens"].size();
    for (size_t pos = 0; pos < n; pos++, row++)
      check_row(&logits[static_cast<size_t>(row * vocab)], vocab, prompt, fx["vocab_subset"], pos, tol, &rc);
    std::printf("  %-6s %2zu tokens: max abs err %.3e (tolerance %.3e), argmax %d/%zu\n",
                prompt["name"].get<std::string>().c_str(), n, rc.max_err, tol, rc.argmax_agree, n);
  }

  // Generation path: the chat prompt fed as a 24-token chunk and then token by token.
  const json& chat = fx["prompts"].back();
  ASSERT_EQ(chat["name"], "chat");
  const std::vector<int32_t> tokens = chat["tokens"].get<std::vector<int32_t>>();
  const double tol = 1e-4 * (1 + chat["max_abs_logit"].get<double>());
  model.enable_kv_cache(static_cast<int64_t>(tokens.size()));
  RowCheck rc;
  const size_t first = 24;
  model.forward_cached(std::vector<int32_t>(tokens.begin(), tokens.begin() + first), 0, &logits);
  check_row(logits.data(), vocab, chat, fx["vocab_subset"], first - 1, tol, &rc);
  for (size_t pos = first; pos < tokens.size(); pos++) {
    model.forward_cached({tokens[pos]}, static_cast<int64_t>(pos), &logits);
    check_row(logits.data(), vocab, chat, fx["vocab_subset"], pos, tol, &rc);
  }
  EXPECT_EQ(rc.argmax_agree, static_cast<int>(tokens.size() - first + 1));
}

TEST(GgufSmolLM2, LogitsMatchTransformers) {
  SKIP_WITHOUT_SMOLLM2(smollm2_path());
  smezo::CpuBackend backend;
  expect_logits_match_transformers(backend);
}

// The same oracle on the CUDA backend (fp32): on a GPU, or on the emulated one (make emu-test).
TEST(GgufSmolLM2, LogitsMatchTransformersOnCuda) {
#ifdef SMEZO_WITH_CUDA
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  SKIP_WITHOUT_SMOLLM2(smollm2_path());
  smezo::CudaBackend backend;
  expect_logits_match_transformers(backend);
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// The fixture tells the RoPE conventions apart: the same weights read with Hugging Face's
// rotate-half pairs instead of GGUF's interleaved pairs miss it by far more than the tolerance.
TEST(GgufSmolLM2, FixtureRejectsTheWrongRopeConvention) {
  const std::string path = smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  const json fx = load_fixture();
  const json* shortest = &fx["prompts"][0];
  for (const json& p : fx["prompts"])
    if (p["tokens"].size() < (*shortest)["tokens"].size()) shortest = &p;
  const json& prompt = *shortest;
  smezo::WeightSource src = smezo::load_weights(path);
  src.config.rope_style = smezo::ROPE_ROTATE_HALF;
  const std::vector<int32_t> tokens = prompt["tokens"].get<std::vector<int32_t>>();
  const int64_t n = static_cast<int64_t>(tokens.size());
  smezo::CpuBackend backend;
  smezo::Model model(src, backend, smezo::DTYPE_F32, n, n);
  const std::vector<float> logits = smezo_test::logits_of(model, tokens);
  const int64_t vocab = model.config().vocab_size;
  const double tol = 1e-4 * (1 + prompt["max_abs_logit"].get<double>());
  double max_err = 0;
  for (int64_t pos = 1; pos < n; pos++) {  // position 0 has no rotation
    const json& want = prompt["subset"][pos];
    for (size_t j = 0; j < want.size(); j++) {
      const int64_t id = fx["vocab_subset"][j].get<int64_t>();
      max_err = std::max(max_err, std::fabs(logits[pos * vocab + id] - want[j].get<double>()));
    }
  }
  EXPECT_GT(max_err, 100 * tol);
}
