// `smezo bench --kernel excess`: what the S-MeZO step's time beyond its two forwards is made of,
// measured on one model shape's weights (issue 41; tools/gpu/step_excess.py runs it on the GPU
// machine). Parts (ExcessBenchOptions::parts):
//   perturb  the probe pair's W' pass over a flat tensor of the shape's linear weights (at most
//            flat_elements of them), per noise kind: the twin of cuda/linear.cu's
//            perturb_weight_pair_kernel (the same load4 / perturb_group8 / store4 of
//            cuda/device_utils.cuh, the same launch shape; for sign noise the product's own
//            launch_sign_perturb of cuda/sign_noise.cu), and the single probe's pass; beside a
//            plain copy of equal bytes (W read once, written twice, or once). perturb / copy near 1:
//            the pass is bandwidth-bound; well above 1: arithmetic-bound (the noise). Each time is
//            also given per element and scaled to every linear weight of the model.
//   layer    one transformer layer's linears (q, k, v, o, gate, up, down) under a probe pair of M
//            rows per probe, block by block as CudaBackend::linear forms W+ and W- (the block size
//            is cuda_plan.h's, the process's knob): "serial" (one stream, the product's order),
//            "two-streams" (the next block's W+/W- on a second stream beside this block's batch-2
//            GEMM, two scratch buffers in turn), "two-streams-smN" (the same with
//            cublasSetSmCountTarget(N): the GEMM leaves SMs to the perturb), and "product"
//            (CudaBackend::linear itself, x converted from fp32 in each call). Then the serial pass
//            kernel by kernel between events: each kind's model bytes over its time, the DRAM rate
//            reached without a profiler. Bench-only code: the product keeps one stream.
// Validation before any timing: the twin's W+ and W- bit for bit against the host rule
// (src/common/noise_spec.h) on sampled groups, the copy exactly; every order's outputs within 1e-3
// of the largest serial output (a block computed from another block's W' is off by O(1)), and
// the product's too. Any FAIL makes run_excess_bench return 1 (the timings are still printed).
// dram_range: one serial layer pass per M and one copy pass, each inside cudaProfilerStart/Stop
// (bench/profiler_region.h), for `ncu --replay-mode app-range` to count DRAM bytes; stdout names
// the regions in order ("profiler region K: ...").
// Output: a readable table on stdout; with json_path one JSON object per measurement.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/tensor.h"  // DType
#include "smezo/noise.h"     // NoiseKind

namespace smezo {

struct ExcessBenchOptions {
  std::string shape = "llama-7b";                  // a model_bench_shape name
  DType dtype = DTYPE_BF16;                        // weight storage: bf16 or f16
  std::vector<int64_t> ms = {1024, 4096};          // rows per probe (B x T: 16 x 64, 16 x 256)
  std::vector<NoiseKind> noises = {NOISE_GAUSSIAN, NOISE_RADEMACHER};
  std::vector<std::string> parts = {"perturb", "layer"};
  int reps = 10;                                   // timed reps (median)
  int warmup = 3;
  int64_t flat_elements = int64_t(1) << 29;        // the flat perturb tensor's cap (1 GiB of bf16)
  std::vector<int> sm_reserve = {16, 32};          // SMs the GEMM leaves free in two-streams-smN
  bool dram_range = false;
  uint64_t seed = 20261141;
  int64_t flush_bytes = int64_t(256) << 20;        // L2 flush before each timed rep
  std::string json_path;                           // "": no JSON
};

// Runs the parts; 0 when every validation passed, 1 otherwise. Throws smezo::Error for bad
// options or CUDA failures.
int run_excess_bench(const ExcessBenchOptions& options);

}  // namespace smezo
