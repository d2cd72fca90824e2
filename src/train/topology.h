// Where this process sits in a training run (one process, data-parallel replicas, or K-stage pipelines)
// and the work that depends on it: a step's losses, an accuracy, a count, a checkpoint.
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
  // Checks --pipeline-stages (>= 1, dividing the rank count) and --micro-batches (0: the default).
  Topology(World& world, int pipeline_stages, int64_t micro_batches, Device device);

  World& world() const { return world_; }
  bool root() const { return world_.is_root(); }  // rank 0: the one rank that writes
  bool pipelined() const { return layout_.stages > 1; }
  int64_t micro_batches() const { return micro_batches_; }
  // A later stage of the first pipeline: it hands its tensors to rank 0 for each checkpoint.
  bool serves_checkpoint() const { return pipelined() && layout_.replica == 0 && !layout_.first_stage(); }
  // Takes part in a checkpoint: rank 0 writes it, a later stage serves (a data-parallel replica: no part).
  bool writes_checkpoint() const { return root() || serves_checkpoint(); }
  // Loads only this rank's stage of the model (a pipeline), or all of it.
  void select_stage(ModelOpenOptions* mo) const;
  // What else every rank must agree on ("" for one stage).
  std::string describe() const;

  // The losses of `batch` under `probes`, one per half (probe_halves), the same on every rank.
  std::vector<double> losses(Model& model, const std::vector<const EncodedExample*>& batch,
                             const std::vector<Probe>& probes, bool as_classification) const;
  // The accuracy over `set`, the same on every rank.
  double accuracy(Model& model, const std::vector<EncodedExample>& set, int64_t batch_examples) const;
  // The sum of count(param) over the whole model (a pipeline: every stage, a tied embedding once).
  int64_t sum_over_model(Model& model, const std::function<int64_t(const Param&)>& count) const;
  // Per-tensor values (the S-MeZO thresholds) of the whole model: a pipeline's stages merged.
  nlohmann::json whole_model_object(const nlohmann::json& mine, const std::string& what) const;
  // Rank 0's `value` where ranks must follow its checkpoint decision (a pipeline); else each rank's own.
  int64_t checkpoint_decision(int64_t value, const std::string& what) const;
  // Rank 0 writes the whole model's checkpoint (throws as save_hf_checkpoint); stages serve tensors.
  void save_checkpoint(Model& model, const std::string& dir, const std::string& tokenizer_path,
                       const nlohmann::json& settings, std::optional<DType> dtype) const;

 private:
  World& world_;
  PipelineLayout layout_;  // one stage, one replica per rank unless pipelined
  int64_t micro_batches_ = 1;
};

}  // namespace smezo
