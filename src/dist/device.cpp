// GPU choice per rank (see device.h).
#include "dist/device.h"

#include <cstdio>

#ifdef SMEZO_WITH_CUDA
#include <cuda_runtime.h>
#endif

#include "common/check.h"

namespace smezo {

void dist_select_device(const World& world, Device device) {
  if (device != DEVICE_CUDA || world.size() == 1) return;
#ifdef SMEZO_WITH_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return;  // the CUDA backend reports the missing device with its own hint
  }
  const int dev = world.local_rank() % count;
  const cudaError_t err = cudaSetDevice(dev);
  SMEZO_REQUIRE(err == cudaSuccess, "%scannot use GPU %d (local rank %d of %d, %d GPUs): %s",
                world.rank_prefix().c_str(), dev, world.local_rank(), world.local_size(), count,
                cudaGetErrorString(err));
  if (world.local_rank() == 0 && world.local_size() > count)
    std::fprintf(stderr, "smezo: %d ranks on this node share %d GPU%s (local rank %% %d)\n", world.local_size(),
                 count, count == 1 ? "" : "s", count);
#endif
}

}  // namespace smezo
