// CPU backend throughput at a real model's shape, with random weights (no file needed), and
// where the time goes, op by op. Default shape: SmolLM2-135M (LLaMA, 30 layers, dim 576,
// hidden 1536, 9 heads / 3 kv heads of 64, vocab 49152, tied head) at a training batch of
// 16 sequences x 256 tokens with one logit row per sequence.
//
//   make bench-cpu && ./build/cpu_bench [--batch 16] [--len 256] [--layers 30] [--reps 2]
//
// Prints forward tokens/s unperturbed and under a dense probe (every weight perturbed, as in
// an SPSA step), and the seconds spent in each backend op over all runs (TimingBackend, the
// benchmarks' one timing wrapper; linears and updates split by weight).
// A program of its own (main), not part of libsmezo_bench.a.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <omp.h>

#include "bench/model_bench.h"
#include "bench/random_weights.h"
#include "bench/timing_backend.h"
#include "common/stopwatch.h"
#include "cpu/cpu_backend.h"
#include "model/model.h"

using namespace smezo;

namespace {

int64_t arg(int argc, char** argv, const char* name, int64_t fallback) {
  for (int i = 1; i + 1 < argc; i++)
    if (std::strcmp(argv[i], name) == 0) return std::atoll(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t batch = arg(argc, argv, "--batch", 16), len = arg(argc, argv, "--len", 256);
  const int64_t reps = arg(argc, argv, "--reps", 2);
  ModelConfig c = model_bench_shape("smollm2-135m");
  c.n_layers = arg(argc, argv, "--layers", c.n_layers);
  std::printf("SmolLM2-135M shape (%lld layers), random weights; batch %lld x %lld tokens; %d OpenMP threads\n",
              (long long)c.n_layers, (long long)batch, (long long)len, omp_get_max_threads());
  CpuBackend cpu;
  TimingBackend timed(cpu);
  Model model(random_weight_source(c, 1, "smollm2-135m"), timed, DTYPE_F32, batch * len, batch);
  std::printf("%lld parameters; linear path for [1536, 576]: %s (OpenBLAS %s)\n",
              (long long)model.parameter_count(), cpu_linear_path(1536, 576), gemm_blas_core());
  ForwardBatch b;
  for (int64_t s = 0; s < batch; s++) {
    b.seq_lens.push_back(len);
    for (int64_t i = 0; i < len; i++) b.tokens.push_back((int32_t)((s * 7919 + i * 104729) % c.vocab_size));
    b.logit_rows.push_back(s * len + len - 1);
  }
  std::vector<float> logits;
  model.forward(b, Probe{}, &logits);  // warm-up: first-use checks and allocations
  timed.reset();
  for (float scale : {0.0f, 1e-3f}) {
    const Stopwatch watch;
    for (int64_t r = 0; r < reps; r++) model.forward(b, Probe{scale, 42 + (uint64_t)r}, &logits);
    const double s = watch.seconds() / reps;
    std::printf("forward %-11s %8.3f s  %8.1f tokens/s\n", scale == 0.0f ? "unperturbed" : "perturbed", s,
                batch * len / s);
  }
  double total = 0.0;
  for (const auto& kv : timed.ms()) total += kv.second;
  std::printf("time per op over all %lld forward passes:\n", (long long)(2 * reps));
  for (const auto& kv : timed.ms())
    std::printf("  %-22s %8.3f s  %5.1f%%\n", kv.first.c_str(), kv.second / 1e3, 100.0 * kv.second / total);
  return 0;
}
