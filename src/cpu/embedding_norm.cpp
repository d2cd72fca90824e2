// CPU reference: embeddings and RMSNorm/LayerNorm under the probe; rows over threads, inputs checked first.
#include <cmath>
#include <vector>

#include "common/check.h"
#include "cpu/cpu_backend.h"

namespace smezo {

void CpuBackend::embedding(const Tensor& out, const Param& table, const std::vector<int32_t>& tokens,
                           const Probe& probe) {
  const int64_t dim = table.w.cols;
  SMEZO_REQUIRE(out.cols == dim && out.rows == (int64_t)tokens.size(), "embedding: shape mismatch");
  for (int32_t tok : tokens)
    SMEZO_REQUIRE(tok >= 0 && tok < table.w.rows, "token id %d outside the vocabulary (%lld)", tok,
                  (long long)table.w.rows);
  // here, not in the threads' loop: a packed (frozen) table under a perturbing probe is an error
  SMEZO_REQUIRE(!(table.w.packed() && probe.scale != 0.0f && table.info.trainable), "%s is packed (--weights "
                "packed) and cannot be perturbed", table.info.name.c_str());
  const int64_t per_value = probe.scale != 0.0f ? 50 : 1;  // perturbed values: noise
#pragma omp parallel for schedule(static) if (cpu_parallel_worth(out.rows * dim * per_value))
  for (int64_t m = 0; m < out.rows; m++)
    cpu_read_param(table, probe, (int64_t)tokens[m] * dim, dim, out.f32() + m * dim);
}

void CpuBackend::add_position_embedding(const Tensor& out, const Param& table,
                                        const std::vector<int32_t>& positions, int64_t offset,
                                        const Probe& probe) {
  const int64_t dim = table.w.cols;
  for (int64_t m = 0; m < out.rows; m++) {
    const int64_t idx = positions[m] + offset;
    SMEZO_REQUIRE(idx >= 0 && idx < table.w.rows, "position %d past the learned position table",
                  positions[m]);
  }
  const int64_t per_value = probe.scale != 0.0f ? 50 : 2;
#pragma omp parallel if (cpu_parallel_worth(out.rows * dim * per_value))
  {
    std::vector<float> row(dim);
#pragma omp for schedule(static)
    for (int64_t m = 0; m < out.rows; m++) {
      cpu_read_param(table, probe, (positions[m] + offset) * dim, dim, row.data());
      for (int64_t d = 0; d < dim; d++) out.f32()[m * dim + d] += row[d];
    }
  }
}

void CpuBackend::norm(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
                      NormKind kind, float eps, const Probe& probe) {
  const int64_t dim = in.cols;
  std::vector<float> w(dim), b(dim, 0.0f);
  cpu_read_param(weight, probe, 0, dim, w.data());
  if (bias) cpu_read_param(*bias, probe, 0, dim, b.data());
#pragma omp parallel for schedule(static) if (cpu_parallel_worth(in.rows * dim * 4))
  for (int64_t m = 0; m < in.rows; m++) {
    const float* x = in.f32() + m * dim;
    float* y = out.f32() + m * dim;
    float mean = 0.0f;
    if (kind == NORM_LAYER) {
      for (int64_t d = 0; d < dim; d++) mean += x[d];
      mean /= dim;
    }
    float var = 0.0f;
    for (int64_t d = 0; d < dim; d++) var += (x[d] - mean) * (x[d] - mean);
    float inv = 1.0f / std::sqrt(var / dim + eps);
    for (int64_t d = 0; d < dim; d++) y[d] = (x[d] - mean) * inv * w[d] + b[d];
  }
}

}  // namespace smezo
