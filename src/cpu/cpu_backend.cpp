// The CPU backend's memory: fp32 host blocks owned by the backend, upload and download (never of a
// weight whose folded update is held: pending_updates.h).
#include <cstring>

#include "common/check.h"
#include "cpu/cpu_backend.h"
#include "cpu/noise_path.h"
#include "formats/packed_weights.h"

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

Tensor CpuBackend::alloc_packed(int64_t rows, int64_t cols, uint32_t packed_type, int64_t row_bytes,
                                const void* src) {
  SMEZO_REQUIRE(rows >= 0 && cols > 0 && row_bytes > 0, "bad packed tensor shape [%lld, %lld]", (long long)rows,
                (long long)cols);
  const int64_t bytes = rows * row_bytes;
  blocks_.emplace_back(new float[static_cast<size_t>((bytes + 3) / 4 + 1)]);
  std::memcpy(blocks_.back().get(), src, static_cast<size_t>(bytes));
  bytes_ += bytes;
  Tensor t;
  t.data = blocks_.back().get();
  t.rows = rows;
  t.cols = cols;
  t.packed_type = packed_type;
  t.packed_row_bytes = row_bytes;
  return t;
}

void CpuBackend::upload(const Tensor& dst, const float* src) {
  SMEZO_REQUIRE(!dst.packed(), "upload into a packed weight (frozen: --weights packed)");
  held_.require_none(dst, "upload");
  std::memcpy(dst.data, src, static_cast<size_t>(dst.numel()) * 4);
}

void CpuBackend::download(const Tensor& src, float* dst) {
  held_.require_none(src, "download");
  if (src.packed()) return dequantize_packed(src, 0, src.numel(), dst);
  std::memcpy(dst, src.data, static_cast<size_t>(src.numel()) * 4);
}

}  // namespace smezo
