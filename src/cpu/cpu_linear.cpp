// CPU reference: the perturbed linear y = x · (W + scale·m(W)⊙z)ᵀ (+ b). Each weight row is
// formed once (noise regenerated once per element per call) and reused for every token.
#include <vector>

#include "common/check.h"
#include "cpu/cpu_backend.h"

namespace smezo {

void CpuBackend::linear(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
                        const Probe& probe) {
  const int64_t M = in.rows, K = in.cols, N = weight.w.rows;
  SMEZO_REQUIRE(weight.w.cols == K, "linear %s: input has %lld features, weight expects %lld",
                weight.info.name.c_str(), (long long)K, (long long)weight.w.cols);
  SMEZO_REQUIRE(out.rows == M && out.cols == N, "linear %s: output shape mismatch",
                weight.info.name.c_str());
  std::vector<float> b(N, 0.0f);
  if (bias) cpu_read_param(*bias, probe, 0, N, b.data());
  const float* x = in.f32();
  float* y = out.f32();
  // Output features are independent: threads split them without changing any arithmetic.
#pragma omp parallel
  {
    std::vector<float> row(K);
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; n++) {
      cpu_read_param(weight, probe, n * K, K, row.data());
      for (int64_t m = 0; m < M; m++) {
        const float* xm = x + m * K;
        float acc = 0.0f;
        for (int64_t k = 0; k < K; k++) acc += xm[k] * row[k];
        y[m * N + n] = acc + b[n];
      }
    }
  }
}

}  // namespace smezo
