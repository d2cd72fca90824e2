// CPU reference: SwiGLU, ReLU, residual add, scaled add (LoRA), row gather and row copy, over threads.
#include <cmath>
#include <cstring>

#include "common/check.h"
#include "cpu/cpu_backend.h"

namespace smezo {

void CpuBackend::swiglu(const Tensor& out, const Tensor& gate, const Tensor& up) {
  const int64_t n = gate.numel();
  const float* g_in = gate.f32();
  const float* u_in = up.f32();
  float* o = out.f32();
#pragma omp parallel for schedule(static) if (cpu_parallel_worth(n * 20))
  for (int64_t i = 0; i < n; i++) {
    float g = g_in[i];
    g *= 1.0f / (1.0f + std::exp(-g));
    o[i] = g * u_in[i];
  }
}

void CpuBackend::relu(const Tensor& x) {
  float* v = x.f32();
#pragma omp parallel for schedule(static) if (cpu_parallel_worth(x.numel()))
  for (int64_t i = 0; i < x.numel(); i++) v[i] = v[i] > 0.0f ? v[i] : 0.0f;
}

void CpuBackend::add(const Tensor& x, const Tensor& y) {
  SMEZO_REQUIRE(x.numel() == y.numel(), "add: shape mismatch");
  float* a = x.f32();
  const float* b = y.f32();
#pragma omp parallel for schedule(static) if (cpu_parallel_worth(x.numel()))
  for (int64_t i = 0; i < x.numel(); i++) a[i] += b[i];
}

void CpuBackend::add_scaled(const Tensor& x, const Tensor& y, float alpha) {
  SMEZO_REQUIRE(x.numel() == y.numel(), "add_scaled: shape mismatch ([%lld, %lld] += [%lld, %lld])",
                (long long)x.rows, (long long)x.cols, (long long)y.rows, (long long)y.cols);
  float* a = x.f32();
  const float* b = y.f32();
#pragma omp parallel for schedule(static) if (cpu_parallel_worth(x.numel()))
  for (int64_t i = 0; i < x.numel(); i++) a[i] = std::fma(alpha, b[i], a[i]);
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
