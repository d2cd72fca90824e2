// Which part of a model a pipeline stage holds.
#pragma once

#include <cstdint>

#include "smezo/model_config.h"

namespace smezo {

// Layers [first_layer, end_layer) (+ embeddings, head: stage_holds); tensor ids stay canonical.
struct ModelStage {
  int index = 0, count = 1;
  int64_t first_layer = 0, end_layer = -1;  // -1: up to the last layer
  bool first() const { return index == 0; }
  bool last() const { return index == count - 1; }
  bool whole() const { return count == 1; }
};
// Contiguous balanced ranges (the first n_layers % count get one more); throws if layers < stages.
ModelStage model_stage(const ModelConfig& config, int index, int count);

}  // namespace smezo
