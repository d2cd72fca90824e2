// The CPU backend's memory: fp32 host blocks owned by the backend, upload and download (never of a
// weight whose folded update is held: pending_updates.h).
#include <cstring>

#include "common/check.h"
#include "cpu/cpu_backend.h"
#include "cpu/noise_path.h"

namespace smezo {

// The noise path is chosen here, outside any OpenMP region, so a bad SMEZO_NOISE_PATH fails early.
CpuBackend::CpuBackend() { noise_path_active(); }

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
  held_.require_none(dst, "upload");
  std::memcpy(dst.data, src, static_cast<size_t>(dst.numel()) * 4);
}

void CpuBackend::download(const Tensor& src, float* dst) {
  held_.require_none(src, "download");
  std::memcpy(dst, src.data, static_cast<size_t>(src.numel()) * 4);
}

}  // namespace smezo
