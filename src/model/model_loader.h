// Opens a model from any supported path: a Hugging Face directory (config.json +
// safetensors), a .safetensors file inside such a directory, a LLaMA GGUF file (.gguf) or a
// llama2.c .bin checkpoint.
// Every source it returns has passed check_weight_source (model/model_check.h): the config
// is in range and every tensor the architecture needs is there with the right shape, so
// every command (info included) refuses the same files, before anything is allocated.
#pragma once

#include <string>

#include "model/weight_source.h"

namespace smezo {

WeightSource load_weights(const std::string& path);

}  // namespace smezo
