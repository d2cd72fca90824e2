// The fused perturbed linear (cuda/fused_linear.cu): out = in · W'ᵀ with W' = W + scale·m(W)⊙z
// formed tile by tile in shared memory, never in global memory. CudaBackend::linear calls it
// on LINEAR_FUSED (cuda_plan.h, --linear-path); the bias is added afterwards by linear.cu's
// epilogue, as on the W' path. The CPU reference is cpu_linear_reference (src/cpu/linear.cpp).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/tensor.h"
#include "probe_args.h"

namespace smezo {

struct FusedLinearParams {
  float* out = nullptr;       // (M, N) fp32, row-major; every entry written (no bias)
  const float* in = nullptr;  // (M, K) fp32, row-major
  const void* w = nullptr;    // (N, K) in `dtype`, row-major, the stored (unperturbed) weight
  DType dtype = DTYPE_BF16;
  int64_t M = 0, N = 0, K = 0;
  bool pair = false;  // rows [0, M/2) read W at +probe.scale, rows [M/2, M) at -probe.scale
  ProbeArgs probe;    // the weight's probe (scale != 0); for a pair, the + half's
};

// Enqueues the kernel on `stream`. W' entries are exactly the W' path's (perturbed_value of
// noise_spec.h, rounded to the storage dtype), x is rounded to it as the W' path does; only the
// fp32 summation order differs from cuBLAS.
void launch_fused_linear(const FusedLinearParams& p, cudaStream_t stream);

// Rows of `in` per block: the noise of a weight tile is generated once per block, so a call
// generates it ceil(rows per probe / this) times (pair: per probe half).
int64_t fused_linear_rows_per_block(bool pair);

}  // namespace smezo
