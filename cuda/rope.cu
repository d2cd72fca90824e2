// Rotary position embedding on the GPU: CudaBackend::rope, rotate-half and interleaved pairs, fp32 in
// place, one thread per (row, head, pair). The per-pair inverse frequencies are the model's table
// (model/rope_freq.h), the CPU's too, so pos*freq is bit-identical; sincosf is the precise one
// (<= 2 ulp), and the rotation uses unfused products as the CPU does.
#include <cmath>
#include <cstring>
#include <vector>

#include "common/check.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/device_utils.cuh"

namespace smezo {

namespace {  // internal linkage: kernel names cannot clash across files

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

// --- kernel

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

}  // namespace

// --- launcher

void CudaBackend::rope(const Tensor& x, const std::vector<int32_t>& positions, int64_t n_heads,
                       const std::vector<float>& inv_freq, RopeStyle style) {
  require_f32(x, "rope", "x");
  const int64_t half = static_cast<int64_t>(inv_freq.size()), head_dim = 2 * half;
  SMEZO_REQUIRE(half > 0 && x.cols == n_heads * head_dim,
                "rope: bad shape (x has %lld columns, %lld heads of %lld)", (long long)x.cols,
                (long long)n_heads, (long long)head_dim);
  SMEZO_REQUIRE(static_cast<int64_t>(positions.size()) >= x.rows, "rope: %zu positions for %lld rows",
                positions.size(), (long long)x.rows);
  if (x.rows == 0 || n_heads == 0) return;
  // One transfer: positions (rows int32) then the frequencies (half floats).
  std::vector<int32_t> host(static_cast<size_t>(x.rows + half));
  std::memcpy(host.data(), positions.data(), static_cast<size_t>(x.rows) * sizeof(int32_t));
  std::memcpy(&host[static_cast<size_t>(x.rows)], inv_freq.data(), static_cast<size_t>(half) * sizeof(float));
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

}  // namespace smezo
