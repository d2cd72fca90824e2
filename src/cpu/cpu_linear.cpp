// The CPU linear y = x · W'ᵀ (+ b), W' = W + scale·m(W)⊙z read through the probe.
//
// - cpu_linear_reference: plain loops, one output at a time, k in order, each weight row
//   formed once (noise regenerated once per element per call). The readable definition that
//   the fast path is tested against (tests/test_cpu_linear.cpp).
// - CpuBackend::linear: OpenBLAS sgemm. The weight is cut into blocks of kBlockRows rows
//   (fixed by N alone) and the token rows into the chunks of a row-independent scheme
//   (cpu_gemm.h); each (block, chunk) product is one single-threaded sgemm and the products
//   are spread over the OpenMP threads. Unperturbed weights are read in place. Perturbed
//   weights are formed kGroupRows rows at a time into a bounded buffer, the rows split
//   between the threads, noise generated once per element per call; then that group's
//   products run. A shape for which OpenBLAS keeps no scheme row-independent runs the
//   reference loops instead; so does every shape with SMEZO_CPU_LINEAR=reference in the
//   environment (for measuring the speed-up; RESULTS.md).
// Results are bit-identical for any thread count and for any set of other rows in the call
// (cpu_gemm.cpp); they differ from the reference by the rounding of another summation order.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <memory>
#include <vector>

#include "common/check.h"
#include "cpu/cpu_backend.h"
#include "cpu/cpu_gemm.h"

namespace smezo {

namespace {

constexpr int64_t kBlockRows = 192;  // weight rows per sgemm call (a multiple of 12: whole kernel panels)
constexpr int64_t kGroupRows = 4 * kBlockRows;  // perturbed weight rows formed at a time

void check_linear_shapes(const Tensor& out, const Tensor& in, const Param& weight) {
  const int64_t M = in.rows, K = in.cols, N = weight.w.rows;
  SMEZO_REQUIRE(weight.w.cols == K, "linear %s: input has %lld features, weight expects %lld",
                weight.info.name.c_str(), (long long)K, (long long)weight.w.cols);
  SMEZO_REQUIRE(out.rows == M && out.cols == N, "linear %s: output shape mismatch",
                weight.info.name.c_str());
}

// The row scheme for a weight of N rows and K columns (its blocks: kBlockRows rows and the
// tail), or nullptr for the reference loops.
const GemmRowScheme* scheme_for_weight(int64_t N, int64_t K) {
  std::vector<int64_t> block_sizes = {std::min(kBlockRows, N)};
  if (N > kBlockRows && N % kBlockRows != 0) block_sizes.push_back(N % kBlockRows);
  return gemm_scheme_for(block_sizes, K);
}

}  // namespace

const char* cpu_linear_path(int64_t N, int64_t K) {
  const GemmRowScheme* scheme = scheme_for_weight(N, K);
  return scheme ? scheme->name : "reference";
}

void cpu_linear_reference(const Tensor& out, const Tensor& in, const Param& weight,
                          const Param* bias, const Probe& probe) {
  check_linear_shapes(out, in, weight);
  const int64_t M = in.rows, K = in.cols, N = weight.w.rows;
  std::vector<float> b(N, 0.0f);
  if (bias) cpu_read_param(*bias, probe, 0, N, b.data());
  const float* x = in.f32();
  float* y = out.f32();
  // Output features are independent: threads split them without changing any arithmetic.
#pragma omp parallel if (cpu_parallel_worth(M * N * K * 2))
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

void CpuBackend::linear(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
                        const Probe& probe) {
  check_linear_shapes(out, in, weight);
  const int64_t K = in.cols, N = weight.w.rows;
  if (in.rows == 0 || N == 0) return;
  // SMEZO_CPU_LINEAR=reference: the plain loops everywhere, to measure what OpenBLAS buys
  static const bool force_reference = [] {
    const char* v = std::getenv("SMEZO_CPU_LINEAR");
    return v && std::string(v) == "reference";
  }();
  const GemmRowScheme* scheme = K > 0 && !force_reference ? scheme_for_weight(N, K) : nullptr;
  if (!scheme) {
    cpu_linear_reference(out, in, weight, bias, probe);
    return;
  }
  std::vector<float> b;
  if (bias) {
    b.resize(N);
    cpu_read_param(*bias, probe, 0, N, b.data());
  }
  gemm_pack_rows(*scheme, in.f32(), in.rows, K, &linear_rows_);
  const int64_t chunks = static_cast<int64_t>(linear_rows_.chunks.size());
  const bool perturbed = probe.scale != 0.0f && weight.info.trainable;
  const int64_t group_rows = perturbed ? kGroupRows : N;
  if (perturbed) linear_weights_.resize(static_cast<size_t>(std::min(group_rows, N) * K));
  float* y = out.f32();
  // rough cycles: sgemm at ~16 multiply-adds a cycle, ~50 cycles per perturbed weight
  const int64_t cycles = in.rows * N * K / 16 + (perturbed ? 50 * N * K : 0);
#pragma omp parallel if (cpu_parallel_worth(cycles))
  {
    // sgemm's output before it is transposed into y (chunk 0 is the largest)
    std::unique_ptr<float[]> tile(new float[linear_rows_.chunks[0].call_rows * std::min(kBlockRows, N)]);
    for (int64_t g0 = 0; g0 < N; g0 += group_rows) {
      const int64_t rows = std::min(group_rows, N - g0);
      const float* w = weight.w.f32() + g0 * K;
      if (perturbed) {
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++)
          cpu_read_param(weight, probe, (g0 + r) * K, K, linear_weights_.data() + r * K);
        w = linear_weights_.data();
      }
      const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
      // items block-major, so a thread's run of items reuses one weight block
#pragma omp for schedule(static)
      for (int64_t item = 0; item < blocks * chunks; item++) {
        const int64_t n0 = item / chunks * kBlockRows, c = item % chunks;
        const int64_t nb = std::min(kBlockRows, rows - n0);
        gemm_rows(*scheme, linear_rows_, c, w + n0 * K, K, nb, tile.get(),
                  y + linear_rows_.chunks[c].first_row * N + g0 + n0, N,
                  bias ? b.data() + g0 + n0 : nullptr);
      }
    }
  }
}

}  // namespace smezo
