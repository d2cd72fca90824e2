// CPU reference: RoPE, rotate-half or interleaved pairs, in place, at the model's per-pair inverse
// frequencies (model/rope_freq.h); cos/sin once per row, rows over threads.
#include <cmath>
#include <vector>

#include "common/check.h"
#include "cpu/cpu_backend.h"

namespace smezo {

void CpuBackend::rope(const Tensor& x, const std::vector<int32_t>& positions, int64_t n_heads,
                      const std::vector<float>& freq, RopeStyle style) {
  const int64_t half = static_cast<int64_t>(freq.size()), head_dim = 2 * half;
  SMEZO_REQUIRE(half > 0 && x.cols == n_heads * head_dim, "rope: bad shape (x has %lld columns, %lld heads of %lld)",
                (long long)x.cols, (long long)n_heads, (long long)head_dim);
  SMEZO_REQUIRE(static_cast<int64_t>(positions.size()) >= x.rows, "rope: %zu positions for %lld rows",
                positions.size(), (long long)x.rows);
#pragma omp parallel if (cpu_parallel_worth(x.rows * (half * 60 + n_heads * head_dim * 2)))
  {
    std::vector<float> cos_t(half), sin_t(half);  // this row's rotation, shared by its heads
#pragma omp for schedule(static)
    for (int64_t m = 0; m < x.rows; m++) {
      const float pos = static_cast<float>(positions[m]);
      for (int64_t j = 0; j < half; j++) {
        const float angle = pos * freq[j];
        cos_t[j] = std::cos(angle);
        sin_t[j] = std::sin(angle);
      }
      for (int64_t h = 0; h < n_heads; h++) {
        float* v = x.f32() + m * x.cols + h * head_dim;
        for (int64_t j = 0; j < half; j++) {
          const int64_t a = style == ROPE_INTERLEAVED ? 2 * j : j;
          const int64_t b = style == ROPE_INTERLEAVED ? 2 * j + 1 : j + half;
          const float v0 = v[a], v1 = v[b];
          v[a] = v0 * cos_t[j] - v1 * sin_t[j];
          v[b] = v0 * sin_t[j] + v1 * cos_t[j];
        }
      }
    }
  }
}

}  // namespace smezo
