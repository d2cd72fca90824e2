// Where this process sits in a training run, and the work that depends on it: one
// process; data-parallel replicas (every rank holds the whole model and scores a shard of each
// batch: data_parallel.h); or a pipeline of K stages × R replicas (each rank a range of layers:
// pipeline.h). The trainer's phases are the same for all three and ask this value for what
// differs: the losses of a step, an accuracy, a count over the model, a checkpoint.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dist/world.h"
#include "setup/model_setup.h"
#include "train/pipeline.h"

namespace smezo {

class Topology {
 public:
  // Checks --pipeline-stages (at least 1, several only over as many MPI ranks, a divisor of the
  // rank count) and --micro-batches (0: the device's default, K on cuda, 1 on cpu).
  Topology(World& world, int pipeline_stages, int64_t micro_batches, const std::string& device);

  World& world() const { return world_; }
  bool root() const { return world_.is_root(); }  // rank 0: the one rank that writes
  bool pipelined() const { return layout_.stages > 1; }
  int64_t micro_batches() const { return micro_batches_; }
  // A later stage of the first pipeline: it hands its tensors to rank 0 for each checkpoint.
  bool serves_checkpoint() const { return pipelined() && layout_.replica == 0 && !layout_.first_stage(); }
  // Loads only this rank's stage of the model (a pipeline), or all of it.
  void select_stage(ModelOpenOptions* mo) const;
  // What else every rank must agree on ("" for one stage).
  std::string describe() const;

  // The losses of `batch` under `probes`, one per half (probe_halves), the same on every rank.
  std::vector<double> losses(Model& model, const std::vector<const EncodedExample*>& batch,
                             const std::vector<Probe>& probes, bool as_classification) const;
  // The accuracy over `set`, the same on every rank.
  double accuracy(Model& model, const std::vector<EncodedExample>& set, int64_t batch_examples) const;
  // The sum of count(param) over the whole model (a pipeline: over every stage, a tied
  // embedding once), the same on every rank.
  int64_t sum_over_model(Model& model, const std::function<int64_t(const Param&)>& count) const;
  // A JSON object of per-tensor values (the S-MeZO thresholds) for the whole model: a
  // pipeline's stages merged, the same on every rank.
  nlohmann::json whole_model_object(const nlohmann::json& mine, const std::string& what) const;
  // Rank 0's `value` where the ranks must follow one decision about the checkpoint (a
  // pipeline's stages serve rank 0's); each rank's own otherwise.
  int64_t checkpoint_decision(int64_t value, const std::string& what) const;
  // The checkpoint of the whole model into `dir`: rank 0 writes it (a pipeline's tensors fetched
  // from the stages, which serve them here); every other rank returns at once. Throws as
  // save_hf_checkpoint does (on rank 0).
  void save_checkpoint(Model& model, const std::string& dir, const std::string& tokenizer_path,
                       const nlohmann::json& settings, const std::string& dtype) const;

 private:
  World& world_;
  PipelineLayout layout_;  // one stage, one replica per rank unless pipelined
  int64_t micro_batches_ = 1;
};

}  // namespace smezo
