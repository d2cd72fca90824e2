// Opens a model from a Hugging Face directory (or a .safetensors in one), a LLaMA GGUF or a llama2.c
// .bin; what it returns has passed check_weight_source, so every command refuses the same files.
#pragma once

#include <string>

#include "model/weight_source.h"

namespace smezo {

WeightSource load_weights(const std::string& path);

}  // namespace smezo
