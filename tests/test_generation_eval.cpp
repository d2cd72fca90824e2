// Greedy generation under a probe (src/train/generation_eval.h) on the real stories260K: at the
// null probe it writes what `smezo generate` (the one-sequence cache path) writes for the same
// prompt; under a probe, packed and chunked (also with a prefix, prompts split over runs), the
// batched cache's texts equal a plain one-sequence-at-a-time full-recompute greedy loop written
// here; stop strings and the token limit cut where they should; EM/F1 averages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "common/check.h"
#include "setup/model_setup.h"
#include "tasks/task_encode.h"
#include "train/generate.h"
#include "train/generation_eval.h"
#include "test_util.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"
#endif

using namespace smezo;

namespace {

const std::vector<std::string> kPrompts = {"Once upon a time", "Lily went to the park and", "The cat",
                                           "Tom had a big red ball. He"};

TaskExample generation_example(const std::string& prompt, const std::vector<std::string>& refs) {
  TaskExample x;
  x.contexts = {prompt};
  x.options = {" and they played."};
  x.references = refs;
  return x;
}

std::vector<EncodedExample> encode_prompts(const Tokenizer& tok) {
  std::vector<EncodedExample> out;
  for (const std::string& p : kPrompts) out.push_back(encode_example(tok, generation_example(p, {"x"}), 64));
  return out;
}

std::vector<const EncodedExample*> pointers(const std::vector<EncodedExample>& xs) {
  std::vector<const EncodedExample*> out;
  for (const EncodedExample& x : xs) out.push_back(&x);
  return out;
}

// The reference: one sequence at a time, one full forward per token, the first largest logit.
std::string plain_greedy(Model& model, const Tokenizer& tok, const EncodedExample& ex, const Probe& probe,
                         int64_t max_new, const std::string& stop) {
  const EncodedCandidate& c = ex.candidates[0];
  std::vector<int32_t> tokens(c.tokens.begin(), c.tokens.begin() + c.option_start);
  std::string text;
  std::vector<float> logits;
  for (int64_t k = 0; k < max_new; k++) {
    ForwardBatch b{tokens, {(int64_t)tokens.size()}, {(int64_t)tokens.size() - 1}};
    model.forward(b, probe, &logits);
    const int32_t next = (int32_t)(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (next == tok.eos_id() || next == tok.bos_id()) break;
    text += tok.decode_piece(tokens.back(), next);
    tokens.push_back(next);
    if (!stop.empty() && text.find(stop) != std::string::npos) return text.substr(0, text.find(stop));
  }
  return text;
}

uint64_t fresh_seed() { return std::random_device{}() | 1; }

// Greedy texts at the null probe against `smezo generate`'s for the same prompts.
void expect_null_probe_matches_generate(const std::string& model_path, int64_t new_tokens) {
  LoadedModel lm = open_model_paths(model_path, "", DEVICE_CPU, 1024, 64);
  const std::vector<EncodedExample> enc = encode_prompts(*lm.tokenizer);
  const GenerationLimits limits{new_tokens, {}};
  const auto texts = greedy_generations(*lm.model, *lm.tokenizer, pointers(enc), {Probe{}}, limits);
  ASSERT_EQ(texts.size(), 1u);
  ASSERT_EQ(texts[0].size(), kPrompts.size());
  const int64_t bos = tokenizer_wants_bos(*lm.tokenizer) ? 1 : 0;
  for (size_t i = 0; i < kPrompts.size(); i++) {
    GenerateOptions g;
    g.prompt = kPrompts[i];
    g.new_tokens = limits.max_new_tokens;
    std::vector<std::string> pieces;
    generate(*lm.model, *lm.tokenizer, g, [&](const std::string& p) { pieces.push_back(p); });
    const size_t prompt_pieces = enc[i].candidates[0].option_start - bos;  // generate streams the prompt first
    std::string generated;
    for (size_t k = prompt_pieces; k < pieces.size(); k++) generated += pieces[k];
    EXPECT_FALSE(generated.empty());
    EXPECT_EQ(texts[0][i], generated) << kPrompts[i];
  }
}

}  // namespace

TEST(GenerationEval, NullProbeMatchesGenerate) { expect_null_probe_matches_generate(default_model_path(), 24); }

// SmolLM2: byte-level BPE pieces and no BOS.
TEST(GenerationEval, SmolLM2NullProbeMatchesGenerate) {
  const std::string path = smezo_test::smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  expect_null_probe_matches_generate(path, 12);
}

// A small workspace (64 tokens, 3 logit rows) forces several forwards per new token.
TEST(GenerationEval, ProbedPackedDecodingEqualsPlainLoop) {
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 64, 3);
  const std::vector<EncodedExample> enc = encode_prompts(*lm.tokenizer);
  const Probe pair{0.05f, fresh_seed(), true};
  const GenerationLimits limits{12, {}};
  const auto texts = greedy_generations(*lm.model, *lm.tokenizer, pointers(enc), {pair, Probe{}}, limits);
  ASSERT_EQ(texts.size(), 3u);  // +, -, null
  int differ = 0;
  for (size_t i = 0; i < enc.size(); i++) {
    EXPECT_EQ(texts[0][i], plain_greedy(*lm.model, *lm.tokenizer, enc[i], half_probe(pair, +1), 12, ""));
    EXPECT_EQ(texts[1][i], plain_greedy(*lm.model, *lm.tokenizer, enc[i], half_probe(pair, -1), 12, ""));
    EXPECT_EQ(texts[2][i], plain_greedy(*lm.model, *lm.tokenizer, enc[i], Probe{}, 12, ""));
    differ += texts[0][i] != texts[1][i];
  }
  EXPECT_GT(differ, 0) << "a probe of scale 0.05 changed no generation: is the probe applied?";
}

// The cached decoding against the plain recompute loop where the cache is stressed: a workspace
// of 6 tokens and 2 logit rows (every prompt split over several runs, sequences taking turns),
// a random prefix (each slot starts from it, read through the probe), a single probe.
TEST(GenerationEval, CachedDecodingWithPrefixInASmallWorkspaceEqualsPlainLoop) {
  // the reference loop needs a workspace for whole sequences: a twin with the same prefix
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 6, 2);
  LoadedModel twin = open_model_paths(default_model_path(), "", DEVICE_CPU, 1024, 64);
  for (Model* m : {lm.model.get(), twin.model.get()}) {
    m->add_prefix(PrefixOptions{3}, 77);
    for (Param* p : m->params()) {  // values of its own, not the init's activations
      if (p->info.adapter == ADAPTER_NONE) continue;
      const std::vector<float> v = smezo_test::random_floats(p->w.numel(), 900 + p->info.tensor_id, -1.0f, 1.0f);
      m->backend().upload(p->w, v.data());
    }
  }
  const std::vector<EncodedExample> enc = encode_prompts(*lm.tokenizer);
  const Probe probe{0.05f, fresh_seed(), false};
  const auto texts = greedy_generations(*lm.model, *lm.tokenizer, pointers(enc), {probe, Probe{}}, {10, {}});
  ASSERT_EQ(texts.size(), 2u);
  for (size_t i = 0; i < enc.size(); i++) {
    EXPECT_EQ(texts[0][i], plain_greedy(*twin.model, *lm.tokenizer, enc[i], probe, 10, "")) << kPrompts[i];
    EXPECT_EQ(texts[1][i], plain_greedy(*twin.model, *lm.tokenizer, enc[i], Probe{}, 10, "")) << kPrompts[i];
  }
}

TEST(GenerationEval, StopStringAndTokenLimitCut) {
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 1024, 64);
  const std::vector<EncodedExample> enc = encode_prompts(*lm.tokenizer);
  const auto free_run = greedy_generations(*lm.model, *lm.tokenizer, pointers(enc), {Probe{}}, {20, {}})[0];
  std::vector<std::string> stops;  // a piece from the middle of each free-running text
  for (const std::string& t : free_run) {
    ASSERT_GE(t.size(), 8u) << t;
    stops.push_back(t.substr(t.size() / 2, 3));
  }
  const auto cut = greedy_generations(*lm.model, *lm.tokenizer, pointers(enc), {Probe{}}, {20, stops})[0];
  for (size_t i = 0; i < enc.size(); i++) {
    size_t first = std::string::npos;  // the first place any of the stop strings occurs
    for (const std::string& s : stops) first = std::min(first, free_run[i].find(s));
    EXPECT_EQ(cut[i], free_run[i].substr(0, first)) << "stops cut " << free_run[i];
  }
  const auto one = greedy_generations(*lm.model, *lm.tokenizer, pointers(enc), {Probe{}}, {1, {}})[0];
  for (size_t i = 0; i < enc.size(); i++) {
    const EncodedCandidate& c = enc[i].candidates[0];
    std::vector<float> logits;
    lm.model->forward({std::vector<int32_t>(c.tokens.begin(), c.tokens.begin() + c.option_start), {c.option_start},
                       {c.option_start - 1}}, Probe{}, &logits);
    const int32_t next = (int32_t)(std::max_element(logits.begin(), logits.end()) - logits.begin());
    EXPECT_EQ(one[i], lm.tokenizer->decode_piece(c.tokens[c.option_start - 1], next));
  }
}

TEST(GenerationEval, ScoresAverageBestOverReferences) {
  const std::vector<std::string> a = {"Paris", "London"}, b = {"blue sky"}, c = {"x y z"};
  // EM: 1, 0, 0; F1: 1, 2/3 ([sky] vs [blue sky]: P 1, R 1/2), 0
  const GenerationScore s = score_generations({"paris.", "the sky", "w"}, {&a, &b, &c});
  EXPECT_NEAR(s.exact_match, 1.0 / 3.0, 1e-15);
  EXPECT_NEAR(s.f1, (1.0 + 2.0 / 3.0) / 3.0, 1e-15);
  EXPECT_THROW(score_generations({"a"}, {}), Error);
}

// The null-probe texts as the references of every other example: EM is exactly the share of
// those examples (in batches of 3, over 4 examples).
TEST(GenerationEval, EvaluateScoresTheGreedyTexts) {
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 1024, 64);
  const std::vector<EncodedExample> enc = encode_prompts(*lm.tokenizer);
  const GenerationLimits limits{10, {"."}};
  const auto texts = greedy_generations(*lm.model, *lm.tokenizer, pointers(enc), {Probe{}}, limits)[0];
  std::vector<TaskExample> xs;
  for (size_t i = 0; i < kPrompts.size(); i++)
    xs.push_back(generation_example(kPrompts[i], {i % 2 ? "zzqx unlikely" : texts[i]}));
  const GenerationScore s = evaluate_generation(*lm.model, *lm.tokenizer, enc, xs, limits, 3);
  EXPECT_DOUBLE_EQ(s.exact_match, 0.5);
  EXPECT_DOUBLE_EQ(s.f1, 0.5);
}

// The emulated (or real) CUDA backend: the packed, probed decoding equals the plain loop there.
TEST(GenerationEval, ProbedDecodingOnCuda) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CUDA, 64, 3, DTYPE_F32);
  const std::vector<EncodedExample> enc = encode_prompts(*lm.tokenizer);
  const Probe pair{0.05f, fresh_seed(), true};
  const auto texts = greedy_generations(*lm.model, *lm.tokenizer, pointers(enc), {pair}, {8, {}});
  for (size_t i = 0; i < enc.size(); i++) {
    EXPECT_EQ(texts[0][i], plain_greedy(*lm.model, *lm.tokenizer, enc[i], half_probe(pair, +1), 8, ""));
    EXPECT_EQ(texts[1][i], plain_greedy(*lm.model, *lm.tokenizer, enc[i], half_probe(pair, -1), 8, ""));
  }
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}
