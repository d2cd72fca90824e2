// CPU reference: SwiGLU, ReLU, residual add, row gather and row copy.
#include <cmath>
#include <cstring>

#include "common/check.h"
#include "cpu/cpu_backend.h"

namespace smezo {

void CpuBackend::swiglu(const Tensor& out, const Tensor& gate, const Tensor& up) {
  const int64_t n = gate.numel();
  for (int64_t i = 0; i < n; i++) {
    float g = gate.f32()[i];
    g *= 1.0f / (1.0f + std::exp(-g));
    out.f32()[i] = g * up.f32()[i];
  }
}

void CpuBackend::relu(const Tensor& x) {
  for (int64_t i = 0; i < x.numel(); i++) x.f32()[i] = x.f32()[i] > 0.0f ? x.f32()[i] : 0.0f;
}

void CpuBackend::add(const Tensor& x, const Tensor& y) {
  SMEZO_REQUIRE(x.numel() == y.numel(), "add: shape mismatch");
  for (int64_t i = 0; i < x.numel(); i++) x.f32()[i] += y.f32()[i];
}

void CpuBackend::gather_rows(const Tensor& out, const Tensor& in, const std::vector<int64_t>& rows) {
  SMEZO_REQUIRE(out.cols == in.cols && out.rows == (int64_t)rows.size(), "gather_rows: shape mismatch");
  for (size_t r = 0; r < rows.size(); r++) {
    SMEZO_REQUIRE(rows[r] >= 0 && rows[r] < in.rows, "gather_rows: row %lld out of range",
                  (long long)rows[r]);
    std::memcpy(out.f32() + r * out.cols, in.f32() + rows[r] * in.cols, in.cols * 4);
  }
}

void CpuBackend::copy_rows(const Tensor& dst, int64_t dst_row, const Tensor& src) {
  SMEZO_REQUIRE(dst.cols == src.cols && dst_row + src.rows <= dst.rows, "copy_rows: out of range");
  std::memcpy(dst.f32() + dst_row * dst.cols, src.f32(), src.numel() * 4);
}

}  // namespace smezo
