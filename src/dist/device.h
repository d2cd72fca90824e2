// Which GPU a rank uses: its node-local rank modulo the node's GPU count.
#pragma once

#include "dist/world.h"
#include "smezo/device.h"

namespace smezo {

// --device cuda, several ranks: sets the CUDA device before the backend is created; else nothing.
void dist_select_device(const World& world, Device device);

}  // namespace smezo
