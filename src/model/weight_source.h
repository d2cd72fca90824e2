// What a checkpoint loader hands the model: the config and host tensors under HF names and shapes.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "formats/host_tensor_view.h"
#include "smezo/model_config.h"

namespace smezo {

struct WeightSource {
  ModelConfig config;
  std::string path;                                 // the model path the user gave
  std::map<std::string, HostTensorView> tensors;    // by Hugging Face name
  std::vector<std::shared_ptr<void>> keep_alive;    // mappings / buffers backing the views
  // --weights packed: Model keeps every 2-D tensor with a packed_type in its blocks (formats/packed_weights.h).
  bool keep_packed = false;

  const HostTensorView* find(const std::string& name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  }
};

}  // namespace smezo
