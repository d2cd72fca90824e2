// Kernel playground for the linear layer (`smezo bench --kernel linear`): validates and times
// the PRODUCTION code paths (CudaBackend::linear, CudaBackend::update, abs_quantile) against
// two floors, on random weights generated on the GPU, for LLaMA-7B-sized shapes by default.
//
// Per weight shape N x K (storage dtype bf16 or f16):
//   abs_quantile   CudaBackend::abs_quantile(W, q): the S-MeZO threshold (wall clock, it syncs)
//   noise-only     every z of the N*K elements regenerated exactly as the spec does
//                  (noise_z8 per group of 8, the production launch shape), summed into a
//                  per-block checksum: the RNG floor of any perturbed linear; one floor per
//                  generator: gaussian (spec v2, the default), gaussian-v1, rademacher
//   weight-read    W read once (16-byte loads), summed into a per-block checksum: the
//                  bandwidth floor
//   update         CudaBackend::update with the S-MeZO mask and with MASK_DENSE, timed on a
//                  COPY of W (W itself is never written, so every row uses the same weights)
// and per noise kind (W's z: LinearBenchOptions::noises) and M (rows of x per probe):
//   gemm           cublasGemmEx alone, x already rounded to the storage dtype (cuBLAS's rate)
//   linear         CudaBackend::linear, Probe{scale 0} (x -> bf16/f16 conversion + GEMM)
//   s-mezo, mezo   CudaBackend::linear, Probe{eps, seed} with MASK_MAGNITUDE (threshold above)
//                  / MASK_DENSE, on the W' path (--linear-path wprime: materialise W' in
//                  scratch, then cuBLAS) — the path the fused kernel must beat
//   fused          the same S-MeZO call on the fused path (--linear-path fused,
//                  cuda/fused_linear.cu), when LinearBenchOptions::fused
//   pair w', pair fused   the S-MeZO probe PAIR (2·M rows: M at +eps, M at -eps) on each path:
//                  the call a training step makes; their ratio is the crossover table
//                  (printed last) that --linear-path auto's table (cuda/cuda_plan.h) is filled
//                  from
// Before timing, every path is validated on sampled output entries against a host computation
// from downloaded W rows and host-regenerated z (see linear_bench.cu); any FAIL makes
// run_linear_bench return 1 (the timings are still printed, marked FAIL).
// Timing (as RegionTimer, bench/device_timing.h): cudaEvents on backend.stream() around each call, warm-up calls
// first, the L2 flushed before every timed rep (a memset of flush_bytes outside the events),
// median of reps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/tensor.h"
#include "smezo/noise.h"  // NoiseKind

namespace smezo {

struct LinearShape {
  int64_t n = 0;  // out features (rows of W)
  int64_t k = 0;  // in features (cols of W)
};

// LLaMA-7B: q/k/v/o 4096x4096, gate/up 11008x4096, down 4096x11008, LM head 32000x4096.
inline std::vector<LinearShape> default_linear_bench_shapes() {
  return {{4096, 4096}, {11008, 4096}, {4096, 11008}, {32000, 4096}};
}

struct LinearBenchOptions {
  DType dtype = DTYPE_BF16;                       // W storage: DTYPE_BF16 or DTYPE_F16
  std::vector<LinearShape> shapes = default_linear_bench_shapes();
  std::vector<int64_t> ms = {16, 64, 256, 1024, 4096};  // rows of x per probe (batch x length)
  std::vector<NoiseKind> noises = {NOISE_GAUSSIAN, NOISE_RADEMACHER};  // W's z, each timed
  int reps = 20;                                  // timed reps per region (median reported)
  int warmup = 3;                                 // untimed calls before the reps
  double mask_quantile = 0.75;                    // S-MeZO threshold = this quantile of |W|
  float eps = 1e-3f;                              // probe scale (sigma = +1)
  uint64_t seed = 20240601;                       // weights, x and the step seed derive from it
  int64_t flush_bytes = int64_t(256) << 20;       // L2 flush buffer (> the 50 MB L2 of an H100)
  std::string json_path;                          // one JSON object per shape x M; "" = none
  bool fused = true;                              // false: no fused columns ("n/a")
};

// Validates, times and prints (stdout) every path for every shape x M; writes JSON lines when
// json_path is set. Returns 0 when every validation passed, 1 otherwise. Throws smezo::Error
// for bad options or CUDA failures (no GPU, out of memory).
int run_linear_bench(const LinearBenchOptions& options);

}  // namespace smezo
