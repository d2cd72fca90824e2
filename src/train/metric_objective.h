// The task metric as the quantity SPSA minimises (--objective), as MeZO does for SQuAD F1:
//   loss      the task's loss (objective.h's batch_loss): the default, handled by the trainer
//   accuracy  1 - the share of the minibatch whose highest-scoring candidate is gold (classification)
//   f1        1 - the mean token F1 of the greedy generations against the references (generation)
// Each probe half also measures the task's loss, which the trainer logs beside the metric.
// Small minibatches make these objectives coarse: l+ == l- (so g = 0) is common.
#pragma once

#include <string>
#include <vector>

#include "smezo/train.h"  // Objective
#include "tasks/templates.h"
#include "train/generation_eval.h"

namespace smezo {

// Throws (one line naming the task) unless f1 has a generation task and accuracy a classification one.
void check_objective(Objective objective, bool generation_task, const std::string& task);

struct ProbeMeasures {
  std::vector<double> objective;  // per probe half (probe_halves): 1 - accuracy, or 1 - F1
  std::vector<double> loss;       // per probe half: the task's loss
};

// Each `batch` example's references; batch points into `encoded`, the encoding of `examples` in order.
std::vector<const std::vector<std::string>*> references_of(const std::vector<const EncodedExample*>& batch,
                                                           const std::vector<EncodedExample>& encoded,
                                                           const std::vector<TaskExample>& examples);

// The objective (accuracy or f1) and the task's loss of the whole batch under every probe.
struct MetricBatch {
  const std::vector<const EncodedExample*>* examples = nullptr;
  std::vector<const std::vector<std::string>*> references;
  bool as_classification = true;
};
ProbeMeasures measure_metric_objective(Model& model, const Tokenizer& tokenizer, Objective objective,
                                       const MetricBatch& batch, const std::vector<Probe>& probes,
                                       const GenerationLimits& limits);

}  // namespace smezo
