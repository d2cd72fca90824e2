// The newer families against transformers, on committed fixtures (tests/fixtures/families/<case>/,
// written by tools/oracles/hf_oracle.py --write-fixtures; CI has no torch): each case's Hugging Face
// folder and the GGUF that the `gguf` package wrote from the same weights must give transformers'
// logits within T32 = 1e-4 (1 + max|ref|), with the argmax equal wherever it is decisive; on the CPU
// here, on CUDA (f32 storage) where a device is present (emulated in CI). And each fixture must
// feel the feature it is there for: turning q/k/v biases, q/k norms or the llama3 scaling off
// moves the logits by more than 100 T32.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "model/model.h"
#include "model/model_loader.h"
#include "model_fixture.h"
#include "setup/model_setup.h"
#include "test_util.h"

#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"
#endif

using namespace smezo;

namespace {

const char* const kFixtures = "tests/fixtures/families";

struct FamilyFixture {
  std::string name, dir, family;
  std::vector<int32_t> tokens;
  std::vector<float> logits;  // (tokens, vocab): transformers' fp32 logits
};

std::vector<FamilyFixture> family_fixtures() {
  std::vector<FamilyFixture> out;
  for (const auto& entry : std::filesystem::directory_iterator(kFixtures)) {
    FamilyFixture f;
    f.dir = entry.path().string();
    f.name = entry.path().filename().string();
    const nlohmann::json meta = nlohmann::json::parse(smezo_test::read_file(f.dir + "/oracle.json"));
    f.family = meta.at("family").get<std::string>();
    f.tokens = meta.at("tokens").get<std::vector<int32_t>>();
    SafetensorsFile logits(f.dir + "/logits.safetensors");
    const HostTensorView& v = logits.tensor("logits");
    f.logits.resize(static_cast<size_t>(v.numel()));
    v.read_f32(f.logits.data());
    out.push_back(f);
  }
  std::sort(out.begin(), out.end(), [](const FamilyFixture& a, const FamilyFixture& b) { return a.name < b.name; });
  return out;
}

double tolerance_of(const FamilyFixture& f) { return 1e-4 * (1.0 + smezo_test::max_abs(f.logits)); }

std::vector<float> logits_on(const WeightSource& src, Device device, const std::vector<int32_t>& tokens) {
  auto backend = make_backend(device);
  const int64_t n = static_cast<int64_t>(tokens.size());
  Model model(src, *backend, DTYPE_F32, n, n);
  return smezo_test::logits_of(model, tokens);
}

// Positions whose argmax differs although the reference's pick beats ours by more than 2 tol.
int decisive_argmax_misses(const std::vector<float>& ours, const std::vector<float>& ref, int64_t vocab, double tol) {
  int misses = 0;
  for (size_t r = 0; r < ref.size() / static_cast<size_t>(vocab); r++) {
    const float* o = ours.data() + r * vocab;
    const float* w = ref.data() + r * vocab;
    const int64_t a = std::max_element(o, o + vocab) - o, b = std::max_element(w, w + vocab) - w;
    if (a != b && w[b] - w[a] > 2 * tol) misses++;
  }
  return misses;
}

void expect_fixtures_match(Device device) {
  const std::vector<FamilyFixture> fixtures = family_fixtures();
  std::vector<std::string> families;
  for (const FamilyFixture& f : fixtures) {
    const double tol = tolerance_of(f);
    for (const std::string& path : {f.dir, f.dir + "/model.gguf"}) {
      const WeightSource src = load_weights(path);
      EXPECT_EQ(src.config.family, f.family) << path;
      const std::vector<float> got = logits_on(src, device, f.tokens);
      ASSERT_EQ(got.size(), f.logits.size()) << path;
      EXPECT_LE(smezo_test::max_diff(got, f.logits), tol) << path << " on " << device_name(device);
      EXPECT_EQ(decisive_argmax_misses(got, f.logits, src.config.vocab_size, tol), 0) << path << " on " << device_name(device);
    }
    families.push_back(f.family);
  }
  for (const char* family : {"llama", "qwen2", "qwen3"})  // no fixture folder may go missing unnoticed
    EXPECT_EQ(std::count(families.begin(), families.end(), family), 2) << family;
}

}  // namespace

TEST(FamilyOracle, HfFolderAndGgufMatchTransformersOnCpu) { expect_fixtures_match(DEVICE_CPU); }

TEST(FamilyOracleCuda, HfFolderAndGgufMatchTransformersOnCuda) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  expect_fixtures_match(DEVICE_CUDA);
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// The fixtures are not blind: each family's own feature, switched off, moves the logits well past T32
// (a family's fixtures without a line here are checked above, not here).
TEST(FamilyOracle, EachFixtureNeedsItsFamilysFeature) {
  const std::map<std::string, void (*)(ModelConfig&)> switch_off = {
      {"qwen2", [](ModelConfig& c) { c.qkv_bias = false; }},
      {"qwen3", [](ModelConfig& c) { c.qk_norm = false; }},
      {"llama", [](ModelConfig& c) { c.rope_scaling.kind = ROPE_SCALING_NONE; }},  // the llama3 fixtures
  };
  for (const FamilyFixture& f : family_fixtures()) {
    if (!switch_off.count(f.family)) continue;
    WeightSource src = load_weights(f.dir);
    if (f.family == "llama") ASSERT_EQ(src.config.rope_scaling.kind, ROPE_SCALING_LLAMA3) << f.dir;
    switch_off.at(f.family)(src.config);
    const double moved = smezo_test::max_diff(logits_on(src, DEVICE_CPU, f.tokens), f.logits);
    EXPECT_GT(moved, 100 * tolerance_of(f)) << f.dir;
  }
}
