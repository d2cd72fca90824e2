// Which GPU a rank uses: its node-local rank modulo the node's GPU count (more ranks than GPUs
// share them: that works, without speed-up).
#pragma once

#include <string>

#include "dist/world.h"

namespace smezo {

// --device cuda, several ranks: sets the CUDA device, before the backend is created. Otherwise, or
// in builds without CUDA, does nothing (the backend then says what is missing).
void dist_select_device(const World& world, const std::string& device);

}  // namespace smezo
