// Pipeline-parallel training over the ranks of a World (`--pipeline-stages K`).
//
// Layout: ranks = K stages × R replicas; rank r is stage r % K of replica r / K, so the stages
// of one pipeline are neighbouring ranks (one node, where possible). Each stage holds a
// contiguous range of layers (model_stage: embeddings on the first, final norm and LM head on
// the last, a tied head's token embedding on both) and nothing else. Replicas split every batch
// as data parallel does (shard_of over the examples).
//
// A step: the batch's micro-batches flow through the stages, each with both probes side by
// side (a probe pair; with --probes separate the + micro-batches, then the - ones): a stage
// receives a micro-batch's hidden states (tokens, dim; fp32) from the previous stage, runs its
// layers under the probe and sends the result on, while it already receives the next one
// (non-blocking point-to-point, two buffers each way). With M micro-batches in flight the stages
// overlap but for a bubble of (K - 1) / (M + K - 1) of the step; each micro-batch regenerates
// the noise of every weight it passes, so M trades bubble against noise (RESULTS.md). The last
// stage scores; the last stages of all replicas exchange the per-example scores (one allgather
// for both probes); every rank reduces the losses in the one-process order, so g, the seed log
// and the update are bit-identical to one process (a row's result does not depend on the other
// rows of its forward, so splitting a batch into micro-batches changes no score). Each stage then
// updates its own layers from the step seed (canonical tensor ids: the same noise as one
// process); both holders of a tied embedding apply the same update and stay identical.
//
// Checkpoints: rank 0 writes the one model.safetensors a single process writes, pulling the
// other stages' tensors one at a time (a request naming the tensor, then its fp32 values), so host
// memory stays at one tensor on every rank. A failed write tells the waiting stages to stop.
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

// This rank's place among world.size() ranks split into `stages` stages. Throws unless the
// rank count is a multiple of the stage count.
PipelineLayout pipeline_layout(const World& world, int stages);

// The micro-batches `examples` are scored in under every probe of `probes`: the plan_scoring
// chunks of the model's workspace (half of it when a probe pair is among them), cut smaller
// when that gives fewer than `micro_batches`, so that many can be in flight.
std::vector<ScoringChunk> pipeline_micro_batches(const Model& model, const std::vector<const EncodedExample*>& examples,
                                                 bool gold_only, int64_t micro_batches, const std::vector<Probe>& probes);

// Runs `chunks` under every probe of `probes` (in that order; a probe pair runs each chunk with
// both halves side by side) through this replica's stages. On the last stage: the scores of
// `examples` per half (a pair's + and - halves, a single probe's one); elsewhere: empty.
// `what` names the run in timeout messages.
std::vector<ExampleScores> pipeline_run(World& world, const PipelineLayout& layout, Model& model,
                                        const std::vector<const EncodedExample*>& examples,
                                        const std::vector<ScoringChunk>& chunks, const std::vector<Probe>& probes,
                                        const std::string& what);

// batch_loss (objective.h) over all pipelines: each replica scores its shard of batch under
// every probe (a pair: both halves side by side in each micro-batch, each weight's noise
// generated once for both; single probes: one after the other, each with all its micro-batches),
// the last stages' scores are gathered, every rank reduces the losses as one process does. One
// loss per half (probe_halves), the same on every rank.
std::vector<double> pipeline_loss(World& world, const PipelineLayout& layout, Model& model,
                                  const std::vector<const EncodedExample*>& batch, const std::vector<Probe>& probes,
                                  bool as_classification, int64_t micro_batches);

// accuracy (objective.h) over all pipelines: the correct counts of the replicas' last stages, added.
double pipeline_accuracy(World& world, const PipelineLayout& layout, Model& model,
                         const std::vector<EncodedExample>& examples, int64_t micro_batches);

// The union of every rank's JSON object (the S-MeZO thresholds of the stages' tensors), the
// same on every rank.
nlohmann::json pipeline_merge_objects(World& world, const nlohmann::json& mine, const std::string& what);

// Over the tensors this stage owns (stage_owns: a tied embedding counts once), on replica 0:
// the sum of `count(param)` over every stage, the same on every rank.
int64_t pipeline_sum_owned(World& world, const PipelineLayout& layout, Model& model,
                           const std::function<int64_t(const Param&)>& count);

// Rank 0: the checkpoint of the whole model, its tensors fetched from the stages of replica 0.
CheckpointSource pipeline_checkpoint_source(World& world, const PipelineLayout& layout, Model& model);
// Every other stage of replica 0, while rank 0 writes a checkpoint: sends its owned tensors as
// rank 0 asks for them (in the file's order), until all are sent or rank 0 says stop.
void pipeline_serve_checkpoint(World& world, const PipelineLayout& layout, Model& model);

}  // namespace smezo
