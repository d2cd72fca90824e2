// The region a CUDA profiler attached with "profile from start off" measures: `ncu
// --profile-from-start off`, `nsys profile --capture-range=cudaProfilerApi`. `smezo bench --shape
// ... --profile-rep` brackets one rep of each phase; `--kernel excess --dram-range` one layer. In a
// build without CUDA both refuse (there is no CUDA profiler to serve).
#pragma once

#include "common/check.h"

#ifdef SMEZO_WITH_CUDA
#include <cuda_profiler_api.h>

#include "cuda/cuda_check.h"
#endif

namespace smezo {

inline void profiler_region_start() {
#ifdef SMEZO_WITH_CUDA
  CUDA_CHECK(cudaProfilerStart());
#else
  throw_error("a CUDA profiler region needs a CUDA build (this smezo was built without nvcc)");
#endif
}

inline void profiler_region_stop() {
#ifdef SMEZO_WITH_CUDA
  CUDA_CHECK(cudaProfilerStop());
#else
  throw_error("a CUDA profiler region needs a CUDA build (this smezo was built without nvcc)");
#endif
}

}  // namespace smezo
