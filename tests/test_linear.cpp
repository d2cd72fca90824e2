// The CPU linear through OpenBLAS (src/cpu/linear.cpp, cpu_gemm.cpp) against its plain-loop
// reference, and the determinism it promises: a row's output does not depend on the other
// rows in the call, and nothing depends on the OpenMP thread count.
//
// Tolerance (BLAS vs reference): both sum the same K products in fp32 in different orders.
// Any order's result is within K·u·Σ|x_k w'_k| of the exact sum (u = 2^-24, to first order),
// so two orders differ by at most 2·K·u·Σ|x_k w'_k|, plus u·|y| for the bias add. The check
// uses that bound per output; a wrong row, column, weight block or noise value misses it by
// orders of magnitude.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_gemm.h"
#include "test_util.h"

using namespace smezo;
using smezo_test::kPoison;
using smezo_test::PoisonedBuffer;
using smezo_test::random_floats;

namespace {

struct Weight {
  std::vector<float> data;
  Param p;
  Weight(int64_t rows, int64_t cols, uint32_t seed, uint32_t tensor_id) : data(random_floats(rows * cols, seed)) {
    p.w.data = data.data();
    p.w.rows = rows;
    p.w.cols = cols;
    p.info.name = "test.weight";
    p.info.tensor_id = tensor_id;
  }
};

struct ProbeCase {
  const char* name;
  MaskKind mask;
  float scale;
  bool trainable;
};

const ProbeCase kProbes[] = {
    {"unperturbed", MASK_DENSE, 0.0f, true},  {"dense +", MASK_DENSE, 1e-2f, true},
    {"dense -", MASK_DENSE, -1e-2f, true},    {"S-MeZO +", MASK_MAGNITUDE, 3e-2f, true},
    {"S-MeZO -", MASK_MAGNITUDE, -3e-2f, true}, {"R-MeZO +", MASK_RANDOM, 2e-2f, true},
    {"frozen", MASK_DENSE, 1e-2f, false},
};

void apply_probe_case(const ProbeCase& pc, Param* p) {
  p->info.mask = pc.mask;
  p->info.trainable = pc.trainable;
  p->info.threshold = 0.4f;  // weights are uniform in [-1, 1): ~40% kept
  p->info.keep_prob = 0.3f;
  p->info.mask_seed = 99;
}

// The first-order bound on |blas - reference| for every output (see the top comment).
std::vector<double> tolerance(const std::vector<float>& x, const Param& w, const Param* bias,
                              const Probe& probe, int64_t M) {
  const int64_t N = w.w.rows, K = w.w.cols;
  const double u = std::ldexp(1.0, -24);
  std::vector<float> row(K), b(N, 0.0f);
  if (bias) cpu_read_param(*bias, probe, 0, N, b.data());
  std::vector<double> tol(M * N);
  for (int64_t n = 0; n < N; n++) {
    cpu_read_param(w, probe, n * K, K, row.data());
    for (int64_t m = 0; m < M; m++) {
      double abs_sum = 0.0, sum = 0.0;
      for (int64_t k = 0; k < K; k++) {
        abs_sum += std::fabs((double)x[m * K + k] * row[k]);
        sum += (double)x[m * K + k] * row[k];
      }
      tol[m * N + n] = 2.0 * K * u * abs_sum + 2.0 * u * std::fabs(sum + b[n]) + 1e-30;
    }
  }
  return tol;
}

struct Shape {
  int64_t M, N, K;
};

}  // namespace

TEST(CpuLinear, UsesOpenBlasHere) {
  // The shapes of the models we run must take the BLAS path on the test machine; elsewhere a
  // shape may fall back to the reference loops (cpu_gemm.cpp), and then says so.
  for (Shape s : {Shape{0, 576, 576}, Shape{0, 1536, 576}, Shape{0, 576, 1536}, Shape{0, 192, 576},
                  Shape{0, 64, 64}, Shape{0, 512, 64}, Shape{0, 172, 64}}) {
    std::string path = cpu_linear_path(s.N, s.K);
    if (path == "reference")
      GTEST_SKIP() << "OpenBLAS (" << gemm_blas_core() << ") keeps no sgemm row scheme row-independent for ["
                   << s.N << ", " << s.K << "]: the CPU linear runs its reference loops on this machine";
    EXPECT_EQ(path, "guarded") << gemm_blas_core() << " [" << s.N << ", " << s.K << "]";
  }
}

TEST(CpuLinear, BlasMatchesReference) {
  // M, N, K of 1, primes, more rows than one sgemm call (304), more weight rows than a block
  // (192) and than a perturbed group (768); K of 1, prime, and over OpenBLAS's K block (320)
  const Shape shapes[] = {{1, 1, 1},      {1, 7, 13},      {3, 1, 5},     {2, 97, 31},   {17, 192, 64},
                          {305, 193, 37}, {611, 101, 211}, {7, 769, 19}, {40, 1000, 3}, {1, 576, 576},
                          {33, 5, 1536},  {9, 401, 331}};
  CpuBackend be;
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    for (const ProbeCase& pc : kProbes) {
      for (bool with_bias : {false, true}) {
        seed++;
        std::vector<float> x = random_floats(s.M * s.K, seed);
        Weight w(s.N, s.K, seed + 1000, 3), b(1, s.N, seed + 2000, 4);
        apply_probe_case(pc, &w.p);
        apply_probe_case(pc, &b.p);
        b.p.info.mask = MASK_DENSE;  // biases are dense in every method
        Tensor in;
        in.data = x.data();
        in.rows = s.M;
        in.cols = s.K;
        const Probe probe{pc.scale, 777 + seed};
        PoisonedBuffer ref(s.M, s.N), got(s.M, s.N);
        cpu_linear_reference(ref.t, in, w.p, with_bias ? &b.p : nullptr, probe);
        be.linear(got.t, in, w.p, with_bias ? &b.p : nullptr, probe);
        const std::string where = std::string(pc.name) + (with_bias ? " +bias" : "") + " M=" +
                                  std::to_string(s.M) + " N=" + std::to_string(s.N) +
                                  " K=" + std::to_string(s.K);
        ASSERT_TRUE(got.guards_intact()) << where;
        const std::vector<double> tol = tolerance(x, w.p, with_bias ? &b.p : nullptr, probe, s.M);
        const std::vector<float> r = ref.values(), g = got.values();
        for (size_t i = 0; i < g.size(); i++)
          ASSERT_LE(std::fabs((double)g[i] - r[i]), tol[i]) << where << " at " << i << ": " << g[i] << " vs " << r[i];
      }
    }
  }
}

// A row's output is the same bits whichever rows share the call: alone, in ranges starting
// anywhere, and in a shuffled batch.
TEST(CpuLinear, RowsIndependentOfTheOtherRows) {
  CpuBackend be;
  for (Shape s : {Shape{700, 200, 96}, Shape{350, 97, 300}, Shape{40, 1536, 576}}) {
    for (float scale : {0.0f, 1e-2f}) {
      std::vector<float> x = random_floats(s.M * s.K, 5);
      Weight w(s.N, s.K, 6, 11), b(1, s.N, 7, 12);
      w.p.info.mask = MASK_MAGNITUDE;
      w.p.info.threshold = 0.5f;
      const Probe probe{scale, 4242};
      auto run = [&](const std::vector<int64_t>& rows) {
        std::vector<float> xs;
        for (int64_t r : rows) xs.insert(xs.end(), x.begin() + r * s.K, x.begin() + (r + 1) * s.K);
        Tensor in, out;
        in.data = xs.data();
        in.rows = (int64_t)rows.size();
        in.cols = s.K;
        std::vector<float> y(rows.size() * s.N, kPoison);
        out.data = y.data();
        out.rows = in.rows;
        out.cols = s.N;
        be.linear(out, in, w.p, &b.p, probe);
        return y;
      };
      std::vector<int64_t> all(s.M);
      for (int64_t i = 0; i < s.M; i++) all[i] = i;
      const std::vector<float> full = run(all);
      auto expect_rows = [&](const std::vector<int64_t>& rows, const std::string& what) {
        const std::vector<float> y = run(rows);
        for (size_t i = 0; i < rows.size(); i++)
          ASSERT_EQ(0, std::memcmp(&y[i * s.N], &full[rows[i] * s.N], s.N * sizeof(float)))
              << what << ": row " << rows[i] << " (M=" << s.M << " N=" << s.N << " K=" << s.K << " scale=" << scale << ")";
      };
      for (int64_t r : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{8}, s.M / 2, s.M - 2, s.M - 1})
        expect_rows({r}, "alone");
      for (int64_t first : {1, 3, 9, 13})
        for (int64_t count : {2, 5, 12, 17, 303, 305}) {
          if (first + count > s.M) continue;
          std::vector<int64_t> rows;
          for (int64_t i = 0; i < count; i++) rows.push_back(first + i);
          expect_rows(rows, "range");
        }
      std::vector<int64_t> shuffled = all;
      std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(3));
      shuffled.resize(s.M * 2 / 3);
      expect_rows(shuffled, "shuffled");
    }
  }
}

TEST(CpuLinear, BitIdenticalForAnyThreadCount) {
  const int saved = omp_get_max_threads();
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 4}) {
    omp_set_num_threads(threads);
    CpuBackend be;
    std::vector<float> y;
    for (Shape s : {Shape{333, 1000, 96}, Shape{5, 200, 777}}) {
      for (float scale : {0.0f, -1e-2f}) {
        std::vector<float> x = random_floats(s.M * s.K, 21);
        Weight w(s.N, s.K, 22, 5), b(1, s.N, 23, 6);
        w.p.info.mask = MASK_RANDOM;
        w.p.info.keep_prob = 0.5f;
        w.p.info.mask_seed = 8;
        Tensor in;
        in.data = x.data();
        in.rows = s.M;
        in.cols = s.K;
        PoisonedBuffer out(s.M, s.N);
        be.linear(out.t, in, w.p, &b.p, Probe{scale, 31});
        std::vector<float> v = out.values();
        y.insert(y.end(), v.begin(), v.end());
      }
    }
    results.push_back(y);
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(0, std::memcmp(results[0].data(), results[1].data(), results[0].size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(results[0].data(), results[2].data(), results[0].size() * sizeof(float)));
}

// The row-independence check is not a formality: sgemm on plain calls of up to 304 rows (no
// guards, no padding) does change rows' bits with OpenBLAS's Haswell/Zen kernels, and the
// check must say so.
TEST(CpuGemm, CheckDetectsRowDependentCalls) {
  const GemmRowScheme plain{"plain", 0, 304, 1};
  const bool independent = gemm_scheme_rows_independent(plain, 192, 576);
  const std::string core = gemm_blas_core();
  if (core != "Zen" && core != "Haswell" && independent)
    GTEST_SKIP() << "OpenBLAS " << core << " keeps rows independent even in plain calls";
  EXPECT_FALSE(independent) << core;
  for (const GemmRowScheme* s : gemm_schemes()) EXPECT_GT(s->call_rows(1), 0) << s->name;
}
