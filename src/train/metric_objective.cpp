// The task metric as the SPSA objective (see metric_objective.h).
#include "train/metric_objective.h"

#include "common/check.h"
#include "train/objective.h"

namespace smezo {

void check_objective(Objective objective, bool generation_task, const std::string& task) {
  SMEZO_REQUIRE(!(objective == OBJECTIVE_F1 && !generation_task), "train: --objective f1 scores generated text, "
                "but task %s is a classification task ---> HINT: use --objective accuracy or loss", task.c_str());
  SMEZO_REQUIRE(!(objective == OBJECTIVE_ACCURACY && generation_task), "train: --objective accuracy scores a choice "
                "among candidates, but task %s is a generation task ---> HINT: use --objective f1 or loss",
                task.c_str());
}

std::vector<const std::vector<std::string>*> references_of(const std::vector<const EncodedExample*>& batch,
                                                           const std::vector<EncodedExample>& encoded,
                                                           const std::vector<TaskExample>& examples) {
  SMEZO_REQUIRE(encoded.size() == examples.size(), "references: %zu encoded examples for %zu examples",
                encoded.size(), examples.size());
  std::vector<const std::vector<std::string>*> out;
  for (const EncodedExample* x : batch) {
    SMEZO_REQUIRE(x >= encoded.data() && x < encoded.data() + encoded.size(), "references: an example not of the set");
    out.push_back(&examples[static_cast<size_t>(x - encoded.data())].references);
  }
  return out;
}

ProbeMeasures measure_metric_objective(Model& model, const Tokenizer& tokenizer, Objective objective,
                                       const MetricBatch& batch, const std::vector<Probe>& probes,
                                       const GenerationLimits& limits) {
  const std::vector<const EncodedExample*>& xs = *batch.examples;
  ProbeMeasures m;
  if (objective == OBJECTIVE_ACCURACY) {
    // every candidate's scores: the choice, and the loss from the same numbers
    for (const ExampleScores& scores : score_examples(model, xs, probes, false)) {
      m.objective.push_back(1.0 - static_cast<double>(count_best_is_gold(scores, xs)) / static_cast<double>(xs.size()));
      m.loss.push_back(task_loss(scores, xs, batch.as_classification));
    }
    return m;
  }
  SMEZO_REQUIRE(objective == OBJECTIVE_F1, "measure_metric_objective: objective %d is not a metric",
                static_cast<int>(objective));
  for (const std::vector<std::string>& texts : greedy_generations(model, tokenizer, xs, probes, limits))
    m.objective.push_back(1.0 - score_generations(texts, batch.references).f1);
  m.loss = batch_loss(model, xs, probes, batch.as_classification);
  return m;
}

}  // namespace smezo
