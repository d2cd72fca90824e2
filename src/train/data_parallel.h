// Data-parallel training over the ranks of a World (src/dist/world.h).
//
// Every rank holds the whole model and the whole (deterministic) minibatch; rank r scores
// only its contiguous shard of the examples (shard_of), under the same probe. The ranks then
// exchange their per-example candidate scores, and every rank computes the loss with the same
// reduction code over the same scores in batch order. A token row's result does not depend on
// the other rows of its forward (src/cpu/cpu_gemm.cpp), so the scores, the loss, g and the
// update are bit-identical to one process, and identical on every rank. Weights never travel.
//
// Bytes per exchange: 16 per candidate of every example and probe half (the score's sum of
// log-probs as a float64 and its token count); one exchange per step, carrying every probe's
// scores (a probe pair's two halves, or the + and the - probe with --probes separate).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "dist/world.h"
#include "train/objective.h"

namespace smezo {

// THE hook between a training step and the ranks. The examples of `batch` are split into
// `shards` contiguous shards (shard_of); scorer(s) is the rank that scored shard s and
// contributes `local` (per probe half: the scores of its shard's examples), every other rank
// contributes nothing (`local` empty; a pipeline's earlier stages). Returns per probe half the
// scores of every example of `batch`, in batch order, the same on every rank: one exchange.
// One process: `local` as it is. `what` names the exchange in a timeout message.
std::vector<ExampleScores> gather_shard_scores(World& world, int shards, const std::function<int(int)>& scorer,
                                               const std::vector<ExampleScores>& local,
                                               const std::vector<const EncodedExample*>& batch, size_t probes,
                                               const std::string& what);

// batch_loss (objective.h) over the ranks: this rank scores its shard under every probe (a pair
// with both halves side by side), one exchange carries every half's scores, and each loss is
// reduced as on one process. One loss per half (probe_halves), the same on every rank.
std::vector<double> batch_loss_ranks(World& world, Model& model, const std::vector<const EncodedExample*>& batch,
                                     const std::vector<Probe>& probes, bool as_classification);

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
