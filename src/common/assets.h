// Where the public assets (tokenizers, stories260K, task data) live: $SMEZO_ASSETS if set,
// else ../shared/assets relative to the working directory (the layout beside every checkout).
#pragma once

#include <string>

namespace smezo {

std::string assets_dir();
// assets_dir() + "/" + relative, e.g. asset_path("models/stories260K.bin").
std::string asset_path(const std::string& relative);

}  // namespace smezo
