// Which GPU a rank uses: its node-local rank modulo the node's GPU count (several ranks share a
// GPU when there are more ranks than GPUs on a node: that works, it just does not speed up).
#pragma once

#include <string>

#include "dist/world.h"

namespace smezo {

// For --device cuda in a multi-rank run: makes local_rank % device_count the current CUDA
// device of this process, before the backend is created. Does nothing for other devices, on
// one process, or in builds without CUDA (the backend then says what is missing).
void dist_select_device(const World& world, const std::string& device);

}  // namespace smezo
