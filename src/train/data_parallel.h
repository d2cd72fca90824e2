// Data-parallel training over the ranks of a World (src/dist/world.h).
// Every rank holds the whole model and the whole (deterministic) minibatch and scores its contiguous
// shard (shard_of) under the same probe; the ranks exchange per-example candidate scores and each
// reduces them in batch order with the same code. A row's result does not depend on the other rows of
// its forward, so scores, loss, g and update are bit-identical to one process. Weights never travel.
// One exchange per step carries every half's scores: 16 bytes per candidate (float64 sum, token count).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "dist/world.h"
#include "train/objective.h"

namespace smezo {

// THE hook between a step and the ranks: scorer(s), the rank that scored shard s, contributes `local`;
// returns per half every example's scores in batch order, the same on every rank, in one exchange.
std::vector<ExampleScores> gather_shard_scores(World& world, int shards, const std::function<int(int)>& scorer,
                                               const std::vector<ExampleScores>& local,
                                               const std::vector<const EncodedExample*>& batch, size_t probes,
                                               const std::string& what);

// batch_loss (objective.h) over the ranks: one loss per half (probe_halves), the same on every rank.
std::vector<double> batch_loss_ranks(World& world, Model& model, const std::vector<const EncodedExample*>& batch,
                                     const std::vector<Probe>& probes, bool as_classification);

// accuracy (objective.h) over the ranks: each shard's correct count, added (integers: exact).
double accuracy_ranks(World& world, Model& model, const std::vector<EncodedExample>& examples,
                      int64_t batch_examples);

// The sum of every rank's `value` (one exchange; integers: exact, in any order).
int64_t sum_over_ranks(World& world, int64_t value, const std::string& what);

// Rank 0's `value` on every rank (one exchange): a decision only rank 0 may take.
int64_t value_of_rank0(World& world, int64_t value, const std::string& what);

// Throws naming the rank and `what` when a rank's `text` (e.g. the run header) differs from rank 0's.
void require_same_on_all_ranks(World& world, const std::string& text, const std::string& what);

}  // namespace smezo
