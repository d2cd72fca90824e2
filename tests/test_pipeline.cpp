// Pipeline stages in one process (the multi-rank runs are in test_mpi.cpp): a model
// split into K stages (model_stage), each loaded as its own Model, chained through
// forward_stage, gives forward()'s logits bit for bit under a perturbing probe, for LLaMA (tied
// and untied head) and OPT (learned positions, LayerNorm biases) layouts; a stage holds only its
// tensors, with the whole model's tensor ids; the memory estimate of a stage is what it
// allocates; micro-batches of any size score like the workspace's chunks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "cpu/cpu_backend.h"
#include "model/memory_estimate.h"
#include "model/model.h"
#include "model_fixture.h"
#include "test_util.h"
#include "train/objective.h"

using namespace smezo;
using smezo_test::kPoison;
using smezo_test::same_bits;
using testing::HasSubstr;

namespace {

ModelConfig llama4(bool tied) {
  ModelConfig c = smezo_test::tiny_llama_config();
  c.n_layers = 4;
  c.tied_lm_head = tied;
  return c;
}

ModelConfig opt3() {  // learned positions, LayerNorm biases, tied head
  ModelConfig c = smezo_test::tiny_opt_config();
  c.n_layers = 3;
  c.tied_lm_head = true;
  return c;
}

ForwardBatch three_sequences(const ModelConfig& c) {
  ForwardBatch b;
  for (int64_t len : {9, 5, 12}) {
    b.seq_lens.push_back(len);
    for (int64_t i = 0; i < len; i++) b.tokens.push_back(static_cast<int32_t>((i * 7 + len * 3) % c.vocab_size));
  }
  b.logit_rows = {0, 8, 9, 13, 20, 25};
  return b;
}

}  // namespace

TEST(PipelineStage, LayersSplitContiguousAndBalanced) {
  ModelConfig c = smezo_test::tiny_llama_config();
  c.n_layers = 5;
  for (int k = 1; k <= 5; k++) {
    int64_t next = 0;
    for (int s = 0; s < k; s++) {
      const ModelStage st = model_stage(c, s, k);
      EXPECT_EQ(st.first_layer, next);
      EXPECT_TRUE(st.end_layer - st.first_layer == 5 / k || st.end_layer - st.first_layer == 5 / k + 1);
      EXPECT_EQ(st.first(), s == 0);
      EXPECT_EQ(st.last(), s == k - 1);
      next = st.end_layer;
    }
    EXPECT_EQ(next, 5);
  }
  EXPECT_THAT(smezo_test::error_of([&] { model_stage(c, 0, 6); }),
              HasSubstr("6 pipeline stages for a model of 5 layers: every stage needs at least one layer"));
}

// The stages chained: the first embeds, each passes fp32 hidden states on, the last gives the
// logits. Under a probe that perturbs everything (embeddings, norms, biases, linears), single
// or a pair (the batch twice side by side through every stage).
TEST(PipelineStage, ChainedStagesEqualTheWholeForward) {
  int checked = 0;
  for (const ModelConfig& c : {llama4(false), llama4(true), opt3()}) {
    const WeightSource src = smezo_test::random_weight_source(c, 31);
    const ForwardBatch batch = three_sequences(c);
    CpuBackend whole_backend;
    Model whole(src, whole_backend, DTYPE_F32, 64, 32);
    std::map<std::string, uint32_t> whole_ids;
    for (Param* p : whole.params()) {
      p->info.noise = NOISE_GAUSSIAN;
      whole_ids[p->info.name] = p->info.tensor_id;
    }
    for (const Probe& probe : {Probe{2e-2f, 77}, Probe{2e-2f, 77, true}}) {
      std::vector<float> expected, plain;
      whole.forward(batch, probe, &expected);
      whole.forward(batch, Probe{}, &plain);
      const size_t copies = probe.pair ? 2 : 1;
      ASSERT_EQ(expected.size(), copies * batch.logit_rows.size() * c.vocab_size);
      ASSERT_FALSE(same_bits(std::vector<float>(expected.begin(), expected.begin() + plain.size()), plain))
          << "the probe must change the logits";
      for (int k = 2; k <= c.n_layers; k++) {
        std::vector<float> hidden;
        int64_t held = 0;
        for (int s = 0; s < k; s++) {
          CpuBackend be;
          Model stage(src, be, DTYPE_F32, 64, 32, model_stage(c, s, k));
          for (Param* p : stage.params()) {
            p->info.noise = NOISE_GAUSSIAN;
            EXPECT_EQ(p->info.tensor_id, whole_ids.at(p->info.name)) << p->info.name;
            held += p->w.numel();
          }
          std::vector<float> out(s == k - 1 ? expected.size() : copies * batch.tokens.size() * c.dim, kPoison);
          stage.forward_stage(batch, probe, hidden, &out);
          hidden = out;
          if (s + 1 < k) {
            EXPECT_THAT(smezo_test::error_of([&] {
                          std::vector<float> logits;
                          stage.forward(batch, probe, &logits);
                        }),
                        HasSubstr("forward() runs the whole model"));
          }
        }
        EXPECT_TRUE(same_bits(hidden, expected))
            << "family " << c.family << " tied " << c.tied_lm_head << " stages " << k << " pair " << probe.pair;
        // every tensor on exactly one stage, a tied embedding on the first and the last
        const int64_t tied_extra = c.tied_lm_head ? c.vocab_size * c.dim : 0;
        EXPECT_EQ(held, whole.parameter_count() + tied_extra);
        checked++;
      }
    }
  }
  EXPECT_EQ(checked, 2 * (3 + 3 + 2));
}

TEST(PipelineStage, MemoryEstimateOfAStageIsWhatItAllocates) {
  for (const ModelConfig& c : {llama4(false), llama4(true), opt3()}) {
    const WeightSource src = smezo_test::random_weight_source(c, 5, 0.1f);
    const WorkspaceRows ws = workspace_for_batch(3, 20, 8192);
    int64_t weights = 0;
    for (int s = 0; s < 3; s++) {
      const ModelStage st = model_stage(c, s, 3);
      CpuBackend be;
      Model m(src, be, DTYPE_F32, ws.tokens, ws.logit_rows, st);
      const MemoryEstimate e = estimate_model_memory(c, DTYPE_F32, ws, cpu_memory_plan(), st);
      EXPECT_EQ(e.weights + e.activations, be.bytes_allocated()) << "stage " << s;
      weights += e.weights;
    }
    const MemoryEstimate whole = estimate_model_memory(c, DTYPE_F32, ws, cpu_memory_plan());
    EXPECT_EQ(weights, whole.weights + (c.tied_lm_head ? c.vocab_size * c.dim * 4 : 0));
  }
}

// Scoring plans: micro-batches of any size give the scores of one big batch, bit for bit.
TEST(PipelineStage, SmallerMicroBatchesScoreTheSame) {
  const ModelConfig c = llama4(false);
  CpuBackend be;
  Model m(smezo_test::random_weight_source(c, 8), be, DTYPE_F32, 128, 64);
  std::vector<EncodedExample> examples(5);
  for (size_t e = 0; e < examples.size(); e++) {
    for (int cand = 0; cand < 2; cand++) {
      EncodedCandidate ec;
      for (int64_t i = 0; i < 7 + static_cast<int64_t>(e) + cand; i++)
        ec.tokens.push_back(static_cast<int32_t>((i * 5 + e * 3 + cand) % c.vocab_size));
      ec.option_start = static_cast<int64_t>(ec.tokens.size()) - 2;
      examples[e].candidates.push_back(ec);
    }
    examples[e].gold = static_cast<int>(e % 2);
  }
  std::vector<const EncodedExample*> ptrs;
  for (const EncodedExample& x : examples) ptrs.push_back(&x);
  const Probe probe{1e-2f, 3};
  std::vector<std::vector<std::vector<CandidateScore>>> results;
  for (int64_t cap : {128, 24, 12}) {
    const std::vector<ScoringChunk> chunks = plan_scoring(ptrs, false, cap, 64);
    auto scores = empty_scores(ptrs);
    std::vector<float> logits;
    for (const ScoringChunk& ch : chunks) {
      m.forward(ch.batch, probe, &logits);
      add_chunk_scores(ch, logits.data(), c.vocab_size, &scores);
    }
    if (cap == 12) {
      EXPECT_EQ(chunks.size(), 10u) << "one sequence per chunk";
    }
    results.push_back(scores);
  }
  for (size_t r = 1; r < results.size(); r++)
    for (size_t e = 0; e < examples.size(); e++)
      for (size_t k = 0; k < 2; k++) {
        EXPECT_EQ(std::memcmp(&results[r][e][k].sum_logprob, &results[0][e][k].sum_logprob, sizeof(double)), 0);
        EXPECT_EQ(results[r][e][k].n_tokens, 2);
      }
}
