// Which GPU a rank uses: its node-local rank modulo the node's GPU count.
#pragma once

#include <string>

#include "dist/world.h"

namespace smezo {

// --device cuda, several ranks: sets the CUDA device before the backend is created; else nothing.
void dist_select_device(const World& world, const std::string& device);

}  // namespace smezo
