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
};

// Resizes weights.layers to the config and lists every parameter slot in canonical order.
std::vector<ParamSlot> list_param_slots(const ModelConfig& config, ModelParams& weights);

}  // namespace smezo
