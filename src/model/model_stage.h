// Which part of a model a pipeline stage holds.
#pragma once

#include <cstdint>

#include "smezo/model_config.h"

namespace smezo {

// The part of the model one pipeline stage holds (src/train/pipeline.h): layers
// [first_layer, end_layer), plus the embeddings on the first stage and the final norm and LM
// head on the last (a tied head: the token embedding on both). The default is the whole model.
// Parameters keep their canonical tensor ids, so a stage draws the noise the whole model would.
struct ModelStage {
  int index = 0, count = 1;
  int64_t first_layer = 0, end_layer = -1;  // -1: up to the last layer
  bool first() const { return index == 0; }
  bool last() const { return index == count - 1; }
  bool whole() const { return count == 1; }
};
// Stage `index` of `count`: the layers split into contiguous, balanced ranges (the first
// n_layers % count stages get one more). Throws when there are fewer layers than stages.
ModelStage model_stage(const ModelConfig& config, int index, int count);

}  // namespace smezo
