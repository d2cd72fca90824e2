// The CPU linear y = x · W'ᵀ (+ b), W' = W + scale·m(W)⊙z read through the probe.
// - cpu_linear_reference: plain loops, k in order, each weight row formed once (tests/test_linear.cpp).
// - CpuBackend::linear: OpenBLAS sgemm over weight blocks of kBlockRows rows (fixed by N alone) and
//   the row chunks of a row-independent scheme (cpu_gemm.h), one single-threaded sgemm per (block,
//   chunk), spread over the threads. Perturbed weights are formed kGroupRows rows at a time (a pair:
//   W+ and W- from one noise generation). No scheme, or SMEZO_CPU_LINEAR=reference: the reference loops.
// Bit-identical for any thread count and other rows; the reference differs by summation order only.
// The fold (pending_updates.h): a perturbed read through the scheme applies W's held updates to each
// row just before forming it (the update's own range worker, so the bits of update()); any other
// read applies them to the whole of W first.
// A packed weight (--weights packed, formats/packed_weights.h; frozen) is dequantised kGroupRows rows at a
// time into the same W' buffer and multiplied in the same blocks as an fp32 weight: its bits are those of
// the load-time dequantisation's (tests/test_packed_weights.cpp).
// Performance model (predicted, not measured): per group of 768 rows of K values the dequantisation reads
// bits/8 bytes a value (Q4_0 4.5 bits, Q4_1 5, Q8_0 8.5, Q4_K 4.5, Q6_K 6.5625) and writes 4 bytes a value
// into a 768 * K * 4 byte buffer that stays in L2 (K = 576: 1.7 MB) for the sgemm; it costs about 1-2 ALU
// ops a value (nibble, convert, multiply-add), against the sgemm's M multiply-adds a value: at the demo's
// M = 8 * 64 * 2 rows small beside the GEMM, and W' costs what today's perturbed path pays in noise (~50
// cycles a value) not at all.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <memory>
#include <vector>

#include "common/check.h"
#include "cpu/cpu_backend.h"
#include "cpu/cpu_gemm.h"
#include "cpu/noise_path.h"

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

// The row scheme for an (N, K) weight's blocks (kBlockRows and the tail), or nullptr.
const GemmRowScheme* scheme_for_weight(int64_t N, int64_t K) {
  std::vector<int64_t> block_sizes = {std::min(kBlockRows, N)};
  if (N > kBlockRows && N % kBlockRows != 0) block_sizes.push_back(N % kBlockRows);
  return gemm_scheme_for(block_sizes, K);
}

// SMEZO_CPU_LINEAR=reference: the plain loops everywhere, to measure what OpenBLAS buys.
bool reference_forced() {
  static const bool forced = [] {
    const char* v = std::getenv("SMEZO_CPU_LINEAR");
    return v && std::string(v) == "reference";
  }();
  return forced;
}

}  // namespace

const char* cpu_linear_path(int64_t N, int64_t K) {
  const GemmRowScheme* scheme = scheme_for_weight(N, K);
  return scheme ? scheme->name : "reference";
}

BackendMemoryPlan cpu_memory_plan() {
  // linear_rows_ (m rows plus guard rows) and linear_weights_ (a group per probe half)
  return {[](int64_t n, int64_t k, int64_t m, DType) {
            return ((m + 64) * k + 2 * std::min(kGroupRows, n) * k) * 4;
          },
          [](int64_t, DType) -> int64_t { return 0; },  // upload_stored.cpp converts in place
          0};
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

// Called by every thread of linear's team: the rows are shared out, and the loop ends on a barrier.
void CpuBackend::form_weight_rows(const Param& weight, const Probe& probe, int64_t g0, int64_t rows,
                                  const PendingUpdates::Entry& fold) {
  const int64_t K = weight.w.cols;
  if (weight.w.packed()) {  // whole rows: whole blocks (packed_row_bytes); --tune scales: probed master scales
    const bool pair = probe.pair && packed_scales_perturbed(weight, probe);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
      if (pair)
        cpu_read_param_pair(weight, probe, (g0 + r) * K, K, linear_weights_[0].data() + r * K,
                            linear_weights_[1].data() + r * K);
      else
        cpu_read_param(weight, probe, (g0 + r) * K, K, linear_weights_[0].data() + r * K);
    }
    return;
  }
  const NoiseRangeFns* fns = noise_path_fns(noise_path_active());
  // --profile: thread 0's wall time from here to the loop's closing barrier
  const bool timing = linear_noise_ms_ && omp_get_thread_num() == 0;
  const auto t0 = timing ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  // one noise generation per weight element for both halves of a pair (and one per held update)
#pragma omp for schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    for (const UpdateArgs& u : fold.updates)  // the fold: W's row updated in place, then read
      fns->update(weight.info, weight.w.f32(), u.coef, u.decay, u.seed, (g0 + r) * K, K);
    if (probe.pair)
      cpu_read_param_pair(weight, probe, (g0 + r) * K, K, linear_weights_[0].data() + r * K,
                          linear_weights_[1].data() + r * K);
    else
      cpu_read_param(weight, probe, (g0 + r) * K, K, linear_weights_[0].data() + r * K);
  }
  if (timing)
    *linear_noise_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void CpuBackend::linear(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
                        const Probe& probe) {
  check_linear_shapes(out, in, weight);
  SMEZO_REQUIRE(!probe.pair || in.rows % 2 == 0, "linear %s: a probe pair needs an even number of rows (%lld)",
                weight.info.name.c_str(), (long long)in.rows);
  const int64_t K = in.cols, N = weight.w.rows;
  if (in.rows == 0 || N == 0) return;
  // A pair is two halves: rows [0, Mh) at +scale, [Mh, 2 Mh) at -scale (Probe::pair).
  const int halves = probe.pair ? 2 : 1;
  const int64_t Mh = in.rows / halves;
  auto single = [&](int h) { return probe.pair ? half_probe(probe, h == 0 ? +1 : -1) : probe; };
  const GemmRowScheme* scheme = K > 0 && !reference_forced() ? scheme_for_weight(N, K) : nullptr;
  const bool packed = weight.w.packed();
  SMEZO_REQUIRE(!(packed && probe.scale != 0.0f && weight.info.trainable), "linear %s: a packed weight cannot be "
                "perturbed (--weights packed keeps frozen weights only)", weight.info.name.c_str());
  // a packed weight is perturbed only through its master scales (--tune scales)
  const bool perturbed = packed ? packed_scales_perturbed(weight, probe) : probe.scale != 0.0f && weight.info.trainable;
  const bool formed = perturbed || packed;  // W' rows formed into linear_weights_
  const PendingUpdates::Entry fold =
      held_.take_for_linear(*this, weight.w, perturbed && !packed && scheme ? SIZE_MAX : 0);
  if (!scheme) {
    for (int h = 0; h < halves; h++)
      cpu_linear_reference(tensor_rows(out, h * Mh, Mh), tensor_rows(in, h * Mh, Mh), weight, bias, single(h));
    return;
  }
  std::vector<float> b[2];
  for (int h = 0; bias && h < halves; h++) {
    b[h].resize(N);
    cpu_read_param(*bias, single(h), 0, N, b[h].data());
  }
  // Each half packed on its own: it computes exactly what a single-probe call on it computes.
  for (int h = 0; h < halves; h++) gemm_pack_rows(*scheme, in.f32() + h * Mh * K, Mh, K, &linear_rows_[h]);
  const int64_t group_rows = formed ? kGroupRows : N;
  for (int h = 0; formed && h < (perturbed ? halves : 1); h++)
    linear_weights_[h].resize(static_cast<size_t>(std::min(group_rows, N) * K));
  // rough cycles: sgemm at ~16 multiply-adds a cycle, ~50 cycles per perturbed weight
  const int64_t cycles = in.rows * N * K / 16 + (perturbed && !packed ? 50 * N * K : packed ? 2 * N * K : 0);
  size_t max_call_rows = 0;
  for (int h = 0; h < halves; h++)
    max_call_rows = std::max<size_t>(max_call_rows, linear_rows_[h].chunks[0].call_rows);
#pragma omp parallel if (cpu_parallel_worth(cycles))
  {
    // sgemm's output before it is transposed into y (chunk 0 is the largest)
    std::unique_ptr<float[]> tile(new float[max_call_rows * std::min(kBlockRows, N)]);
    for (int64_t g0 = 0; g0 < N; g0 += group_rows) {
      const int64_t rows = std::min(group_rows, N - g0);
      const float* w[2] = {weight.w.f32() + g0 * K, weight.w.f32() + g0 * K};
      if (formed) {
        form_weight_rows(weight, probe, g0, rows, fold);
        w[0] = linear_weights_[0].data();
        // packed and unperturbed: both halves read one dequantised group
        w[1] = linear_weights_[perturbed && probe.pair ? 1 : 0].data();
      }
      const int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
      for (int h = 0; h < halves; h++) {
        const GemmPanel& panel = linear_rows_[h];
        const int64_t chunks = static_cast<int64_t>(panel.chunks.size());
        float* y = out.f32() + h * Mh * N;
        // items block-major, so a thread's run of items reuses one weight block
#pragma omp for schedule(static)
        for (int64_t item = 0; item < blocks * chunks; item++) {
          const int64_t n0 = item / chunks * kBlockRows, c = item % chunks;
          const int64_t nb = std::min(kBlockRows, rows - n0);
          gemm_rows(*scheme, panel, c, w[h] + n0 * K, K, nb, tile.get(),
                    y + panel.chunks[c].first_row * N + g0 + n0, N,
                    bias ? b[h].data() + g0 + n0 : nullptr);
        }
      }
    }
  }
}

}  // namespace smezo
