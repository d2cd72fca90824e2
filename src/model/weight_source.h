// What a checkpoint loader hands to the model: the architecture and a set of named host
// tensors (memory-mapped where the format allows), with Hugging Face names and shapes.
// Loaders: model/hf_dir.h (config.json + safetensors), model/llama2c.h (llama2.c .bin),
// model/gguf_llama.h (GGUF, block-quantised tensors decoded one at a time by read_f32).
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

  const HostTensorView* find(const std::string& name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  }
};

}  // namespace smezo
