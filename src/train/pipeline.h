// Pipeline-parallel training over the ranks of a World (`--pipeline-stages K`).
// Layout: ranks = K stages × R replicas; rank r is stage r % K of replica r / K. Each stage holds a
// contiguous layer range (model_stage: embeddings on the first, final norm and LM head on the last, a
// tied head's embedding on both). Replicas split every batch as data parallel does (shard_of).
// A step: micro-batches flow through the stages, both probes side by side (--probes separate: the +
// micro-batches, then the - ones); hidden states (tokens, dim; fp32) pass by non-blocking
// point-to-point, two buffers each way. The bubble is (K - 1) / (M + K - 1) of a step, but each
// micro-batch regenerates its weights' noise: M trades bubble against noise. The last stages
// allgather the per-example scores and every rank reduces the losses in the one-process order, so g,
// the seed log and the update are bit-identical to one process (a row's result does not depend on
// other rows). Each stage updates its layers with canonical tensor ids; both holders of a tied
// embedding apply the same update.
// Checkpoints: rank 0 writes one process's model.safetensors, pulling the other stages' tensors
// one at a time (request, then fp32 values): one tensor of host memory per rank. A failed write
// tells the waiting stages to stop.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dist/world.h"
#include "train/checkpoint.h"
#include "train/data_parallel.h"
#include "train/objective.h"

namespace smezo {

struct PipelineLayout {
  int stages = 1, replicas = 1;
  int stage = 0, replica = 0;  // this rank's place
  int rank_of(int replica_index, int stage_index) const { return replica_index * stages + stage_index; }
  bool first_stage() const { return stage == 0; }
  bool last_stage() const { return stage == stages - 1; }
};

// This rank's place; throws unless world.size() is a multiple of `stages`.
PipelineLayout pipeline_layout(const World& world, int stages);

// The micro-batches of `examples` under `probes`: workspace chunks, cut to give >= `micro_batches`.
std::vector<ScoringChunk> pipeline_micro_batches(const Model& model, const std::vector<const EncodedExample*>& examples,
                                                 bool gold_only, int64_t micro_batches, const std::vector<Probe>& probes);

// Runs `chunks` under each probe through this replica's stages; the last stage returns the scores.
std::vector<ExampleScores> pipeline_run(World& world, const PipelineLayout& layout, Model& model,
                                        const std::vector<const EncodedExample*>& examples,
                                        const std::vector<ScoringChunk>& chunks, const std::vector<Probe>& probes,
                                        const std::string& what);

// batch_loss (objective.h) over all pipelines: one loss per half (probe_halves), the same on every rank.
std::vector<double> pipeline_loss(World& world, const PipelineLayout& layout, Model& model,
                                  const std::vector<const EncodedExample*>& batch, const std::vector<Probe>& probes,
                                  bool as_classification, int64_t micro_batches);

// accuracy (objective.h) over all pipelines: the correct counts of the replicas' last stages, added.
double pipeline_accuracy(World& world, const PipelineLayout& layout, Model& model,
                         const std::vector<EncodedExample>& examples, int64_t micro_batches);

// The union of every rank's JSON object (the stages' S-MeZO thresholds), the same on every rank.
nlohmann::json pipeline_merge_objects(World& world, const nlohmann::json& mine, const std::string& what);

// The sum of count(param) over replica 0's stages' owned tensors (stage_owns: a tied embedding once).
int64_t pipeline_sum_owned(World& world, const PipelineLayout& layout, Model& model,
                           const std::function<int64_t(const Param&)>& count);

// Rank 0: the checkpoint of the whole model, its tensors fetched from the stages of replica 0.
CheckpointSource pipeline_checkpoint_source(World& world, const PipelineLayout& layout, Model& model);
// Every other stage of replica 0, while rank 0 writes a checkpoint: sends its tensors as rank 0 asks.
void pipeline_serve_checkpoint(World& world, const PipelineLayout& layout, Model& model);

}  // namespace smezo
