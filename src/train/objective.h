// Losses and scores over encoded task examples (MeZO's protocol: docs/training.md, "Tasks").
// Candidates go into packed forwards (chunked to the workspace); logits only at rows predicting options.
//   score(candidate) = mean over its option tokens of log p(token | prefix)
//   classification loss = mean over examples of -log softmax(scores)[gold]
//   gold-token loss (COPA) = mean over all gold option tokens of -log p(token | prefix)
//   accuracy = fraction of examples whose highest score is the gold candidate
#pragma once

#include <string>
#include <vector>

#include "model/model.h"
#include "tasks/task_encode.h"

namespace smezo {

struct CandidateScore {
  double sum_logprob = 0;  // over the option tokens
  int64_t n_tokens = 0;
  double mean_logprob() const { return n_tokens ? sum_logprob / n_tokens : 0.0; }
};
using ExampleScores = std::vector<std::vector<CandidateScore>>;  // [example][candidate]

// The forwards that score examples: each candidate's sequence (or one shared-prefix sequence for
// single-token options) packed into batches of <= max_tokens tokens and max_rows logit rows; any
// packing gives the same scores. capacity_note ends the error for a candidate that fits no batch.
struct ScoreTarget {
  size_t example = 0, candidate = 0;
  int64_t logit_row = 0;  // index into batch.logit_rows
  int32_t token = 0;
};
struct ScoringChunk {
  ForwardBatch batch;
  std::vector<ScoreTarget> targets;  // in the order their log-probs are added
};
std::vector<ScoringChunk> plan_scoring(const std::vector<const EncodedExample*>& examples, bool gold_only,
                                       int64_t max_tokens, int64_t max_rows, const std::string& capacity_note = "");
ExampleScores empty_scores(const std::vector<const EncodedExample*>& examples);
// Adds the chunk's target log-probs, from its logits (batch.logit_rows.size(), vocab), to scores.
void add_chunk_scores(const ScoringChunk& chunk, const float* logits, int64_t vocab, ExampleScores* scores);

// Each example's candidate scores (gold_only: just the gold), one set per probe half.
std::vector<ExampleScores> score_examples(Model& model, const std::vector<const EncodedExample*>& examples,
                                          const std::vector<Probe>& probes, bool gold_only);

double classification_loss(const ExampleScores& scores, const std::vector<const EncodedExample*>& examples);
double gold_token_loss(const ExampleScores& scores, const std::vector<const EncodedExample*>& examples);
// The task's loss: classification_loss, or gold_token_loss when !as_classification (COPA).
double task_loss(const ExampleScores& scores, const std::vector<const EncodedExample*>& examples, bool as_classification);

// The training loss of a minibatch under every probe, one per half (score_examples).
std::vector<double> batch_loss(Model& model, const std::vector<const EncodedExample*>& examples,
                               const std::vector<Probe>& probes, bool as_classification);

// Length-normalised candidate log-likelihood accuracy (count_correct: the count), batch_examples at a time.
int64_t count_correct(Model& model, const std::vector<const EncodedExample*>& examples, int64_t batch_examples);
double accuracy(Model& model, const std::vector<EncodedExample>& examples, int64_t batch_examples);
// The examples whose highest-scoring candidate (the first of equal ones) is the gold one.
int64_t count_best_is_gold(const ExampleScores& scores, const std::vector<const EncodedExample*>& examples);

}  // namespace smezo
