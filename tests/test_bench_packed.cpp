// `smezo bench --shape S --quant TYPE --tune scales|lora`: the random-weight model kept in GGUF blocks
// (bench/random_weights.h). Its blocks hold values within about ± 1/sqrt(fan_in); a model kept packed
// gives the same logits, bit for bit on the CPU, as the same blocks dequantised at load (issue 43's
// identity), for every block type; the bench's JSON lines name the type and the tune mode, on the CPU
// and on CUDA; bad combinations are refused with a hint.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench/model_bench.h"
#include "bench/random_weights.h"
#include "common/check.h"
#include "common/half.h"
#include "common/splitmix.h"
#include "cpu/cpu_backend.h"
#include "formats/gguf.h"
#include "model/model.h"
#include "test_util.h"

#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"
#endif

using namespace smezo;
using testing::HasSubstr;

namespace {

const char* const kTypeNames[] = {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"};

// The tiny shape, widened to 256-value rows for the K-quants' super-blocks.
ModelConfig shape_for(uint32_t type) {
  ModelConfig c = model_bench_shape("tiny");
  if (gguf_type_traits(type)->block_size > c.dim) {
    c.dim = 256;
    c.hidden_dim = 512;
    c.head_dim = c.dim / c.n_heads;
  }
  return c;
}

}  // namespace

TEST(RandomPackedWeights, ValuesStayNearTheFanInScale) {
  for (const char* name : kTypeNames) {
    const uint32_t type = random_packed_type(name);
    const ModelConfig c = shape_for(type);
    const WeightSource src = random_weight_source(c, 11, "tiny", type);
    EXPECT_TRUE(src.keep_packed);
    const HostTensorView& v = *src.find("model.layers.0.mlp.down_proj.weight");
    EXPECT_EQ(v.packed_type, type) << name;
    std::vector<float> w(static_cast<size_t>(v.numel()), std::numeric_limits<float>::quiet_NaN());
    v.read_f32(w.data());
    const double s = 1.0 / std::sqrt(static_cast<double>(v.shape[1]));
    double sum = 0, sum2 = 0, most = 0;
    for (float x : w) {
      ASSERT_TRUE(std::isfinite(x)) << name;
      sum += x;
      sum2 += static_cast<double>(x) * x;
      most = std::max(most, static_cast<double>(std::fabs(x)));
    }
    const double mean = sum / w.size(), sd = std::sqrt(sum2 / w.size() - mean * mean);
    EXPECT_LE(most, 2.01 * s) << name;  // the K-quants span [-s, 2s], the others about ± s
    EXPECT_GT(sd, s / 20) << name;      // codes spread, not one value
    EXPECT_EQ(std::string(v.storage_name()), name);
  }
  EXPECT_THROW(random_packed_type("Q3_K"), Error);
  EXPECT_EQ(random_packed_type("q4_k"), static_cast<uint32_t>(GGUF_TYPE_Q4_K));
}

// Issue 43's identity through the bench's model: kept packed = dequantised at load, bit for bit (CPU).
TEST(RandomPackedWeights, PackedModelEqualsItsDequantizedModelOnTheCpu) {
  for (const char* name : kTypeNames) {
    const uint32_t type = random_packed_type(name);
    const ModelConfig c = shape_for(type);
    WeightSource packed = random_weight_source(c, 5, "tiny", type);
    WeightSource loaded = packed;
    loaded.keep_packed = false;
    CpuBackend cpu_packed, cpu_loaded;
    Model a(packed, cpu_packed, DTYPE_F32, 64, 4), b(loaded, cpu_loaded, DTYPE_F32, 64, 4);
    EXPECT_LT(cpu_packed.bytes_allocated(), cpu_loaded.bytes_allocated()) << name;
    ForwardBatch batch;
    uint64_t r = 99 + type;
    for (int s = 0; s < 2; s++) {
      batch.seq_lens.push_back(12);
      for (int i = 0; i < 12; i++) batch.tokens.push_back(static_cast<int32_t>((r = splitmix64(r)) % c.vocab_size));
      batch.logit_rows.push_back(s * 12 + 11);
    }
    std::vector<float> la(2 * c.vocab_size, std::numeric_limits<float>::quiet_NaN()), lb = la;
    a.forward(batch, Probe{}, &la);
    b.forward(batch, Probe{}, &lb);
    ASSERT_EQ(la.size(), lb.size());
    for (size_t i = 0; i < la.size(); i++) {
      ASSERT_TRUE(std::isfinite(la[i])) << name << " logit " << i;
      ASSERT_EQ(float_bits(la[i]), float_bits(lb[i])) << name << " logit " << i;
    }
    EXPECT_NE(la[0], la[1]) << name;
  }
}

// Each JSON line of a bench run: the quant and tune it names, a positive time; the lines' count.
static void expect_lines(const std::string& out, const char* quant, const char* tune, int count) {
  std::istringstream lines(out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j["quant"], quant) << line;
    EXPECT_EQ(j["tune"], tune) << line;
    EXPECT_GT(j["ms"].get<double>(), 0.0) << line;
    ++n;
  }
  EXPECT_EQ(n, count) << out;
}

static std::string tiny_bench_command() {
  return smezo_test::smezo_binary() + " bench --shape tiny --batch 2 --seq 8 --reps 1 --warmup 0";
}

TEST(ModelBench, QuantAndTuneOnTheCpu) {
  const std::string bench = tiny_bench_command();
  std::string out;
  ASSERT_EQ(smezo_test::run_command(bench + " --device cpu --quant q4_1 --tune scales", &out), 0) << out;
  expect_lines(out, "Q4_1", "scales", 3);
  ASSERT_EQ(smezo_test::run_command(bench + " --device cpu --quant Q8_0 --tune lora --phases smezo-step", &out), 0)
      << out;
  expect_lines(out, "Q8_0", "lora", 1);
  ASSERT_EQ(smezo_test::run_command(bench + " --device cpu --tune lora --phases forward", &out), 0) << out;
  expect_lines(out, "none", "lora", 1);
  const std::pair<const char*, const char*> refused[] = {
      {" --quant Q4_0", "---> HINT: add --tune scales or --tune lora"},
      {" --tune scales", "---> HINT: add --quant, e.g. --quant Q4_K"},
      {" --quant Q3_K --tune scales", "--quant Q3_K is not a block type smezo keeps packed (choose Q8_0, Q4_0"},
      {" --quant Q4_K --tune scales", "---> HINT: a 32-value type (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) for this shape"},
      {" --tune prefix", "--tune prefix is not benched (choose full, scales or lora)"},
  };
  for (const auto& [args, message] : refused) {
    EXPECT_NE(smezo_test::run_command(bench + " --device cpu" + args + " 2>&1", &out), 0) << args;
    EXPECT_THAT(out, HasSubstr(message)) << args;
  }
}

// The CUDA half stands alone so the CPU suites run the half above rather than skip it all.
TEST(ModelBench, QuantAndTuneOnCuda) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const std::string bench = tiny_bench_command();
  std::string out;
  ASSERT_EQ(smezo_test::run_command(bench + " --device cuda --quant Q4_0 --tune scales", &out), 0) << out;
  expect_lines(out, "Q4_0", "scales", 3);
  ASSERT_EQ(smezo_test::run_command(bench + " --device cuda --quant Q5_1 --tune lora", &out), 0) << out;
  expect_lines(out, "Q5_1", "lora", 3);
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}
