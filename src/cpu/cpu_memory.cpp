// CPU backend memory: fp32 host blocks owned by the backend; uploads (from fp32 buffers, or
// straight from a mapped model file in its stored dtype) and what is still free.
#include <cstdio>
#include <cstring>

#include "common/check.h"
#include "cpu/cpu_backend.h"
#include "backend/dtype_convert.h"

namespace smezo {

Tensor CpuBackend::alloc(int64_t rows, int64_t cols, DType dtype) {
  SMEZO_REQUIRE(dtype == DTYPE_F32, "the CPU backend stores fp32 only (asked for %s)",
                dtype_name(dtype));
  SMEZO_REQUIRE(rows >= 0 && cols >= 0, "bad tensor shape [%lld, %lld]", (long long)rows,
                (long long)cols);
  int64_t n = rows * cols;
  blocks_.emplace_back(new float[static_cast<size_t>(n > 0 ? n : 1)]());
  bytes_ += n * 4;
  Tensor t;
  t.data = blocks_.back().get();
  t.dtype = DTYPE_F32;
  t.rows = rows;
  t.cols = cols;
  return t;
}

void CpuBackend::upload(const Tensor& dst, const float* src) {
  std::memcpy(dst.data, src, static_cast<size_t>(dst.numel()) * 4);
}

int64_t CpuBackend::upload_stored(const Tensor& dst, const void* src, DType src_dtype) {
  SMEZO_REQUIRE(dst.dtype == DTYPE_F32, "the CPU backend stores fp32 only");
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

void CpuBackend::download(const Tensor& src, float* dst) {
  std::memcpy(dst, src.data, static_cast<size_t>(src.numel()) * 4);
}

}  // namespace smezo
