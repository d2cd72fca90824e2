// The fused perturbed linear (DESIGN.md "The fused perturbed linear"), version 0:
//   out(M, N) fp32 = x_r(M, K) · W'(N, K)ᵀ (+ b'(N))
// in ONE kernel, where x_r = x (fp32) rounded to W's storage type (bf16 or fp16, nearest even,
// as cuda/linear.cu's convert_input_kernel), W' = perturbed_value(w, z, scale, keep) rounded to
// the storage type (bit for bit what linear.cu's perturb_weight_kernel writes to scratch), and
// b' = perturbed_value(b, z_b, scale, keep_b) in fp32, never rounded (as linear.cu's bias
// epilogue). Nothing W-sized is ever written to global memory; W is only read. See
// cuda/fused_linear.cu for the kernel, its cost model and its known limits.
//
// Plain C++ header (no CUDA-only types): .cpp files of a CUDA build may include it.
//
//   fused_linear(backend, out, in, weight, bias_or_null, probe);   // validates, enqueues
//   LinearBenchOptions::fused = fused_linear_bench_hook;           // smezo bench --kernel linear
//
// Not (yet) the path of CudaBackend::linear, which stays "materialise W', then cuBLAS" until
// this kernel is validated and measured on the GPU (tests/test_fused_linear.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/noise_spec.h"
#include "backend/tensor.h"
#include "probe_args.h"

namespace smezo {

class CudaBackend;

// How one parameter is read through a probe: w' = keep ? fma(scale, z, w) : w, with z and keep
// from src/common/noise_spec.h at the element's index in the tensor (row-major).
// How W and the bias are read: ProbeArgs / probe_args() from probe_args.h.

struct FusedLinearParams {
  float* out = nullptr;          // (M, N) fp32, row-major, written (never read)
  const float* x = nullptr;      // (M, K) fp32 activations, row-major
  const void* w = nullptr;       // (N, K) weights, DTYPE_BF16 or DTYPE_F16, row-major
  DType w_dtype = DTYPE_BF16;
  const void* bias = nullptr;    // (N) or nullptr; any dtype
  DType bias_dtype = DTYPE_F32;
  int64_t M = 0, N = 0, K = 0;
  ProbeArgs w_probe;            // how W is read (index n*K + k)
  ProbeArgs b_probe;            // how the bias is read (index n)
};

// Enqueues the kernel on `stream`. Throws smezo::Error for unsupported dtypes or shapes
// (fp32 weights: use CudaBackend::linear). M == 0 or N == 0: nothing is launched.
void launch_fused_linear(const FusedLinearParams& p, cudaStream_t stream);

// CudaBackend::linear's contract (shapes checked the same way), computed by the fused kernel on
// backend.stream(). Weights must be fp16 or bf16.
void fused_linear(CudaBackend& backend, const Tensor& out, const Tensor& in, const Param& weight,
                  const Param* bias, const Probe& probe);

// The signature of LinearBenchOptions::fused (bench/linear_bench.h): fused_linear without bias.
void fused_linear_bench_hook(CudaBackend& backend, const Tensor& out, const Tensor& in,
                             const Param& weight, const Probe& probe);

}  // namespace smezo
