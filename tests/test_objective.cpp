// Candidate scoring and losses: the shared-prefix path (single-token options) gives exactly
// the numbers of scoring each candidate on its own, and the losses follow their definitions.
#include <gtest/gtest.h>

#include <cmath>

#include "setup/model_setup.h"
#include "tasks/task_data.h"
#include "tasks/task_encode.h"
#include "train/objective.h"

using namespace smezo;

namespace {

// log p(option tokens | prefix) of one candidate scored on its own (an example with just that
// candidate never takes the shared-prefix path).
double lone_candidate_logprob(Model& model, const EncodedCandidate& c) {
  EncodedExample alone;
  alone.candidates = {c};
  alone.gold = 0;
  return score_examples(model, {&alone}, {Probe{}}, false)[0][0][0].sum_logprob;
}

}  // namespace

TEST(Objective, SharedPrefixScoringEqualsSeparateCandidates) {
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 512, 64);
  for (const char* task : {"sst2", "cb", "copa"}) {  // cb: 3 single-token options; copa: multi-token
    TaskSplits splits = load_task(task, 3, 6, 0, 0);
    std::vector<EncodedExample> enc;
    for (const TaskExample& x : splits.train) enc.push_back(encode_example(*lm.tokenizer, x, 96));
    std::vector<const EncodedExample*> batch;
    for (const auto& e : enc) batch.push_back(&e);
    auto scores = score_examples(*lm.model, batch, {Probe{}}, false)[0];
    for (size_t e = 0; e < enc.size(); e++) {
      for (size_t c = 0; c < enc[e].candidates.size(); c++) {
        const EncodedCandidate& cand = enc[e].candidates[c];
        EXPECT_EQ(scores[e][c].n_tokens, (int64_t)cand.tokens.size() - cand.option_start);
        // bit-identical: a row's logits depend only on the tokens up to it
        EXPECT_EQ(scores[e][c].sum_logprob, lone_candidate_logprob(*lm.model, cand)) << task << " " << e << "/" << c;
      }
    }
    // the classification loss is the cross-entropy over mean log-probs
    double expected = 0.0;
    for (size_t e = 0; e < enc.size(); e++) {
      double z = 0.0;
      for (const CandidateScore& s : scores[e]) z += std::exp(s.mean_logprob());
      expected += -(scores[e][enc[e].gold].mean_logprob() - std::log(z));
    }
    EXPECT_NEAR(classification_loss(scores, batch), expected / enc.size(), 1e-12) << task;
  }
}

// An example whose candidates certainly take the shared path: one prefix, single-token options.
TEST(Objective, SharedPrefixPathOnSingleTokenOptions) {
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 512, 64);
  std::vector<int32_t> prefix = lm.tokenizer->encode("Once upon a time there was a", true);
  EncodedExample ex;
  for (int32_t option : {403, 77, 290}) {
    EncodedCandidate c;
    c.tokens = prefix;
    c.tokens.push_back(option);
    c.option_start = (int64_t)prefix.size();
    ex.candidates.push_back(c);
  }
  ex.gold = 1;
  auto scores = score_examples(*lm.model, {&ex}, {Probe{}}, false)[0];
  for (size_t c = 0; c < 3; c++) {
    EXPECT_EQ(scores[0][c].n_tokens, 1);
    EXPECT_EQ(scores[0][c].sum_logprob, lone_candidate_logprob(*lm.model, ex.candidates[c])) << c;
  }
  EXPECT_NE(scores[0][0].sum_logprob, scores[0][1].sum_logprob);
}

TEST(Objective, GoldTokenLossIsMeanNllOfGoldOptionTokens) {
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 512, 64);
  TaskSplits splits = load_task("copa", 5, 4, 0, 0);
  std::vector<EncodedExample> enc;
  for (const TaskExample& x : splits.train) enc.push_back(encode_example(*lm.tokenizer, x, 96));
  std::vector<const EncodedExample*> batch;
  for (const auto& e : enc) batch.push_back(&e);
  double nll = 0.0;
  int64_t n = 0;
  for (const auto& e : enc) {
    const EncodedCandidate& gold = e.candidates[e.gold];
    nll -= lone_candidate_logprob(*lm.model, gold);
    n += (int64_t)gold.tokens.size() - gold.option_start;
  }
  EXPECT_NEAR(batch_loss(*lm.model, batch, {Probe{}}, false)[0], nll / n, 1e-12);
}

// The probe list: one loss per half, in order, whatever the list mixes. A pair's halves equal
// the + and - probes run on their own exactly (CPU; EXPECT_EQ on doubles is exact), a list of several probes gives each
// probe's own losses, and an unperturbed probe differs from both.
TEST(Objective, BatchLossOverAProbeListGivesEachHalfInOrder) {
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 512, 64);
  for (Param* p : lm.model->params()) p->info.noise = NOISE_GAUSSIAN;
  for (const char* task : {"sst2", "copa"}) {  // classification and gold-token losses
    TaskSplits splits = load_task(task, 5, 5, 0, 0);
    std::vector<EncodedExample> enc;
    for (const TaskExample& x : splits.train) enc.push_back(encode_example(*lm.tokenizer, x, 96));
    std::vector<const EncodedExample*> batch;
    for (const auto& e : enc) batch.push_back(&e);
    const bool as_classification = std::string(task) != "copa";
    const Probe pair{1e-2f, 77, true}, plus = half_probe(pair, +1), minus = half_probe(pair, -1);
    const std::vector<double> mixed = batch_loss(*lm.model, batch, {pair, Probe{}, minus, plus}, as_classification);
    ASSERT_EQ(mixed.size(), 5u) << task;
    const double alone_plus = batch_loss(*lm.model, batch, {plus}, as_classification)[0];
    const double alone_minus = batch_loss(*lm.model, batch, {minus}, as_classification)[0];
    const double plain = batch_loss(*lm.model, batch, {Probe{}}, as_classification)[0];
    EXPECT_EQ(mixed[0], alone_plus) << task;
    EXPECT_EQ(mixed[1], alone_minus) << task;
    EXPECT_EQ(mixed[2], plain) << task;
    EXPECT_EQ(mixed[3], alone_minus) << task;
    EXPECT_EQ(mixed[4], alone_plus) << task;
    EXPECT_NE(alone_plus, plain) << task;
    EXPECT_NE(alone_plus, alone_minus) << task;
  }
}
