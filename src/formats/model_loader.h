// Opens a model from any supported path: a Hugging Face directory (config.json +
// safetensors), a .safetensors file inside such a directory, a LLaMA GGUF file (.gguf) or a
// llama2.c .bin checkpoint.
#pragma once

#include <string>

#include "model/weight_source.h"

namespace smezo {

WeightSource load_weights(const std::string& path);

}  // namespace smezo
