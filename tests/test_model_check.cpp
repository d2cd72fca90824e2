// The checks every model goes through when it is opened (model/model_check.h), the
// overflow-checked model sizes they rest on (model/model_size.h), the NaN/Inf check of the
// weights at load (convert_to_f32_checked), and the escaping of file bytes in messages
// (printable in common/check.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/assets.h"
#include "common/check.h"
#include "common/checked_int.h"
#include "common/half.h"
#include "cpu/cpu_backend.h"
#include "model/llama2c.h"
#include "model/model.h"
#include "model/model_check.h"
#include "model/model_size.h"
#include "model_fixture.h"
#include "test_util.h"

using namespace smezo;
using smezo_test::error_of;
using smezo_test::random_weight_source;
using smezo_test::tiny_llama_config;
using smezo_test::tiny_opt_config;
using testing::HasSubstr;
using testing::Not;

namespace {

int64_t sum_expected(const ModelConfig& c) {
  int64_t n = 0;
  for (const ExpectedTensor& e : expected_tensors(c)) {
    int64_t k = 1;
    for (int64_t d : e.shape) k *= d;
    n += k;
  }
  return n;
}

// A no-data bf16/f16 view of `values` encoded as dtype (kept alive by the source).
void set_half_tensor(WeightSource& src, const std::string& name, DType dtype,
                     const std::vector<float>& values) {
  auto buf = std::shared_ptr<uint16_t>(new uint16_t[values.size()], std::default_delete<uint16_t[]>());
  for (size_t i = 0; i < values.size(); i++)
    buf.get()[i] = dtype == DTYPE_F16 ? float_to_f16(values[i]) : float_to_bf16(values[i]);
  src.tensors[name].dtype = dtype;
  src.tensors[name].data = buf.get();
  src.keep_alive.push_back(buf);
}

std::string model_error(const WeightSource& src) {
  return error_of([&] {
    CpuBackend be;
    Model m(src, be, DTYPE_F32, 8, 8);
  });
}

}  // namespace

// --- model_size.h

TEST(ModelSize, CountsEqualTheExpectedTensors) {
  for (const ModelConfig& c : {tiny_llama_config(), tiny_opt_config()}) {
    ModelSize s;
    ASSERT_TRUE(model_size_of(c, &s));
    EXPECT_EQ(s.parameters, sum_expected(c)) << c.family;
    ModelConfig three = c;  // c has 2 layers
    three.n_layers = 3;
    ModelSize s3;
    ASSERT_TRUE(model_size_of(three, &s3));
    EXPECT_EQ(s3.parameters - s.parameters, s.layer_parameters);
    EXPECT_EQ(model_weight_bytes(s, DTYPE_BF16), 2 * s.parameters);
    EXPECT_EQ(model_weight_bytes(s, DTYPE_F32), 4 * s.parameters);
  }
  ModelConfig c = tiny_llama_config();
  ModelSize s;
  ASSERT_TRUE(model_size_of(c, &s));
  EXPECT_EQ(s.largest_tensor, c.hidden_dim * c.dim);  // the MLP matrices (48 x 32)
}

TEST(ModelSize, Stories260KHas260032Parameters) {
  WeightSource src = load_llama2c(asset_path("models/stories260K.bin"));
  ModelSize s;
  ASSERT_TRUE(model_size_of(src.config, &s));
  EXPECT_EQ(s.parameters, 260032);
  EXPECT_EQ(format_count(s.parameters), "260 K");
  EXPECT_EQ(format_bytes(model_weight_bytes(s, DTYPE_F32)), "1.04 MB");
}

TEST(ModelSize, RefusesOutOfRangeAndOverflowingConfigs) {
  ModelSize s;
  ModelConfig c = tiny_llama_config();
  c.n_layers = int64_t(1) << 40;
  EXPECT_FALSE(model_size_of(c, &s));
  c = tiny_llama_config();
  c.head_dim = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(model_size_of(c, &s));
  c = tiny_llama_config();
  c.vocab_size = 0;
  EXPECT_FALSE(model_size_of(c, &s));
  // every bound at once still fits int64 (4096 layers of 2^20-wide matrices)
  c = tiny_llama_config();
  c.dim = c.hidden_dim = kMaxWidth;
  c.n_heads = c.n_kv_heads = 1;
  c.head_dim = kMaxWidth;
  c.n_layers = kMaxLayers;
  c.vocab_size = kMaxVocab;
  ASSERT_TRUE(model_size_of(c, &s));
  EXPECT_GT(s.parameters, int64_t(1) << 52);
  EXPECT_EQ(model_weight_bytes(s, DTYPE_F32), 4 * s.parameters);
}

TEST(ModelSize, CheckedArithmetic) {
  int64_t out = -1;
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_TRUE(checked_mul(int64_t(1) << 31, int64_t(1) << 31, &out));
  EXPECT_EQ(out, int64_t(1) << 62);
  EXPECT_FALSE(checked_mul(int64_t(1) << 32, int64_t(1) << 31, &out));
  EXPECT_EQ(out, int64_t(1) << 62);  // untouched on overflow
  EXPECT_TRUE(checked_mul(0, max, &out));
  EXPECT_EQ(out, 0);
  EXPECT_FALSE(checked_mul(-1, 2, &out));
  EXPECT_TRUE(checked_add(max - 1, 1, &out));
  EXPECT_FALSE(checked_add(max, 1, &out));
  const int64_t dims[3] = {int64_t(1) << 30, int64_t(1) << 30, 16};
  EXPECT_EQ(checked_numel(dims, 2), int64_t(1) << 60);
  EXPECT_EQ(checked_numel(dims, 3), -1);
  EXPECT_EQ(checked_numel(dims, 0), 1);
}

TEST(ModelSize, FormatsSizes) {
  EXPECT_EQ(format_bytes(17), "17 B");
  EXPECT_EQ(format_bytes(12345), "12.3 KB");
  EXPECT_EQ(format_bytes(int64_t(13476839424)), "13.5 GB");
  EXPECT_EQ(format_count(512), "512");
  EXPECT_EQ(format_count(int64_t(6738415616)), "6.74 G");
}

// --- check_model_config: each field out of range is named

TEST(ModelCheck, ConfigFieldsOutOfRangeAreNamed) {
  struct Case {
    const char* expect;
    void (*mutate)(ModelConfig&);
  } cases[] = {
      {"n_layers = 1099511627776 is outside 1..4096", [](ModelConfig& c) { c.n_layers = int64_t(1) << 40; }},
      {"n_layers = 0", [](ModelConfig& c) { c.n_layers = 0; }},
      {"head_dim = 9223372036854775807", [](ModelConfig& c) { c.head_dim = std::numeric_limits<int64_t>::max(); }},
      {"dim = -3", [](ModelConfig& c) { c.dim = -3; }},
      {"vocab_size = 0", [](ModelConfig& c) { c.vocab_size = 0; }},
      {"n_heads * head_dim", [](ModelConfig& c) { c.n_heads = 1 << 12; c.n_kv_heads = 1; c.head_dim = 1 << 10; }},
      {"not a multiple of n_kv_heads", [](ModelConfig& c) { c.n_kv_heads = 3; }},
      {"head_dim 7 must be even", [](ModelConfig& c) { c.head_dim = 7; }},
      {"rope_theta inf", [](ModelConfig& c) { c.rope_theta = INFINITY; }},
      {"norm_eps inf", [](ModelConfig& c) { c.norm_eps = INFINITY; }},
      {"norm_eps 0 ", [](ModelConfig& c) { c.norm_eps = 0.0f; }},
      {"norm_eps nan", [](ModelConfig& c) { c.norm_eps = NAN; }},
      {"bos token 40 is outside the vocabulary (0..39", [](ModelConfig& c) { c.bos_token = 40; }},
      {"eos token -2", [](ModelConfig& c) { c.eos_token = -2; }},
      {"sliding_window -5", [](ModelConfig& c) { c.sliding_window = -5; }},
      {"model family 'gemma3' is unknown; smezo runs llama, mistral, opt, qwen2, qwen3",
       [](ModelConfig& c) { c.family = "gemma3"; }},
      {"llama3 RoPE scaling needs factor > 0, 0 < low_freq_factor < high_freq_factor",
       [](ModelConfig& c) { c.rope_scaling.kind = ROPE_SCALING_LLAMA3; c.rope_scaling.high_freq_factor = 0.5f; }},
      {"3 RoPE frequency divisors for head_dim 8", [](ModelConfig& c) { c.rope_scaling.freq_divisors = {1, 2, 4}; }},
      {"a RoPE frequency divisor is 0", [](ModelConfig& c) { c.rope_scaling.freq_divisors = {1, 2, 0, 4}; }},
      {"q/k biases or q/k norms with interleaved RoPE rows",
       [](ModelConfig& c) { c.rope_style = ROPE_INTERLEAVED; c.qk_norm = true; }},
  };
  for (const Case& k : cases) {
    ModelConfig c = tiny_llama_config();
    k.mutate(c);
    std::string msg = error_of([&] { check_model_config(c, "m.bin"); });
    EXPECT_THAT(msg, HasSubstr("m.bin")) << k.expect;
    EXPECT_THAT(msg, HasSubstr(k.expect));
  }
  check_model_config(tiny_llama_config(), "ok");
  check_model_config(tiny_opt_config(), "ok");
  ModelConfig no_bos = tiny_llama_config();  // a GGUF without the keys: no BOS / EOS token
  no_bos.bos_token = no_bos.eos_token = -1;
  check_model_config(no_bos, "ok");
  ModelConfig opt = tiny_opt_config();
  opt.head_dim = 8;
  EXPECT_THAT(error_of([&] { check_model_config(opt, "o"); }), HasSubstr("OPT needs"));
}

// Refusing a huge config is immediate and allocates nothing proportional to it.
TEST(ModelCheck, HugeLayerCountIsRefusedAtOnce) {
  WeightSource src = random_weight_source(tiny_llama_config(), 3);
  src.config.n_layers = int64_t(1) << 20;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_THAT(error_of([&] { check_weight_source(src); }), HasSubstr("n_layers = 1048576"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);
}

// --- check_weight_source: what Model's constructor and load_weights rely on

TEST(ModelCheck, MissingTensorSaysWhatTheConfigDescribes) {
  WeightSource src = random_weight_source(tiny_llama_config(), 4);
  src.tensors.erase("model.layers.1.self_attn.v_proj.weight");
  std::string msg = error_of([&] { check_weight_source(src); });
  EXPECT_THAT(msg, HasSubstr("no tensor 'model.layers.1.self_attn.v_proj.weight'"));
  ModelSize s;
  ASSERT_TRUE(model_size_of(src.config, &s));
  EXPECT_THAT(msg, HasSubstr("2 layers and " + format_count(s.parameters) + " parameters"));
}

TEST(ModelCheck, TensorOfALayerTheConfigLacksIsRefused) {
  // a config claiming 1 layer over a 2-layer checkpoint would silently drop layer 1
  WeightSource src = random_weight_source(tiny_llama_config(), 5);
  src.config.n_layers = 1;
  std::string msg = error_of([&] { check_weight_source(src); });
  EXPECT_THAT(msg, HasSubstr("belongs to layer 1"));
  EXPECT_THAT(msg, HasSubstr("has 1 layers"));
  ModelConfig opt = tiny_opt_config();
  WeightSource osrc = random_weight_source(opt, 5);
  osrc.config.n_layers = 1;
  EXPECT_THAT(error_of([&] { check_weight_source(osrc); }), HasSubstr("model.decoder.layers.1."));
  // other names with "layers" in them are not layer tensors
  WeightSource ok = random_weight_source(tiny_llama_config(), 5);
  ok.tensors["model.layers.x.note"] = ok.tensors["model.norm.weight"];
  ok.tensors["extra.model.layers.9.w"] = ok.tensors["model.norm.weight"];
  check_weight_source(ok);
}

TEST(ModelCheck, ShapeAndDataAreChecked) {
  WeightSource src = random_weight_source(tiny_llama_config(), 6);
  src.tensors["model.norm.weight"].shape = {1, 32};
  EXPECT_THAT(error_of([&] { check_weight_source(src); }),
              HasSubstr("tensor model.norm.weight in random-test-model has shape [1, 32], the "
                        "model config says [32]"));
  src = random_weight_source(tiny_llama_config(), 6);
  src.tensors["model.norm.weight"].data = nullptr;
  EXPECT_THAT(error_of([&] { check_weight_source(src); }), HasSubstr("has no data"));
}

// --- NaN / Inf in the weights: refused at load, naming the tensor and the first bad index

TEST(ModelCheck, NonFiniteWeightIsRefusedAtLoad) {
  const ModelConfig c = tiny_llama_config();  // q_proj is (32, 32)
  const std::string name = "model.layers.1.self_attn.q_proj.weight";
  struct Case {
    DType dtype;
    float value;
    const char* shown;
  } cases[] = {{DTYPE_F32, NAN, "NaN"}, {DTYPE_F32, -INFINITY, "-Inf"},
               {DTYPE_F16, INFINITY, "+Inf"}, {DTYPE_F16, NAN, "NaN"},
               {DTYPE_BF16, NAN, "NaN"}, {DTYPE_BF16, -INFINITY, "-Inf"}};
  for (const Case& k : cases) {
    WeightSource src = random_weight_source(c, 7);
    std::vector<float> w(smezo_test::mutable_tensor(src, name),
                         smezo_test::mutable_tensor(src, name) + 32 * 32);
    w[3 * 32 + 5] = k.value;   // row 3, column 5: the first bad one
    w[30 * 32 + 1] = NAN;      // a later one is not the one reported
    if (k.dtype == DTYPE_F32) {
      std::memcpy(smezo_test::mutable_tensor(src, name), w.data(), w.size() * 4);
    } else {
      set_half_tensor(src, name, k.dtype, w);
    }
    std::string msg = model_error(src);
    EXPECT_THAT(msg, HasSubstr("tensor " + name + " in random-test-model holds " + k.shown +
                               " at index 101 (row 3, column 5)")) << dtype_name(k.dtype);
  }
  // finite extremes load
  WeightSource src = random_weight_source(c, 8);
  smezo_test::mutable_tensor(src, name)[0] = std::numeric_limits<float>::max();
  smezo_test::mutable_tensor(src, name)[1] = std::numeric_limits<float>::denorm_min();
  CpuBackend be;
  Model m(src, be, DTYPE_F32, 8, 8);
}

TEST(ModelCheck, ConvertCheckedEqualsConvertAndFindsTheFirstBadIndex) {
  const int64_t n = 10000;  // more than two of the converter's 4096-element blocks
  std::vector<float> values = smezo_test::random_floats(n, 9, -3.0f, 3.0f);
  std::vector<unsigned char> f32(4 * n + 1), f16(2 * n + 1), bf16(2 * n + 1);
  for (int64_t i = 0; i < n; i++) {
    std::memcpy(&f32[1 + 4 * i], &values[i], 4);  // +1: deliberately unaligned
    uint16_t h = float_to_f16(values[i]), b = float_to_bf16(values[i]);
    std::memcpy(&f16[1 + 2 * i], &h, 2);
    std::memcpy(&bf16[1 + 2 * i], &b, 2);
  }
  const std::pair<DType, unsigned char*> inputs[] = {
      {DTYPE_F32, &f32[1]}, {DTYPE_F16, &f16[1]}, {DTYPE_BF16, &bf16[1]}};
  for (const auto& in : inputs) {
    std::vector<float> a(n, -7.0f), b(n, -9.0f);
    convert_to_f32(in.second, in.first, n, a.data());
    EXPECT_EQ(convert_to_f32_checked(in.second, in.first, n, b.data()), -1);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), 4 * n), 0) << dtype_name(in.first);
  }
  // first non-finite value: in the second block, though a later block has one too
  const float inf = INFINITY;
  std::memcpy(&f32[1 + 4 * 9000], &inf, 4);
  std::memcpy(&f32[1 + 4 * 5000], &inf, 4);
  std::vector<float> out(n);
  EXPECT_EQ(convert_to_f32_checked(&f32[1], DTYPE_F32, n, out.data()), 5000);
  uint16_t bf_nan = 0x7fc1, f16_inf = 0xfc00;
  std::memcpy(&bf16[1 + 2 * (n - 1)], &bf_nan, 2);
  EXPECT_EQ(convert_to_f32_checked(&bf16[1], DTYPE_BF16, n, out.data()), n - 1);
  std::memcpy(&f16[1], &f16_inf, 2);
  EXPECT_EQ(convert_to_f32_checked(&f16[1], DTYPE_F16, n, out.data()), 0);
  // in place, as a check of values another decoder wrote
  std::vector<float> in_place = values;
  in_place[n - 2] = NAN;
  EXPECT_EQ(convert_to_f32_checked(in_place.data(), DTYPE_F32, n, in_place.data()), n - 2);
  EXPECT_EQ(std::memcmp(in_place.data(), values.data(), 4 * (n - 2)), 0);
}

// The rule of a load into 16-bit storage (Backend::upload_stored): a value is bad when it is
// not finite AS STORED, so finite values beyond the dtype's range count, the largest values
// that round to a finite one do not.
TEST(ModelCheck, FirstNonFiniteInCountsValuesOutOfTheStorageRange) {
  EXPECT_EQ(dtype_max_finite(DTYPE_F16), 65504.0f);
  EXPECT_EQ(dtype_max_finite(DTYPE_BF16), 3.38953139e38f);
  EXPECT_EQ(dtype_max_finite(DTYPE_F32), std::numeric_limits<float>::max());
  const float fmax = std::numeric_limits<float>::max();
  std::vector<float> v(100, 1.5f);
  v[10] = 65519.0f;   // rounds to 65504 in F16
  v[11] = -65519.0f;
  v[12] = 3.39e38f;   // rounds to the largest bf16
  EXPECT_EQ(first_non_finite_in(v.data(), 100, DTYPE_F32), -1);
  EXPECT_EQ(first_non_finite_in(v.data(), 100, DTYPE_BF16), -1);
  EXPECT_EQ(first_non_finite_in(v.data(), 100, DTYPE_F16), 12);  // 3.39e38 is far out of F16
  v[12] = 1.0f;
  EXPECT_EQ(first_non_finite_in(v.data(), 100, DTYPE_F16), -1);
  v[70] = -65520.0f;  // the half-way point to 65536 rounds (to even) to -Inf
  v[90] = 70000.0f;
  EXPECT_EQ(first_non_finite_in(v.data(), 100, DTYPE_F16), 70);
  EXPECT_EQ(first_non_finite_in(v.data(), 100, DTYPE_BF16), -1);
  v[50] = fmax;  // beyond the largest bf16's rounding range
  EXPECT_EQ(first_non_finite_in(v.data(), 100, DTYPE_BF16), 50);
  EXPECT_EQ(first_non_finite_in(v.data(), 100, DTYPE_F32), -1);
  v[5] = NAN;  // NaN and Inf are bad in every dtype
  v[6] = INFINITY;
  for (DType dt : {DTYPE_F32, DTYPE_F16, DTYPE_BF16}) EXPECT_EQ(first_non_finite_in(v.data(), 100, dt), 5);
  EXPECT_EQ(first_non_finite_in(v.data() + 6, 94, DTYPE_F32), 0);
}

// --- printable: bytes from a file in a message

TEST(Printable, EscapesControlBytesAndInvalidUtf8) {
  EXPECT_EQ(printable("plain name.weight"), "plain name.weight");
  EXPECT_EQ(printable("a\x1b[31mb\x07\n\t\r"), "a\\x1b[31mb\\x07\\n\\t\\r");
  EXPECT_EQ(printable(std::string("nul\0x", 5)), "nul\\x00x");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x99\x82"), "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x99\x82");
  EXPECT_EQ(printable("\xff\xfe"), "\\xff\\xfe");            // not UTF-8
  EXPECT_EQ(printable("\xc3"), "\\xc3");                      // truncated sequence
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");             // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");    // a surrogate
  EXPECT_EQ(printable("\xc2\x9b" "2J"), "\\xc2\\x9b2J");      // C1 CSI
  EXPECT_EQ(printable("\x7f"), "\\x7f");
  std::string big(10000, 'x');
  std::string shown = printable(big, 50);
  EXPECT_EQ(shown, std::string(50, 'x') + "...(10000 bytes)");
}

// The escape backstop leaves '\n' alone; smezo::Error then folds it into a space (one line).
TEST(Printable, ThrowErrorEscapesControlBytesAndTheMessageStaysOneLine) {
  std::string msg = error_of([] { throw_error("bad %s\nhint", "x\x1b[2Jy"); });
  EXPECT_EQ(msg, "bad x\\x1b[2Jy hint");
}
