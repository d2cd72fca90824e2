// Data-parallel training over the ranks of a World (issue #13; src/dist/world.h).
//
// Every rank holds the whole model and the whole (deterministic) minibatch; rank r scores
// only its contiguous shard of the examples (shard_of), under the same probe. The ranks then
// exchange their per-example candidate scores, and every rank computes the loss with the same
// reduction code over the same scores in batch order. A token row's result does not depend on
// the other rows of its forward (src/cpu/cpu_gemm.cpp), so the scores, the loss, g and the
// update are bit-identical to one process, and identical on every rank. Weights never travel.
//
// Bytes per exchange: 16 per candidate of every example and probe (the score's sum of log-probs
// as a float64 and its token count); one exchange per step for a probe pair (both probes'
// scores), two with --probes separate (the + and the - probe).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "dist/world.h"
#include "train/objective.h"

namespace smezo {

using ExampleScores = std::vector<std::vector<CandidateScore>>;  // [example][candidate]

// THE hook between a training step and the ranks: this rank's scores of
// batch[shard.begin, shard.end) -> the scores of every example of `batch`, in batch order, the
// same on every rank. One process: returns `local` as it is. `what` names the exchange in a
// timeout message.
ExampleScores gather_example_scores(World& world, const ExampleScores& local,
                                    const std::vector<const EncodedExample*>& batch, const std::string& what);

// The general form, for several probes and for pipelines: the examples of `batch` are split
// into `shards` contiguous shards (shard_of); scorer(s) is the rank that scored shard s and
// contributes `local` (per probe: the scores of its shard's examples), every other rank
// contributes nothing (`local` empty). Returns per probe the scores of every example of
// `batch`, in batch order, the same on every rank: one exchange. One process: `local`.
std::vector<ExampleScores> gather_shard_scores(World& world, int shards, const std::function<int(int)>& scorer,
                                               const std::vector<ExampleScores>& local,
                                               const std::vector<const EncodedExample*>& batch, size_t probes,
                                               const std::string& what);

// batch_loss (objective.h) over the ranks: this rank scores its shard, the scores are gathered,
// the loss is reduced as on one process.
double batch_loss_ranks(World& world, Model& model, const std::vector<const EncodedExample*>& batch,
                        const Probe& probe, bool as_classification);

// batch_loss_pair (objective.h) over the ranks: each rank runs its shard once with both probes
// side by side; one exchange carries both probes' scores.
std::pair<double, double> batch_loss_pair_ranks(World& world, Model& model,
                                                const std::vector<const EncodedExample*>& batch, const Probe& pair,
                                                bool as_classification);

// accuracy (objective.h) over the ranks: each rank counts the correct examples of its shard;
// the counts are exchanged and added (integers: exact).
double accuracy_ranks(World& world, Model& model, const std::vector<EncodedExample>& examples,
                      int64_t batch_examples);

// The sum of every rank's `value` (one exchange; integers: exact, in any order).
int64_t sum_over_ranks(World& world, int64_t value, const std::string& what);

// Rank 0's `value` on every rank (one exchange): a decision only rank 0 may take.
int64_t value_of_rank0(World& world, int64_t value, const std::string& what);

// A check that every rank runs the same thing: every rank contributes `text` (e.g. the run
// header); a rank whose text differs from rank 0's is an error naming it and `what`.
void require_same_on_all_ranks(World& world, const std::string& text, const std::string& what);

}  // namespace smezo
