// Random block-quantised GGUF files (see packed_gguf_fixture.h).
#include "packed_gguf_fixture.h"

#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/half.h"
#include "formats/gguf.h"
#include "model/lora.h"
#include "model/model.h"
#include "model/model_loader.h"
#include "model_fixture.h"
#include "test_gguf_writer.h"
#include "test_util.h"

namespace smezo_test {

using namespace smezo;

const PackedScaleBytes kPackedBlockTypes[8] = {
    {GGUF_TYPE_Q8_0, 0, -1}, {GGUF_TYPE_Q4_0, 0, -1}, {GGUF_TYPE_Q4_1, 0, 2}, {GGUF_TYPE_Q5_0, 0, -1},
    {GGUF_TYPE_Q5_1, 0, 2},  {GGUF_TYPE_Q4_K, 0, 2},  {GGUF_TYPE_Q5_K, 0, 2}, {GGUF_TYPE_Q6_K, 208, -1}};

const PackedScaleBytes& packed_scale_bytes(uint32_t type) {
  for (const PackedScaleBytes& s : kPackedBlockTypes)
    if (s.type == type) return s;
  throw std::runtime_error("packed_scale_bytes: no such block type");
}

std::string random_packed_blocks(const PackedScaleBytes& s, int64_t n, const ScaleRange& range, std::mt19937* rng) {
  const GgufTypeTraits* t = gguf_type_traits(s.type);
  std::string out(static_cast<size_t>(n / t->block_size * t->block_bytes), '\0');
  for (char& c : out) c = static_cast<char>((*rng)() & 255);
  std::uniform_real_distribution<float> d(range.d_lo, range.d_hi), m(range.m_lo, range.m_hi);
  const bool k_quant = s.type == GGUF_TYPE_Q4_K || s.type == GGUF_TYPE_Q5_K || s.type == GGUF_TYPE_Q6_K;
  for (size_t b = 0; b < out.size(); b += static_cast<size_t>(t->block_bytes)) {
    const uint16_t dv = float_to_f16(d(*rng) / (s.type == GGUF_TYPE_Q8_0 ? 4 : k_quant ? 32 : 1));
    std::memcpy(&out[b + s.d_at], &dv, 2);
    if (s.m_at < 0) continue;
    const uint16_t mv = float_to_f16(k_quant ? -m(*rng) / 8 : m(*rng));
    std::memcpy(&out[b + s.m_at], &mv, 2);
  }
  return out;
}

std::string write_random_packed_gguf(uint32_t type, uint32_t embedding_type, bool tied, uint32_t seed,
                                     const ScaleRange& range, const RandomGgufShape& shape) {
  const int64_t dim = shape.dim;
  GgufBuilder b;
  b.add_string("general.architecture", "llama");
  b.add_u32("llama.context_length", 64);
  b.add_u32("llama.embedding_length", static_cast<uint32_t>(dim));
  b.add_u32("llama.block_count", static_cast<uint32_t>(shape.layers));
  b.add_u32("llama.feed_forward_length", static_cast<uint32_t>(shape.hidden));
  b.add_u32("llama.attention.head_count", 4);
  b.add_u32("llama.attention.head_count_kv", 2);
  b.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  b.add_u32("llama.vocab_size", static_cast<uint32_t>(shape.vocab));
  std::mt19937 rng(seed);
  auto add = [&](const std::string& name, uint32_t t, int64_t cols, int64_t rows) {
    GgufTestTensor x;
    x.name = name;
    x.type = t;
    x.dims = {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)};
    x.bytes = random_packed_blocks(packed_scale_bytes(t), cols * rows, range, &rng);
    b.add_tensor(x);
  };
  auto norm = [&](const std::string& name) {
    std::vector<float> v(static_cast<size_t>(dim));
    for (float& x : v) x = 0.8f + 0.4f * static_cast<float>(rng() % 1000) / 1000.0f;
    b.add_f32_tensor(name, {static_cast<uint64_t>(dim)}, v);
  };
  add("token_embd.weight", embedding_type, dim, shape.vocab);
  for (int64_t l = 0; l < shape.layers; l++) {
    const std::string p = "blk." + std::to_string(l) + ".";
    norm(p + "attn_norm.weight");
    add(p + "attn_q.weight", type, dim, dim);
    add(p + "attn_k.weight", type, dim, dim / 2);
    add(p + "attn_v.weight", type, dim, dim / 2);
    add(p + "attn_output.weight", type, dim, dim);
    norm(p + "ffn_norm.weight");
    add(p + "ffn_gate.weight", type, dim, shape.hidden);
    add(p + "ffn_up.weight", type, dim, shape.hidden);
    add(p + "ffn_down.weight", type, shape.hidden, dim);
  }
  norm("output_norm.weight");
  if (!tied) add("output.weight", type, dim, shape.vocab);
  const std::string path = make_temp_dir("packed_gguf") + "/model.gguf";
  b.write(path);
  return path;
}

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t& x : t) x = static_cast<int32_t>(rng() % vocab);
  return t;
}

PackedLogits lora_pair_logits(const std::string& path, bool packed, Backend& backend, DType dtype,
                              const std::vector<int32_t>& tokens) {
  WeightSource src = load_weights(path);
  src.keep_packed = packed;
  const int64_t n = static_cast<int64_t>(tokens.size());
  Model model(src, backend, dtype, 2 * n, 2 * n);
  PackedLogits r;
  r.bytes = backend.bytes_allocated();
  r.plain = logits_of(model, tokens);
  model.add_lora(LoraOptions{4, 8.0f, {ROLE_ATTN_Q, ROLE_ATTN_V, ROLE_MLP_DOWN}}, 7);
  randomize_adapters(model, 11, 0.05f);
  for (Param* p : model.params()) p->info.trainable = p->info.adapter != ADAPTER_NONE;
  ForwardBatch batch;  // two sequences, each run at +scale and at -scale
  batch.tokens = tokens;
  batch.seq_lens = {n / 2, n - n / 2};
  for (int64_t i = 0; i < n; i++) batch.logit_rows.push_back(i);
  model.forward(batch, Probe{1e-2f, 99, true}, &r.lora_pair);
  return r;
}

}  // namespace smezo_test
