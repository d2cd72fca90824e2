// Opens an HF directory (or a .safetensors in one), a LLaMA GGUF or a llama2.c .bin, checked.
#pragma once

#include <string>

#include "model/weight_source.h"

namespace smezo {

WeightSource load_weights(const std::string& path);

}  // namespace smezo
