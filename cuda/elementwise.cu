// CUDA ops on fp32 activations: rotary embedding (rotate-half and interleaved pairs), SwiGLU,
// ReLU, residual add, row gather and row copy. Grid-stride loops with int64_t indices.
//
// RoPE matches the CPU reference (src/cpu/cpu_attention.cpp) closely: the per-pair
// frequencies 1/theta^(2j/head_dim) are computed on the host with the same float expression
// as the CPU (std::pow), so the angle pos*freq is bit-identical; cos/sin are the precise
// device sincosf (<= 2 ulp), and the rotation uses unfused products as the CPU does.
// SwiGLU uses the precise expf. Reference: src/cpu/cpu_elementwise.cpp.
#include <cmath>
#include <cstring>
#include <vector>

#include "common/check.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/device_utils.cuh"

namespace smezo {

namespace {

struct RopeParams {
  float* x = nullptr;                 // (rows, n_heads*head_dim), rotated in place
  const int32_t* positions = nullptr; // (rows)
  const float* freqs = nullptr;       // (head_dim/2) 1/theta^(2j/head_dim)
  int64_t rows = 0;
  int64_t n_heads = 0;
  int64_t head_dim = 0;
  bool interleaved = false;           // pairs (2j, 2j+1), else (j, j + head_dim/2)
};

constexpr int kBlock = 256;

}  // namespace

// --- kernels

namespace {  // internal linkage: kernel names cannot clash across files

#define SMEZO_GRID_STRIDE(i, n)                                                             \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

__global__ void rope_kernel(RopeParams p) {
  const int64_t half = p.head_dim / 2;
  const int64_t pairs_per_row = p.n_heads * half;
  SMEZO_GRID_STRIDE(t, p.rows * pairs_per_row) {
    const int64_t m = t / pairs_per_row;
    const int64_t r = t - m * pairs_per_row;
    const int64_t h = r / half;
    const int64_t j = r - h * half;
    float* v = p.x + m * p.n_heads * p.head_dim + h * p.head_dim;
    const float angle = fp_mul(static_cast<float>(p.positions[m]), p.freqs[j]);
    float s, c;
    sincosf(angle, &s, &c);
    const int64_t a = p.interleaved ? 2 * j : j;
    const int64_t b = p.interleaved ? 2 * j + 1 : j + half;
    const float v0 = v[a], v1 = v[b];
    v[a] = fp_sub(fp_mul(v0, c), fp_mul(v1, s));
    v[b] = fp_add(fp_mul(v0, s), fp_mul(v1, c));
  }
}

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

__global__ void gather_rows_kernel(float* out, const float* in, const int64_t* rows,
                                   int64_t n_rows, int64_t cols) {
  SMEZO_GRID_STRIDE(i, n_rows * cols) {
    const int64_t r = i / cols;
    out[i] = in[rows[r] * cols + (i - r * cols)];
  }
}

#undef SMEZO_GRID_STRIDE

}  // namespace

// --- launcher

namespace {

void require_f32(const Tensor& t, const char* op, const char* what) {
  SMEZO_REQUIRE(t.dtype == DTYPE_F32, "%s: %s must be fp32 (got %s)", op, what, dtype_name(t.dtype));
}

}  // namespace

void CudaBackend::rope(const Tensor& x, const std::vector<int32_t>& positions, int64_t n_heads,
                       int64_t head_dim, float theta, RopeStyle style) {
  require_f32(x, "rope", "x");
  SMEZO_REQUIRE(head_dim > 0 && head_dim % 2 == 0 && x.cols == n_heads * head_dim,
                "rope: bad shape (x has %lld columns, %lld heads of %lld)", (long long)x.cols,
                (long long)n_heads, (long long)head_dim);
  SMEZO_REQUIRE(static_cast<int64_t>(positions.size()) >= x.rows, "rope: %zu positions for %lld rows",
                positions.size(), (long long)x.rows);
  const int64_t half = head_dim / 2;
  if (x.rows == 0 || n_heads == 0) return;
  // One transfer: positions (rows int32) then the frequencies (half floats), as in the CPU.
  std::vector<int32_t> host(static_cast<size_t>(x.rows + half));
  std::memcpy(host.data(), positions.data(), static_cast<size_t>(x.rows) * sizeof(int32_t));
  for (int64_t j = 0; j < half; ++j) {
    const float freq =
        1.0f / std::pow(theta, static_cast<float>(2 * j) / static_cast<float>(head_dim));
    std::memcpy(&host[static_cast<size_t>(x.rows + j)], &freq, sizeof freq);
  }
  const int32_t* dev = static_cast<const int32_t*>(
      device_copy(SLOT_POSITIONS, host.data(), host.size() * sizeof(int32_t)));
  RopeParams p;
  p.x = x.f32();
  p.positions = dev;
  p.freqs = reinterpret_cast<const float*>(dev + x.rows);
  p.rows = x.rows;
  p.n_heads = n_heads;
  p.head_dim = head_dim;
  p.interleaved = style == ROPE_INTERLEAVED;
  rope_kernel<<<grid_blocks(x.rows * n_heads * half, kBlock), kBlock, 0, stream_>>>(p);
  CUDA_CHECK_LAUNCH();
}

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
