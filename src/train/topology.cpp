// The topology of a training run (see topology.h).
#include "train/topology.h"

#include "common/check.h"
#include "train/checkpoint.h"
#include "train/data_parallel.h"

namespace smezo {

Topology::Topology(World& world, int pipeline_stages, int64_t micro_batches, Device device)
    : world_(world) {
  SMEZO_REQUIRE(pipeline_stages >= 1 && micro_batches >= 0, "train: --pipeline-stages %d must be at least 1 "
                "and --micro-batches %lld at least 0", pipeline_stages, (long long)micro_batches);
  SMEZO_REQUIRE(pipeline_stages == 1 || world.size() > 1, "--pipeline-stages %d splits the model over %d MPI ranks, "
                "but this is one process ---> HINT: mpirun -np %d smezo train ... (a build with MPI: make info shows "
                "✓ MPI)", pipeline_stages, pipeline_stages, pipeline_stages);
  if (pipeline_stages > 1) layout_ = pipeline_layout(world, pipeline_stages);
  // Micro-batches trade bubble against noise: K on cuda (compute-bound: overlap wins), 1 on cpu.
  micro_batches_ = micro_batches > 0 ? micro_batches : device == DEVICE_CUDA ? int64_t{pipeline_stages} : 1;
}

void Topology::select_stage(ModelOpenOptions* mo) const {
  if (!pipelined()) return;
  mo->stage_index = layout_.stage;
  mo->stage_count = layout_.stages;
}

std::string Topology::describe() const {
  if (!pipelined()) return "";
  return "\npipeline stages " + std::to_string(layout_.stages) + ", micro-batches " + std::to_string(micro_batches_);
}

std::vector<double> Topology::losses(Model& model, const std::vector<const EncodedExample*>& batch,
                                     const std::vector<Probe>& probes, bool as_classification) const {
  return pipelined() ? pipeline_loss(world_, layout_, model, batch, probes, as_classification, micro_batches_)
                     : batch_loss_ranks(world_, model, batch, probes, as_classification);
}

double Topology::accuracy(Model& model, const std::vector<EncodedExample>& set, int64_t batch_examples) const {
  return pipelined() ? pipeline_accuracy(world_, layout_, model, set, micro_batches_)
                     : accuracy_ranks(world_, model, set, batch_examples);
}

int64_t Topology::sum_over_model(Model& model, const std::function<int64_t(const Param&)>& count) const {
  if (pipelined()) return pipeline_sum_owned(world_, layout_, model, count);
  int64_t total = 0;
  for (const Param* p : model.params()) total += count(*p);
  return total;
}

nlohmann::json Topology::whole_model_object(const nlohmann::json& mine, const std::string& what) const {
  return pipelined() ? pipeline_merge_objects(world_, mine, what) : mine;
}

int64_t Topology::checkpoint_decision(int64_t value, const std::string& what) const {
  return pipelined() ? value_of_rank0(world_, value, what) : value;
}

void Topology::save_checkpoint(Model& model, const std::string& dir, const std::string& tokenizer_path,
                               const nlohmann::json& settings, std::optional<DType> dtype) const {
  if (serves_checkpoint()) return pipeline_serve_checkpoint(world_, layout_, model);
  if (!root()) return;
  if (pipelined())
    save_hf_checkpoint(pipeline_checkpoint_source(world_, layout_, model), dir, tokenizer_path, settings, dtype);
  else
    save_hf_checkpoint(model, dir, tokenizer_path, settings, dtype);
}

}  // namespace smezo
