// The batched key/value cache of generation (Model::enable_kv_cache, forward_cached with
// chunks; src/model/model_cache.cpp): several sequences of different lengths in one cache, fed
// in chunks of different sizes, in any slot order, under no probe and under a single probe,
// plain, with a prefix (--tune prefix) and with LoRA adapters: each chunk's logits equal the
// full-recompute logits (Model::forward) of its sequence so far under the same probe.
//
// Tolerance 2e-5 x max|logit| (kTol): the cached run computes a token's keys, values and
// activations in GEMMs over other row blocks (the chunk, not the whole sequence) and, with a
// prefix, reads the prefix from the cache instead of the gathered rows, so fp32 sums may round
// in another order through every layer (a few ulps per op; test_prefix.cpp's cached check uses
// the same bound). A probe moves the logits by far more (checked), so a cache that ignored the
// probe, or a slot that read another's rows, fails. CUDA against the CPU: 1e-4 (kTolCuda,
// cuBLAS sums in another order).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "common/check.h"
#include "model/model.h"
#include "model_fixture.h"
#include "setup/model_setup.h"
#include "test_util.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"
#endif

using namespace smezo;
using smezo_test::max_abs;
using smezo_test::max_diff;
using smezo_test::randomize_adapters;

namespace {

constexpr double kTol = 2e-5;
constexpr double kTolCuda = 1e-4;

// Four sequences of different lengths (ids below the tiny models' vocabularies).
const std::vector<std::vector<int32_t>> kSeqs = {
    {1, 7, 22, 3, 19, 15, 8}, {1, 4, 9}, {1, 11, 2, 26, 5, 13}, {1}};

// Runs of the cache: (slot, first token, end token) chunks of kSeqs, each run packed. Slots
// come out of order, chunks of 1..5 tokens, and slot 3 starts late (in the second run).
struct Piece {
  int64_t slot, begin, end;
};
const std::vector<std::vector<Piece>> kRuns = {
    {{0, 0, 5}, {1, 0, 3}, {2, 0, 2}},
    {{2, 2, 5}, {0, 5, 6}, {3, 0, 1}},
    {{0, 6, 7}, {2, 5, 6}},
};

// The full recompute: logits of the last of seq's first `len` tokens under the probe.
std::vector<float> recomputed(Model& m, const std::vector<int32_t>& seq, int64_t len, const Probe& probe) {
  ForwardBatch b{std::vector<int32_t>(seq.begin(), seq.begin() + len), {len}, {len - 1}};
  std::vector<float> logits;
  m.forward(b, probe, &logits);
  return logits;
}

// Each chunk's logits from the cache of `m` (all of kRuns, a slot per sequence), as one
// vector per chunk in run order; the host buffer is NaN before each run.
std::vector<std::vector<float>> cached_logits(Model& m, const Probe& probe) {
  const int64_t V = m.config().vocab_size;
  m.enable_kv_cache(8, static_cast<int64_t>(kSeqs.size()));
  std::vector<std::vector<float>> out;
  for (const std::vector<Piece>& run : kRuns) {
    std::vector<CachedChunk> chunks;
    for (const Piece& p : run) {
      const std::vector<int32_t>& s = kSeqs[static_cast<size_t>(p.slot)];
      chunks.push_back(CachedChunk{p.slot, p.begin, std::vector<int32_t>(s.begin() + p.begin, s.begin() + p.end)});
    }
    std::vector<float> logits(chunks.size() * V, std::numeric_limits<float>::quiet_NaN());
    m.forward_cached(chunks, probe, &logits);
    EXPECT_EQ(logits.size(), chunks.size() * V);
    for (size_t c = 0; c < chunks.size(); c++)
      out.emplace_back(logits.begin() + c * V, logits.begin() + (c + 1) * V);
  }
  return out;
}

// The full-recompute logits for every chunk of kRuns, in the order cached_logits gives them.
std::vector<std::vector<float>> recomputed_logits(Model& m, const Probe& probe) {
  std::vector<std::vector<float>> out;
  for (const std::vector<Piece>& run : kRuns)
    for (const Piece& p : run) out.push_back(recomputed(m, kSeqs[static_cast<size_t>(p.slot)], p.end, probe));
  return out;
}

enum Adapter { ADAPT_NONE, ADAPT_PREFIX, ADAPT_LORA };

// A fresh random model of config c on `device`, with the adapter asked for (random values).
std::unique_ptr<Model> make_model(const ModelConfig& c, Backend& be, uint32_t seed, Adapter adapter) {
  auto m = std::make_unique<Model>(smezo_test::random_weight_source(c, seed), be, DTYPE_F32, 64, 64);
  if (adapter == ADAPT_PREFIX) m->add_prefix(PrefixOptions{3}, seed + 1);
  if (adapter == ADAPT_LORA)
    m->add_lora(LoraOptions{4, 8.0f, lora_targets_parse("q,k,v,o,gate,up,down")}, seed + 1);
  if (adapter != ADAPT_NONE) randomize_adapters(*m, seed + 100, 0.5f);
  return m;
}

// The cached logits against the full recompute on one CPU model, unprobed and probed.
void expect_cache_equals_recompute(const ModelConfig& c, Adapter adapter, const char* what) {
  const uint32_t seed = static_cast<uint32_t>(smezo_test::mixed_seed(41));
  auto be = make_backend(DEVICE_CPU);
  std::unique_ptr<Model> m = make_model(c, *be, seed, adapter);
  const Probe probed{0.05f, seed * 2654435761u + 1, false};
  const std::vector<std::vector<float>> plain = recomputed_logits(*m, Probe{});
  for (const Probe& probe : {Probe{}, probed}) {
    const std::vector<std::vector<float>> want = recomputed_logits(*m, probe);
    const std::vector<std::vector<float>> got = cached_logits(*m, probe);
    ASSERT_EQ(got.size(), want.size());
    double moved = 0;
    for (size_t i = 0; i < want.size(); i++) {
      const double scale = max_abs(want[i]);
      EXPECT_LE(max_diff(got[i], want[i]), kTol * scale)
          << what << ", chunk " << i << ", probe scale " << probe.scale << smezo_test::seed_note();
      moved = std::max(moved, max_diff(want[i], plain[i]) / scale);
    }
    if (probe.scale != 0) {
      EXPECT_GT(moved, 1e-2) << what << ": the probe must move the logits to mean anything";
    }
  }
}

ModelConfig mistral_window_config() {
  ModelConfig c = smezo_test::tiny_llama_config();
  c.family = "mistral";
  c.sliding_window = 4;  // shorter than the sequences: the cached spans must apply it too
  return c;
}

}  // namespace

TEST(GenerationCache, SlotsEqualFullRecompute) {
  expect_cache_equals_recompute(smezo_test::tiny_llama_config(), ADAPT_NONE, "llama");
  expect_cache_equals_recompute(smezo_test::tiny_opt_config(), ADAPT_NONE, "opt");  // learned positions
  expect_cache_equals_recompute(mistral_window_config(), ADAPT_NONE, "mistral window 4");
}

TEST(GenerationCache, SlotsWithPrefixEqualFullRecompute) {
  expect_cache_equals_recompute(smezo_test::tiny_llama_config(), ADAPT_PREFIX, "llama prefix");
  expect_cache_equals_recompute(smezo_test::tiny_opt_config(), ADAPT_PREFIX, "opt prefix");
  expect_cache_equals_recompute(mistral_window_config(), ADAPT_PREFIX, "mistral window 4 prefix");
}

TEST(GenerationCache, SlotsWithLoraEqualFullRecompute) {
  expect_cache_equals_recompute(smezo_test::tiny_llama_config(), ADAPT_LORA, "llama lora");
}

// A slot restarted at position 0 forgets its old rows; a bigger cache keeps working.
TEST(GenerationCache, RestartAndGrow) {
  auto be = make_backend(DEVICE_CPU);
  std::unique_ptr<Model> m = make_model(smezo_test::tiny_llama_config(), *be, 7, ADAPT_PREFIX);
  cached_logits(*m, Probe{});
  m->enable_kv_cache(12, 6);  // grows both: what the cache held is dropped
  EXPECT_EQ(m->kv_cache_slots(), 6);
  const std::vector<std::vector<float>> got = cached_logits(*m, Probe{}), want = recomputed_logits(*m, Probe{});
  for (size_t i = 0; i < want.size(); i++) EXPECT_LE(max_diff(got[i], want[i]), kTol * max_abs(want[i])) << i;
  std::vector<float> logits;
  m->forward_cached({CachedChunk{5, 0, {1, 4}}}, Probe{}, &logits);  // a slot of the grown cache
  EXPECT_LE(max_diff(logits, recomputed(*m, kSeqs[1], 2, Probe{})), kTol * max_abs(logits));
}

TEST(GenerationCache, RefusesWhatItCannotRun) {
  auto be = make_backend(DEVICE_CPU);
  std::unique_ptr<Model> m = make_model(smezo_test::tiny_llama_config(), *be, 8, ADAPT_NONE);
  std::vector<float> logits;
  EXPECT_THAT(smezo_test::error_of([&] { m->forward_cached({CachedChunk{0, 0, {1}}}, Probe{}, &logits); }),
              testing::HasSubstr("enable_kv_cache first"));
  m->enable_kv_cache(4, 2);
  EXPECT_THAT(smezo_test::error_of([&] { m->forward_cached({CachedChunk{2, 0, {1}}}, Probe{}, &logits); }),
              testing::HasSubstr("slot 2"));
  EXPECT_THAT(smezo_test::error_of([&] {
                m->forward_cached({CachedChunk{1, 0, {1}}, CachedChunk{1, 1, {2}}}, Probe{}, &logits);
              }),
              testing::HasSubstr("twice"));
  EXPECT_THAT(smezo_test::error_of([&] { m->forward_cached({CachedChunk{0, 2, {1, 2, 3}}}, Probe{}, &logits); }),
              testing::HasSubstr("past the cache"));
  EXPECT_THAT(smezo_test::error_of([&] { m->forward_cached({CachedChunk{0, 0, {1}}}, Probe{0.1f, 3, true}, &logits); }),
              testing::HasSubstr("single probe"));
}

// The CUDA backend's cache (emulated in build-emu) against the CPU's full recompute.
TEST(GenerationCacheCuda, SlotsEqualCpuRecompute) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const uint32_t seed = static_cast<uint32_t>(smezo_test::mixed_seed(43));
  auto cpu = make_backend(DEVICE_CPU), cuda = make_backend(DEVICE_CUDA);
  const Probe probed{0.05f, seed * 2654435761u + 1, false};
  for (Adapter adapter : {ADAPT_NONE, ADAPT_PREFIX, ADAPT_LORA}) {
    std::unique_ptr<Model> ref = make_model(smezo_test::tiny_llama_config(), *cpu, seed, adapter);
    std::unique_ptr<Model> dev = make_model(smezo_test::tiny_llama_config(), *cuda, seed, adapter);
    for (const Probe& probe : {Probe{}, probed}) {
      const std::vector<std::vector<float>> want = recomputed_logits(*ref, probe), got = cached_logits(*dev, probe);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); i++)
        EXPECT_LE(max_diff(got[i], want[i]), kTolCuda * max_abs(want[i]))
            << "adapter " << adapter << ", chunk " << i << ", probe scale " << probe.scale << smezo_test::seed_note();
    }
  }
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}
