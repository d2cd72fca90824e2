// Weight upload on the CPU (converted and checked straight from the file) and the free-memory query.
#include <cstdio>

#include "common/check.h"
#include "cpu/cpu_backend.h"
#include "backend/dtype_convert.h"

namespace smezo {

int64_t CpuBackend::upload_stored(const Tensor& dst, const void* src, DType src_dtype) {
  SMEZO_REQUIRE(dst.dtype == DTYPE_F32, "the CPU backend stores fp32 only");
  held_.require_none(dst, "upload");
  return convert_to_f32_checked(src, src_dtype, dst.numel(), dst.f32());
}

int64_t CpuBackend::free_memory_bytes() const {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return -1;
  char line[256];
  long long kb = -1;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
  std::fclose(f);
  return kb < 0 ? -1 : static_cast<int64_t>(kb) * 1024;
}

}  // namespace smezo
