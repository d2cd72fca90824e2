// LLaMA GGUF -> WeightSource: names, shapes and config from synthetic GGUF files written by
// the tests' writer; stories260K written as GGUF gives bit-identical logits to the llama2.c
// reader (both are interleaved-RoPE layouts); a quantised tensor reaches the model
// dequantised; and one clear error for each way the metadata and tensors can disagree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <set>

#include "common/assets.h"
#include "common/check.h"
#include "common/half.h"
#include "cpu/cpu_backend.h"
#include "formats/gguf.h"
#include "formats/gguf_dequant.h"
#include "model/model.h"
#include "model/model_loader.h"
#include "model_fixture.h"
#include "test_gguf_writer.h"
#include "test_util.h"

using namespace smezo;
using smezo_test::GgufBuilder;
using smezo_test::GgufTestTensor;
using testing::HasSubstr;

namespace {

// Hugging Face LLaMA name -> GGUF name (written here from llama.cpp's naming, independently
// of the loader's table).
std::string gguf_name(const std::string& hf) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  const std::string prefix = "model.layers.";
  const size_t dot = hf.find('.', prefix.size());
  const std::string layer = hf.substr(prefix.size(), dot - prefix.size());
  const std::string rest = hf.substr(dot + 1);
  const std::map<std::string, std::string> names = {
      {"input_layernorm.weight", "attn_norm.weight"}, {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},   {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},    {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"}};
  return "blk." + layer + "." + names.at(rest);
}

struct GgufOptions {
  std::set<std::string> skip;                     // metadata keys / GGUF tensor names left out
  std::function<void(GgufBuilder&)> extra;        // adds more keys/tensors at the end
  std::map<std::string, uint32_t> tensor_types;   // GGUF name -> type to store (default F32)
};

// Bytes of values (row-major, rows of `cols`) in a GGUF type: F32, or Q8_0 quantised here
// with a per-block scale max|x|/127.
std::string encode(const float* values, int64_t n, uint32_t type) {
  std::string out;
  if (type == GGUF_TYPE_F32) return std::string(reinterpret_cast<const char*>(values), n * 4);
  EXPECT_EQ(type, GGUF_TYPE_Q8_0);
  for (int64_t b = 0; b < n / 32; b++) {
    float amax = 0;
    for (int j = 0; j < 32; j++) amax = std::max(amax, std::fabs(values[b * 32 + j]));
    const uint16_t d = float_to_f16(amax / 127);
    out += std::string(reinterpret_cast<const char*>(&d), 2);
    for (int j = 0; j < 32; j++)
      out += static_cast<char>(static_cast<int8_t>(std::lround(values[b * 32 + j] / f16_to_float(d))));
  }
  return out;
}

// A LLaMA WeightSource (fp32 views) written as a GGUF file, the way llama.cpp lays it out.
std::string write_llama_gguf(const WeightSource& src, const GgufOptions& opt = {}) {
  const ModelConfig& c = src.config;
  GgufBuilder b;
  auto u32 = [&](const std::string& key, int64_t v) {
    if (!opt.skip.count(key)) b.add_u32(key, static_cast<uint32_t>(v));
  };
  if (!opt.skip.count("general.architecture")) b.add_string("general.architecture", "llama");
  u32("llama.context_length", c.max_seq_len);
  u32("llama.embedding_length", c.dim);
  u32("llama.block_count", c.n_layers);
  u32("llama.feed_forward_length", c.hidden_dim);
  u32("llama.attention.head_count", c.n_heads);
  u32("llama.attention.head_count_kv", c.n_kv_heads);
  u32("llama.rope.dimension_count", c.head_dim);
  if (!opt.skip.count("llama.rope.freq_base")) b.add_f32("llama.rope.freq_base", c.rope_theta);
  if (!opt.skip.count("llama.attention.layer_norm_rms_epsilon"))
    b.add_f32("llama.attention.layer_norm_rms_epsilon", c.norm_eps);
  u32("llama.vocab_size", c.vocab_size);
  if (!opt.skip.count("tokenizer.ggml.tokens")) {
    std::vector<std::string> tokens;
    for (int64_t i = 0; i < c.vocab_size; i++) tokens.push_back("t" + std::to_string(i));
    b.add_string_array("tokenizer.ggml.tokens", tokens);
  }
  u32("tokenizer.ggml.bos_token_id", 1);
  u32("tokenizer.ggml.eos_token_id", 2);
  for (const ExpectedTensor& e : expected_tensors(c)) {
    const std::string name = gguf_name(e.name);
    if (opt.skip.count(name)) continue;
    const HostTensorView& v = src.tensors.at(e.name);
    GgufTestTensor t;
    t.name = name;
    t.type = opt.tensor_types.count(name) ? opt.tensor_types.at(name) : GGUF_TYPE_F32;
    t.dims.assign(v.shape.rbegin(), v.shape.rend());
    t.bytes = encode(static_cast<const float*>(v.data), v.numel(), t.type);
    b.add_tensor(t);
  }
  if (opt.extra) opt.extra(b);
  const std::string path = smezo_test::make_temp_dir("gguf_llama") + "/model.gguf";
  b.write(path);
  return path;
}

ModelConfig interleaved_tiny_config() {
  ModelConfig c = smezo_test::tiny_llama_config();
  c.rope_style = ROPE_INTERLEAVED;
  c.rope_theta = 5000.0f;
  c.norm_eps = 1e-6f;
  return c;
}

std::string load_error(const std::string& path) {
  std::string msg = smezo_test::error_of([&] { load_weights(path); });
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_TRUE(smezo_test::is_one_line(msg));
  return msg;
}

std::vector<float> all_logits(const WeightSource& src, const std::vector<int32_t>& tokens) {
  CpuBackend backend;
  const int64_t n = static_cast<int64_t>(tokens.size());
  Model model(src, backend, DTYPE_F32, n, n);
  return smezo_test::logits_of(model, tokens);
}

}  // namespace

TEST(GgufLlama, ConfigAndTensorsRoundTrip) {
  const ModelConfig c = interleaved_tiny_config();
  WeightSource ref = smezo_test::random_weight_source(c, 11);
  const std::string path = write_llama_gguf(ref);
  WeightSource src = load_weights(path);
  const ModelConfig& g = src.config;
  EXPECT_EQ(g.dim, c.dim);
  EXPECT_EQ(g.hidden_dim, c.hidden_dim);
  EXPECT_EQ(g.n_layers, c.n_layers);
  EXPECT_EQ(g.n_heads, c.n_heads);
  EXPECT_EQ(g.n_kv_heads, c.n_kv_heads);
  EXPECT_EQ(g.head_dim, c.head_dim);
  EXPECT_EQ(g.vocab_size, c.vocab_size);
  EXPECT_EQ(g.max_seq_len, c.max_seq_len);
  EXPECT_EQ(g.norm_eps, c.norm_eps);
  EXPECT_EQ(g.rope_theta, c.rope_theta);
  EXPECT_EQ(g.rope_style, ROPE_INTERLEAVED);
  EXPECT_FALSE(g.tied_lm_head);
  EXPECT_EQ(g.bos_token, 1);
  EXPECT_EQ(g.eos_token, 2);
  ASSERT_EQ(src.tensors.size(), ref.tensors.size());
  for (const auto& kv : ref.tensors) {
    const HostTensorView* v = src.find(kv.first);
    ASSERT_TRUE(v) << kv.first;
    EXPECT_EQ(v->shape, kv.second.shape) << kv.first;
    EXPECT_EQ(v->decode, nullptr);
    EXPECT_STREQ(v->storage_name(), "F32");
    EXPECT_EQ(std::memcmp(v->data, kv.second.data, kv.second.numel() * 4), 0) << kv.first;
  }
  // no output.weight: tied head; no llama.vocab_size: the token list gives the vocabulary
  GgufOptions opt;
  opt.skip = {"output.weight", "llama.vocab_size", "llama.rope.freq_base"};
  WeightSource tied = load_weights(write_llama_gguf(ref, opt));
  EXPECT_TRUE(tied.config.tied_lm_head);
  EXPECT_EQ(tied.config.vocab_size, c.vocab_size);
  EXPECT_EQ(tied.config.rope_theta, 10000.0f);  // GGUF's default
  EXPECT_EQ(tied.find("lm_head.weight"), nullptr);
}

// stories260K (llama2.c, interleaved RoPE) written as a GGUF gives the same logits, bit for
// bit: the GGUF mapping keeps llama2.c's (= Meta's = GGUF's) row order and conventions.
TEST(GgufLlama, Stories260KAsGgufMatchesTheLlama2cReader) {
  WeightSource l2c = load_weights(asset_path("models/stories260K.bin"));
  const std::string path = write_llama_gguf(l2c, GgufOptions{{"output.weight"}, nullptr, {}});
  WeightSource gguf = load_weights(path);
  EXPECT_TRUE(gguf.config.tied_lm_head);
  EXPECT_EQ(gguf.config.rope_style, l2c.config.rope_style);
  const std::vector<int32_t> tokens = {1, 403, 407, 261, 378, 365, 425, 402, 260, 500, 11, 2, 77};
  std::vector<float> a = all_logits(l2c, tokens), b = all_logits(gguf, tokens);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
}

// A Q8_0 tensor is decoded into the model's parameter exactly as gguf_dequantize decodes it.
TEST(GgufLlama, QuantisedTensorsReachTheModelDequantised) {
  const ModelConfig c = interleaved_tiny_config();
  WeightSource ref = smezo_test::random_weight_source(c, 12);
  GgufOptions opt;
  opt.tensor_types = {{"blk.1.attn_q.weight", GGUF_TYPE_Q8_0}, {"token_embd.weight", GGUF_TYPE_Q8_0}};
  const std::string path = write_llama_gguf(ref, opt);
  WeightSource src = load_weights(path);
  const HostTensorView* q = src.find("model.layers.1.self_attn.q_proj.weight");
  ASSERT_TRUE(q);
  EXPECT_STREQ(q->storage_name(), "Q8_0");
  EXPECT_EQ(q->shape, (std::vector<int64_t>{32, 32}));
  std::vector<float> want(32 * 32);
  gguf_dequantize(GGUF_TYPE_Q8_0, q->data, 32 * 32, want.data());
  CpuBackend backend;
  Model model(src, backend, DTYPE_F32, 4, 4);
  const Param* loaded = nullptr;
  for (const Param* p : model.params())
    if (p->info.name == "model.layers.1.self_attn.q_proj.weight") loaded = p;
  ASSERT_TRUE(loaded);
  EXPECT_EQ(std::memcmp(loaded->w.data, want.data(), want.size() * 4), 0);
  // and the quantisation really changed the values (the test would pass on a plain copy otherwise)
  EXPECT_NE(std::memcmp(want.data(), ref.tensors.at(q->name).data, want.size() * 4), 0);
  float max_diff = 0;
  const float* orig = static_cast<const float*>(ref.tensors.at(q->name).data);
  for (size_t i = 0; i < want.size(); i++) max_diff = std::max(max_diff, std::fabs(want[i] - orig[i]));
  EXPECT_LT(max_diff, 0.3f / 127 * 0.6f);  // half a quantisation step (+ f16 scale rounding)
}

TEST(GgufLlama, RefusesMetadataThatDisagrees) {
  const ModelConfig c = interleaved_tiny_config();
  WeightSource ref = smezo_test::random_weight_source(c, 13);
  auto error_with = [&](std::set<std::string> skip, std::function<void(GgufBuilder&)> extra) {
    return load_error(write_llama_gguf(ref, GgufOptions{skip, extra, {}}));
  };
  EXPECT_THAT(error_with({"general.architecture"}, [](GgufBuilder& b) { b.add_string("general.architecture", "gpt2"); }),
              HasSubstr("general.architecture = 'gpt2' is not supported"));
  EXPECT_THAT(error_with({"general.architecture"}, nullptr),
              HasSubstr("GGUF metadata key 'general.architecture' is missing"));
  EXPECT_THAT(error_with({"llama.embedding_length"}, nullptr),
              HasSubstr("GGUF metadata key 'llama.embedding_length' is missing"));
  EXPECT_THAT(error_with({"llama.attention.layer_norm_rms_epsilon"}, nullptr),
              HasSubstr("'llama.attention.layer_norm_rms_epsilon' is missing"));
  EXPECT_THAT(error_with({"llama.block_count"}, [](GgufBuilder& b) { b.add_u32("llama.block_count", 0); }),
              HasSubstr("'llama.block_count' = 0 is not a valid size"));
  EXPECT_THAT(error_with({"llama.feed_forward_length"}, [](GgufBuilder& b) { b.add_string("llama.feed_forward_length", "48"); }),
              HasSubstr("'llama.feed_forward_length' is string, expected an unsigned integer"));
  EXPECT_THAT(error_with({"llama.vocab_size"}, [](GgufBuilder& b) { b.add_u32("llama.vocab_size", 41); }),
              HasSubstr("llama.vocab_size = 41 but tokenizer.ggml.tokens has 40 entries"));
  EXPECT_THAT(error_with({"llama.vocab_size", "tokenizer.ggml.tokens"}, nullptr),
              HasSubstr("neither llama.vocab_size nor tokenizer.ggml.tokens"));
  EXPECT_THAT(error_with({"llama.attention.head_count_kv"}, [](GgufBuilder& b) { b.add_u32("llama.attention.head_count_kv", 3); }),
              HasSubstr("llama.attention.head_count 4 is not a multiple of llama.attention.head_count_kv 3"));
  EXPECT_THAT(error_with({"llama.rope.dimension_count"}, [](GgufBuilder& b) { b.add_u32("llama.rope.dimension_count", 4); }),
              HasSubstr("llama.rope.dimension_count = 4 but the head size is 8"));
  EXPECT_THAT(error_with({}, [](GgufBuilder& b) { b.add_string("llama.rope.scaling.type", "linear"); }),
              HasSubstr("llama.rope.scaling.type = 'linear': RoPE scaling of this type is not supported"));
  EXPECT_THAT(error_with({}, [](GgufBuilder& b) { b.add_u32("llama.expert_count", 8); }),
              HasSubstr("mixture-of-experts"));
  EXPECT_THAT(error_with({"tokenizer.ggml.eos_token_id"}, [](GgufBuilder& b) { b.add_u32("tokenizer.ggml.eos_token_id", 40); }),
              HasSubstr("tokenizer.ggml.eos_token_id = 40 is outside the vocabulary (40 tokens)"));
  // Found by fuzz_gguf: a block_count of millions was sized into a layer table before any check.
  EXPECT_THAT(error_with({"llama.block_count"}, [](GgufBuilder& b) { b.add_u32("llama.block_count", 4194305u); }),
              HasSubstr("config n_layers = 4194305 is outside 1..4096"));
  EXPECT_THAT(load_error("tests/fixtures/fuzz/gguf_huge_block_count.gguf"), HasSubstr("is outside 1.."));
}

TEST(GgufLlama, RefusesTensorsThatDisagree) {
  const ModelConfig c = interleaved_tiny_config();
  WeightSource ref = smezo_test::random_weight_source(c, 14);
  auto error_with = [&](std::set<std::string> skip, std::function<void(GgufBuilder&)> extra) {
    return load_error(write_llama_gguf(ref, GgufOptions{skip, extra, {}}));
  };
  auto f32 = [](const std::string& name, std::vector<uint64_t> dims) {
    return [name, dims](GgufBuilder& b) {
      int64_t n = 1;
      for (uint64_t d : dims) n *= static_cast<int64_t>(d);
      b.add_f32_tensor(name, dims, smezo_test::random_floats(n, 5));
    };
  };
  EXPECT_THAT(error_with({"blk.1.ffn_up.weight"}, nullptr),
              HasSubstr("tensor 'blk.1.ffn_up.weight' is missing"));
  EXPECT_THAT(error_with({"token_embd.weight"}, nullptr), HasSubstr("tensor 'token_embd.weight' is missing"));
  EXPECT_THAT(error_with({"blk.0.attn_k.weight"}, f32("blk.0.attn_k.weight", {32, 12})),
              HasSubstr("tensor 'blk.0.attn_k.weight' has dims [32, 12], but the metadata "
                        "(llama.embedding_length, llama.attention.head_count_kv and the head size) says [32, 16]"));
  EXPECT_THAT(error_with({"token_embd.weight"}, f32("token_embd.weight", {32, 41})),
              HasSubstr("tensor 'token_embd.weight' has dims [32, 41], but the metadata"));
  EXPECT_THAT(error_with({"blk.0.ffn_norm.weight"}, f32("blk.0.ffn_norm.weight", {32, 1})),
              HasSubstr("tensor 'blk.0.ffn_norm.weight' has dims [32, 1], but the metadata (llama.embedding_length) says [32]"));
  EXPECT_THAT(error_with({}, f32("blk.2.attn_q.weight", {32, 32})),
              HasSubstr("tensor 'blk.2.attn_q.weight' has no place in a llama model with 2 layers"));
  EXPECT_THAT(error_with({}, f32("blk.1.attn_q.bias", {32})),
              HasSubstr("tensor 'blk.1.attn_q.bias' has no place"));  // layer 0 has none: no q/k/v biases
  EXPECT_THAT(error_with({}, f32("blk.0.attn_q.bias", {32})),
              HasSubstr("q/k biases or q/k norms with interleaved RoPE rows"));
  EXPECT_THAT(error_with({}, f32("blk.01.attn_q.weight", {32, 32})), HasSubstr("tensor 'blk.01.attn_q.weight' has no place"));
  EXPECT_THAT(error_with({}, f32("rope_freqs.weight", {3})),
              HasSubstr("tensor 'rope_freqs.weight' must be F32 of 4 values (one per RoPE pair), it is F32 of dims [3]"));
}

TEST(GgufLlama, InfoAndLogitsFromTheCli) {
  const ModelConfig c = interleaved_tiny_config();
  WeightSource ref = smezo_test::random_weight_source(c, 15);
  GgufOptions opt;
  opt.tensor_types = {{"blk.0.ffn_gate.weight", GGUF_TYPE_Q8_0}};
  const std::string path = write_llama_gguf(ref, opt);
  std::string out;
  ASSERT_EQ(smezo_test::run_command(smezo_test::smezo_binary() + " info --model " + path, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("rope interleaved theta 5000"));
  EXPECT_THAT(out, HasSubstr("model.layers.0.mlp.gate_proj.weight"));
  EXPECT_THAT(out, HasSubstr("Q8_0"));
  const std::string logits = path + ".logits.safetensors";
  ASSERT_EQ(smezo_test::run_command(smezo_test::smezo_binary() + " logits --model " + path +
                                        " --tokens 3,1,4,1,5 --out " + logits, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("wrote logits (5, 40)"));
  std::string bad = path + ".bad.gguf";
  smezo_test::write_file(bad, smezo_test::read_file(path).substr(0, 300));
  EXPECT_NE(smezo_test::run_command(smezo_test::smezo_binary() + " info --model " + bad, &out), 0);
  EXPECT_THAT(out, HasSubstr("smezo: error: " + bad));
}
