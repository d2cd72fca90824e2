// --weights packed (formats/packed_weights.h): a GGUF's block-quantised weights kept in their blocks give
// the logits of the load-time dequantisation bit for bit (a random model of every block type; SmolLM2's
// Q4_1 + tied Q8_0 head), unperturbed and under a probe pair over LoRA adapters; the scale override the
// scales mode will use; and the refusals (a type that cannot stay packed, a row that is not whole blocks,
// a full-weight run over a packed base).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

#include "common/check.h"
#include "common/half.h"
#include "cpu/cpu_backend.h"
#include "formats/gguf.h"
#include "formats/packed_weights.h"
#include "model/lora.h"
#include "model/model.h"
#include "model/model_loader.h"
#include "model_fixture.h"
#include "packed_gguf_fixture.h"
#include "smezo/train.h"
#include "test_gguf_writer.h"
#include "test_util.h"
#include "train/checkpoint_scales.h"
#include "train/spsa.h"
#include "train/train_options.h"

using namespace smezo;
using smezo_test::GgufBuilder;
using smezo_test::GgufTestTensor;
using smezo_test::kPackedBlockTypes;
using smezo_test::kPositiveScales;
using smezo_test::lora_pair_logits;
using smezo_test::PackedLogits;
using smezo_test::PackedScaleBytes;
using smezo_test::random_packed_blocks;
using smezo_test::random_tokens;
using smezo_test::write_random_packed_gguf;
using testing::HasSubstr;

TEST(PackedWeights, EveryBlockTypeGivesTheDequantisedLogitsBitForBit) {
  const std::vector<int32_t> tokens = random_tokens(12, 1000, smezo_test::base_seed());
  for (const PackedScaleBytes& s : kPackedBlockTypes) {
    SCOPED_TRACE(gguf_type_name(s.type));
    const bool tied = s.type == GGUF_TYPE_Q4_1;  // SmolLM2's layout: a tied Q8_0 embedding/head
    const std::string path = write_random_packed_gguf(s.type, tied ? GGUF_TYPE_Q8_0 : s.type, tied,
                                                      smezo_test::base_seed(), kPositiveScales);
    CpuBackend b1, b2;
    const PackedLogits want = lora_pair_logits(path, false, b1, DTYPE_F32, tokens),
                       got = lora_pair_logits(path, true, b2, DTYPE_F32, tokens);
    ASSERT_EQ(got.plain.size(), 12u * 1000u);
    EXPECT_GT(smezo_test::max_abs(want.plain), 0.1);  // the random model computes something
    EXPECT_TRUE(smezo_test::same_bits(want.plain, got.plain));
    EXPECT_TRUE(smezo_test::same_bits(want.lora_pair, got.lora_pair));
    EXPECT_GT(smezo_test::max_diff(want.plain, want.lora_pair), 0.0);  // the adapters and the probe count
    // the weights in their blocks: at least 3.5x smaller than fp32 (Q8_0 34 bytes per 32 values)
    EXPECT_LT(got.bytes * 3, want.bytes);
  }
}

TEST(PackedWeights, SmolLM2LogitsBitForBitWithTheTiedQ8Head) {
  const std::string path = smezo_test::smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  const std::vector<int32_t> tokens = {1, 504, 3537, 28, 2030, 314, 29, 17, 2};
  std::vector<float> want, got;
  for (bool packed : {false, true}) {
    WeightSource src = load_weights(path);
    src.keep_packed = packed;
    CpuBackend backend;
    Model model(src, backend, DTYPE_F32, 16, 16);
    (packed ? got : want) = smezo_test::logits_of(model, tokens);
    if (packed) {
      EXPECT_LT(backend.bytes_allocated(), int64_t{150} << 20);  // 96.6 MB of blocks + workspace
    }
  }
  EXPECT_TRUE(smezo_test::same_bits(want, got));
}

TEST(PackedWeights, ScaleOverrideReplacesTheStoredScales) {
  std::mt19937 rng(smezo_test::base_seed());
  for (const PackedScaleBytes& s : kPackedBlockTypes) {
    SCOPED_TRACE(gguf_type_name(s.type));
    const int64_t bs = gguf_type_traits(s.type)->block_size, blocks = 3, n = blocks * bs;
    std::string bytes = random_packed_blocks(s, n, kPositiveScales, &rng);
    const int64_t row_bytes = packed_row_bytes(s.type, n, "test tensor");
    const Tensor t{&bytes[0], DTYPE_F32, 1, n, s.type, row_bytes};
    std::vector<float> stored(n), same(n), doubled(n), d(blocks), m(blocks);
    dequantize_packed(t, 0, n, stored.data());
    std::vector<float> plain(n);
    gguf_dequantize(s.type, bytes.data(), n, plain.data());
    EXPECT_TRUE(smezo_test::same_bits(stored, plain));
    const int64_t block_bytes = gguf_type_traits(s.type)->block_bytes;
    for (int64_t b = 0; b < blocks; b++) {
      uint16_t h;
      std::memcpy(&h, &bytes[b * block_bytes + s.d_at], 2);
      d[b] = f16_to_float(h);
      if (s.m_at >= 0) std::memcpy(&h, &bytes[b * block_bytes + s.m_at], 2);
      m[b] = s.m_at >= 0 ? f16_to_float(h) : 0.0f;
    }
    dequantize_packed(t, 0, n, same.data(), GgufScaleOverride{d.data(), m.data()});
    EXPECT_TRUE(smezo_test::same_bits(stored, same));  // the stored scales as overrides: the same bits
    // d doubled in block 1 only, m zero: block 1 read from the second block on (start = one block)
    std::vector<float> d2 = d, zero(blocks, 0.0f);
    d2[1] *= 2.0f;
    std::vector<float> part(2 * bs);
    dequantize_packed(t, bs, 2 * bs, part.data(), GgufScaleOverride{d2.data(), nullptr});
    for (int64_t i = 0; i < bs; i++) ASSERT_EQ(part[bs + i], stored[2 * bs + i]);  // block 2 untouched
    double moved = 0;
    for (int64_t i = 0; i < bs; i++) moved += std::fabs(part[i] - stored[bs + i]);
    EXPECT_GT(moved, 0.0);
    if (s.m_at >= 0) {  // m (dmin) overridden alone: block values move by the old offset
      dequantize_packed(t, 0, n, doubled.data(), GgufScaleOverride{nullptr, zero.data()});
      EXPECT_FALSE(smezo_test::same_bits(stored, doubled));
    }
  }
}

TEST(PackedWeights, RefusesWhatCannotStayPacked) {
  std::string msg = smezo_test::error_of([] { packed_row_bytes(GGUF_TYPE_F16, 64, "tensor w in f.gguf"); });
  EXPECT_THAT(msg, HasSubstr("tensor w in f.gguf has type F16, which --weights packed cannot keep"));
  EXPECT_THAT(msg, HasSubstr("---> HINT: use --weights dequantized"));
  msg = smezo_test::error_of([] { packed_row_bytes(GGUF_TYPE_Q4_K, 320, "tensor w in f.gguf"); });
  EXPECT_THAT(msg, HasSubstr("blocks hold 256 values, but its rows have 320 values"));
  EXPECT_TRUE(smezo_test::is_one_line(msg));
  // a row of a GGUF tensor that is not whole blocks is refused where the file is read
  GgufBuilder b;
  b.add_string("general.architecture", "llama");
  b.add_tensor(GgufTestTensor{"w", GGUF_TYPE_Q4_0, {48, 2}, std::string(18 * 3, '\0')});
  const std::string path = smezo_test::make_temp_dir("packed_bad") + "/bad.gguf";
  b.write(path);
  msg = smezo_test::error_of([&] { GgufFile::open(path); });
  EXPECT_THAT(msg, HasSubstr("innermost dimension 48 is not a multiple of the block size"));
  // a full-weight run over a packed base
  TrainOptions o;
  o.weights = WEIGHTS_PACKED;
  o.tune = TUNE_FULL;
  msg = smezo_test::error_of([&] { validate_train_options(o); });
  EXPECT_THAT(msg, HasSubstr("--tune full (MeZO/S-MeZO) updates every weight ---> HINT: use --tune lora"));
  o.tune = TUNE_LORA;
  EXPECT_NO_THROW(validate_train_options(o));
}

// A packed weight is frozen: perturbing or updating it is refused, never done silently.
TEST(PackedWeights, APackedWeightIsNeverPerturbedOrUpdated) {
  const std::string path = write_random_packed_gguf(GGUF_TYPE_Q4_0, GGUF_TYPE_Q8_0, true, 5, kPositiveScales);
  WeightSource src = load_weights(path);
  src.keep_packed = true;
  CpuBackend backend;
  Model model(src, backend, DTYPE_F32, 8, 8);
  Param* q = nullptr;
  for (Param* p : model.params())
    if (p->info.name == "model.layers.0.self_attn.q_proj.weight") q = p;
  ASSERT_TRUE(q && q->w.packed());
  std::vector<int32_t> tokens = random_tokens(4, 1000, 3);
  ForwardBatch batch;
  batch.tokens = tokens;
  batch.seq_lens = {4};
  batch.logit_rows = {3};
  std::vector<float> out;
  EXPECT_THAT(smezo_test::error_of([&] { model.forward(batch, Probe{1e-3f, 5}, &out); }),
              HasSubstr("cannot be perturbed"));
  EXPECT_THAT(smezo_test::error_of([&] { backend.update(*q, 1e-3f, 0.0f, 5); }),
              HasSubstr("which is packed (--weights packed keeps frozen weights only)"));
  std::vector<float> values(static_cast<size_t>(q->w.numel()));
  EXPECT_THAT(smezo_test::error_of([&] { backend.upload(q->w, values.data()); }),
              HasSubstr("upload into a packed weight"));
  // a trainable packed weight is refused where a run would tune it
  EXPECT_THAT(smezo_test::error_of([&] { SpsaOptimizer optimizer(model, SpsaOptions{}); }),
              HasSubstr("is kept in its quantised blocks (--weights packed), which holds frozen weights only"));
}

TEST(PackedWeights, ReadsOnlyWholeBlocks) {
  std::mt19937 rng(smezo_test::base_seed());
  std::string bytes = random_packed_blocks(kPackedBlockTypes[0], 64, kPositiveScales, &rng);
  const Tensor t{&bytes[0], DTYPE_F32, 2, 32, GGUF_TYPE_Q8_0, 34};
  std::vector<float> out(64);
  EXPECT_THAT(smezo_test::error_of([&] { dequantize_packed(t, 16, 32, out.data()); }),
              HasSubstr("packed Q8_0 read of [16, 48) is not whole blocks of 32 inside the tensor's 64 values"));
  EXPECT_THAT(smezo_test::error_of([&] { dequantize_packed(Tensor{}, 0, 0, out.data()); }),
              HasSubstr("dequantize_packed of a tensor that is not packed"));
  EXPECT_THAT(smezo_test::error_of([] { packed_block_size(Tensor{}); }),
              HasSubstr("packed_block_size of a tensor that is not packed"));
}

namespace {

// The file's scales of every packed weight of `path` perturbed by sign * scale * m * z as the noise spec
// says (tensor ids and masks from the model's scales Params), decoded into an fp32 model of the same file.
std::vector<float> spec_logits(const std::string& path, Model& scaled, const Probe& single,
                               const std::vector<int32_t>& tokens) {
  WeightSource src = load_weights(path);
  CpuBackend backend;
  const int64_t n = static_cast<int64_t>(tokens.size());
  Model plain(src, backend, DTYPE_F32, 2 * n, 2 * n);
  for (size_t i = 0; i < plain.params().size(); i++) {
    const Param* packed = scaled.params()[i];
    if (!packed->scales) continue;
    const Param& s = *packed->scales;
    const int64_t nb = s.w.cols;
    std::vector<float> v(s.w.f32(), s.w.f32() + s.w.numel());
    for (int64_t e = 0; e < s.w.numel(); e++) {
      const float z = noise_z(s.info.noise, single.seed, s.info.tensor_id, e);
      const bool keep = mask_keep(s.info.mask, v[e], s.info.threshold, 1.0f, 0, s.info.tensor_id, e);
      v[e] = perturbed_value(v[e], z, single.scale, keep);
    }
    std::vector<float> w(static_cast<size_t>(packed->w.numel()));
    gguf_dequantize_scaled(packed->w.packed_type, packed->w.data, packed->w.numel(), w.data(),
                           GgufScaleOverride{v.data(), s.w.rows == 2 ? v.data() + nb : nullptr});
    backend.upload(plain.params()[i]->w, w.data());
  }
  return smezo_test::logits_of(plain, tokens);
}

}  // namespace

// --tune scales: each packed weight's master scales, read through a probe pair (the + and - halves in one
// pass), give the logits of an fp32 model whose weights were decoded with the spec's perturbed scales, bit
// for bit, for every block type (m/dmin too where the type has one; one tensor under S-MeZO's |d| mask).
TEST(PackedWeights, PerturbedMasterScalesGiveTheSpecsWeightsBitForBit) {
  const std::vector<int32_t> tokens = random_tokens(6, 1000, smezo_test::base_seed() + 1);
  for (const PackedScaleBytes& s : kPackedBlockTypes) {
    SCOPED_TRACE(gguf_type_name(s.type));
    const bool tied = s.type == GGUF_TYPE_Q4_1;
    const std::string path = write_random_packed_gguf(s.type, tied ? GGUF_TYPE_Q8_0 : s.type, tied,
                                                      smezo_test::base_seed(), kPositiveScales);
    WeightSource src = load_weights(path);
    src.keep_packed = true;
    CpuBackend backend;
    Model model(src, backend, DTYPE_F32, 12, 12);
    const std::vector<float> before = smezo_test::logits_of(model, tokens);
    const size_t base_count = model.params().size();
    model.add_scales(true);
    EXPECT_TRUE(smezo_test::same_bits(before, smezo_test::logits_of(model, tokens)));  // masters = the f16 scales
    Param* masked = nullptr;
    for (Param* p : model.params()) {
      p->info.trainable = model.is_scales(p);
      if (!p->scales) continue;
      EXPECT_GE(p->scales->info.tensor_id, base_count);  // new streams after the canonical list
      EXPECT_EQ(p->scales->w.rows, packed_type_has_m(p->w.packed_type) ? 2 : 1);  // the Q8_0 embedding: 1
      EXPECT_EQ(p->scales->w.cols * packed_block_size(p->w), p->w.numel());
      if (!masked && p->info.role == ROLE_ATTN_V) masked = p->scales;
    }
    ASSERT_TRUE(masked);
    masked->info.mask = MASK_MAGNITUDE;
    masked->info.threshold = backend.abs_quantile(*masked, 0.5);
    ForwardBatch batch;
    batch.tokens = tokens;
    batch.seq_lens = {6};
    for (int64_t i = 0; i < 6; i++) batch.logit_rows.push_back(i);
    const float scale = s.type == GGUF_TYPE_Q8_0 ? 2e-4f : 1e-3f;
    std::vector<float> pair;
    model.forward(batch, Probe{scale, 77, true}, &pair);
    const std::vector<float> plus(pair.begin(), pair.begin() + pair.size() / 2),
        minus(pair.begin() + pair.size() / 2, pair.end());
    EXPECT_TRUE(smezo_test::same_bits(plus, spec_logits(path, model, Probe{scale, 77}, tokens)));
    EXPECT_TRUE(smezo_test::same_bits(minus, spec_logits(path, model, Probe{-scale, 77}, tokens)));
    EXPECT_GT(smezo_test::max_diff(plus, before), 1e-4);  // the probe moves the logits
  }
}

TEST(PackedWeights, MasterScalesRefusals) {
  const std::string path = write_random_packed_gguf(GGUF_TYPE_Q4_1, GGUF_TYPE_Q8_0, true, 9, kPositiveScales);
  WeightSource src = load_weights(path);
  src.keep_packed = true;
  CpuBackend backend;
  Model model(src, backend, DTYPE_F32, 8, 8);
  EXPECT_THAT(smezo_test::error_of([&] { save_scales_checkpoint(model, smezo_test::make_temp_dir("no_scales"), path,
                                                                nlohmann::json::object()); }),
              HasSubstr("save_scales_checkpoint: the model has no master scales"));
  EXPECT_THAT(smezo_test::error_of([&] { model.packed_file_name("model.norm.weight"); }),
              HasSubstr("model.norm.weight is not a packed weight of this model"));
  EXPECT_EQ(model.packed_file_name("model.layers.1.mlp.down_proj.weight"), "blk.1.ffn_down.weight");
  model.add_scales(false);
  EXPECT_THAT(smezo_test::error_of([&] { model.add_scales(false); }),
              HasSubstr("--tune scales: master scales go on a whole model without master scales, LoRA or a "
                        "prefix (this one: scales"));
  EXPECT_THAT(smezo_test::error_of([] { scales_with_m_from_json({{"mode", "lora"}}, "LOG line 1"); }),
              HasSubstr("LOG line 1: the run header's tune {\"mode\":\"lora\"} is not a --tune scales record"));
}

// smezo info on a packed GGUF: the memory estimates of --weights packed under --tune lora and --tune scales,
// on the CPU and on CUDA (both modes run on both devices: no line says one does not).
TEST(PackedWeights, InfoEstimatesBothModesOnBothDevices) {
  const std::string path = write_random_packed_gguf(GGUF_TYPE_Q4_1, GGUF_TYPE_Q8_0, true, 3, kPositiveScales);
  std::string out;
  ASSERT_EQ(smezo_test::run_command(smezo_test::smezo_binary() + " info " + path + " 2>&1", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("--weights packed, --tune lora (r 8, q v):"));
  EXPECT_THAT(out, HasSubstr("--tune scales (f32 master d per block):"));
  EXPECT_THAT(out, HasSubstr("(predicted: the stored blocks, the f32 masters and the W' block)"));
  EXPECT_THAT(out, testing::Not(HasSubstr("does not")));
}
