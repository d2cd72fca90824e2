// The fused perturbed linear (cuda/fused_linear.cu) for CudaBackend::linear on LINEAR_FUSED (no bias).
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

// Enqueues the kernel. W' and x are the W' path's bit for bit; only the summation order differs.
void launch_fused_linear(const FusedLinearParams& p, cudaStream_t stream);

// Rows of `in` per block (per probe half): a call generates the noise ceil(rows / this) times.
int64_t fused_linear_rows_per_block(bool pair);

}  // namespace smezo
