// Binding between an architecture's canonical parameter list (Hugging Face names and shapes)
// and the fields of ModelParams. The list order defines each parameter's noise tensor id.
#pragma once

#include <string>
#include <vector>

#include "model/model.h"

namespace smezo {

struct ParamSlot {
  std::string name;
  std::vector<int64_t> shape;
  bool is_linear;
  Param* param;  // the ModelParams field it fills
  // Where it sits in the forward pass: -1 before the layers (embeddings), 0..n_layers-1 in
  // that layer, n_layers after them (final norm, LM head). Pipeline stages split on it.
  int64_t layer;
};

// Whether a pipeline stage holds the slot: its layers, the embeddings on the first stage, the
// final norm and the LM head on the last (a tied head: the token embedding there too).
bool stage_holds(const ModelStage& stage, const ModelConfig& config, const ParamSlot& slot);
// Whether the stage is the one that owns the slot's values (the first stage for the token
// embedding a tied head shares; the only holder otherwise): the one that writes it out.
bool stage_owns(const ModelStage& stage, const ParamSlot& slot);

// Resizes weights.layers to the config and lists every parameter slot in canonical order.
std::vector<ParamSlot> list_param_slots(const ModelConfig& config, ModelParams& weights);

}  // namespace smezo
