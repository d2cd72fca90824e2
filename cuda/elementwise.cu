// CUDA ops on fp32 activations: SwiGLU (precise expf), ReLU, add, scaled add, row gather and copy.
#include <cmath>
#include <cstring>
#include <vector>

#include "common/check.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/device_utils.cuh"

namespace smezo {

namespace {  // internal linkage: kernel names cannot clash across files

constexpr int kBlock = 256;

// --- kernels

__global__ void swiglu_kernel(float* out, const float* gate, const float* up, int64_t n) {
  SMEZO_GRID_STRIDE(i, n) {
    const float g = gate[i];
    const float silu = fp_mul(g, fp_div(1.0f, fp_add(1.0f, expf(-g))));
    out[i] = fp_mul(silu, up[i]);
  }
}

__global__ void relu_kernel(float* x, int64_t n) {
  SMEZO_GRID_STRIDE(i, n) { x[i] = x[i] > 0.0f ? x[i] : 0.0f; }
}

__global__ void add_kernel(float* x, const float* y, int64_t n) {
  SMEZO_GRID_STRIDE(i, n) { x[i] = fp_add(x[i], y[i]); }
}

__global__ void add_scaled_kernel(float* x, const float* y, float alpha, int64_t n) {
  SMEZO_GRID_STRIDE(i, n) { x[i] = fmaf(alpha, y[i], x[i]); }
}

__global__ void gather_rows_kernel(float* out, const float* in, const int64_t* rows,
                                   int64_t n_rows, int64_t cols) {
  SMEZO_GRID_STRIDE(i, n_rows * cols) {
    const int64_t r = i / cols;
    out[i] = in[rows[r] * cols + (i - r * cols)];
  }
}

}  // namespace

// --- launchers

void CudaBackend::swiglu(const Tensor& out, const Tensor& gate, const Tensor& up) {
  require_f32(out, "swiglu", "out");
  require_f32(gate, "swiglu", "gate");
  require_f32(up, "swiglu", "up");
  const int64_t n = gate.numel();
  SMEZO_REQUIRE(up.numel() == n && out.numel() == n,
                "swiglu: shape mismatch (gate %lld, up %lld, out %lld elements)", (long long)n,
                (long long)up.numel(), (long long)out.numel());
  if (n == 0) return;
  swiglu_kernel<<<grid_blocks(n, kBlock), kBlock, 0, stream_>>>(out.f32(), gate.f32(), up.f32(), n);
  CUDA_CHECK_LAUNCH();
}

void CudaBackend::relu(const Tensor& x) {
  require_f32(x, "relu", "x");
  const int64_t n = x.numel();
  if (n == 0) return;
  relu_kernel<<<grid_blocks(n, kBlock), kBlock, 0, stream_>>>(x.f32(), n);
  CUDA_CHECK_LAUNCH();
}

void CudaBackend::add(const Tensor& x, const Tensor& y) {
  require_f32(x, "add", "x");
  require_f32(y, "add", "y");
  SMEZO_REQUIRE(x.numel() == y.numel(), "add: shape mismatch ([%lld, %lld] += [%lld, %lld])",
                (long long)x.rows, (long long)x.cols, (long long)y.rows, (long long)y.cols);
  const int64_t n = x.numel();
  if (n == 0) return;
  add_kernel<<<grid_blocks(n, kBlock), kBlock, 0, stream_>>>(x.f32(), y.f32(), n);
  CUDA_CHECK_LAUNCH();
}

void CudaBackend::add_scaled(const Tensor& x, const Tensor& y, float alpha) {
  require_f32(x, "add_scaled", "x");
  require_f32(y, "add_scaled", "y");
  SMEZO_REQUIRE(x.numel() == y.numel(), "add_scaled: shape mismatch ([%lld, %lld] += [%lld, %lld])",
                (long long)x.rows, (long long)x.cols, (long long)y.rows, (long long)y.cols);
  const int64_t n = x.numel();
  if (n == 0) return;
  add_scaled_kernel<<<grid_blocks(n, kBlock), kBlock, 0, stream_>>>(x.f32(), y.f32(), alpha, n);
  CUDA_CHECK_LAUNCH();
}

void CudaBackend::gather_rows(const Tensor& out, const Tensor& in, const std::vector<int64_t>& rows) {
  require_f32(out, "gather_rows", "out");
  require_f32(in, "gather_rows", "in");
  SMEZO_REQUIRE(out.cols == in.cols && out.rows == static_cast<int64_t>(rows.size()),
                "gather_rows: shape mismatch (out [%lld, %lld], in [%lld, %lld], %zu rows)",
                (long long)out.rows, (long long)out.cols, (long long)in.rows, (long long)in.cols,
                rows.size());
  for (int64_t r : rows)
    SMEZO_REQUIRE(r >= 0 && r < in.rows, "gather_rows: row %lld out of range", (long long)r);
  if (out.numel() == 0) return;
  const int64_t* dev =
      static_cast<const int64_t*>(device_copy(SLOT_ROWS, rows.data(), rows.size() * sizeof(int64_t)));
  gather_rows_kernel<<<grid_blocks(out.numel(), kBlock), kBlock, 0, stream_>>>(
      out.f32(), in.f32(), dev, out.rows, out.cols);
  CUDA_CHECK_LAUNCH();
}

void CudaBackend::copy_rows(const Tensor& dst, int64_t dst_row, const Tensor& src) {
  SMEZO_REQUIRE(dst.dtype == src.dtype, "copy_rows: dtype mismatch (%s <- %s)", dtype_name(dst.dtype),
                dtype_name(src.dtype));
  SMEZO_REQUIRE(dst.cols == src.cols && dst_row >= 0 && dst_row + src.rows <= dst.rows,
                "copy_rows: out of range (rows %lld..%lld of [%lld, %lld] <- [%lld, %lld])",
                (long long)dst_row, (long long)(dst_row + src.rows), (long long)dst.rows,
                (long long)dst.cols, (long long)src.rows, (long long)src.cols);
  if (src.numel() == 0) return;
  const int64_t esize = dtype_size(dst.dtype);
  char* to = static_cast<char*>(dst.data) + dst_row * dst.cols * esize;
  CUDA_CHECK(cudaMemcpyAsync(to, src.data, static_cast<size_t>(src.numel() * esize),
                             cudaMemcpyDeviceToDevice, stream_));
}

}  // namespace smezo
