// The sign noise kind's kernels (noise_spec.h section 12: z = ±1, 128 per Philox call): W' of a probe
// or pair and the update, with z applied as a sign flip (add_sign_flipped, the spec's fma bit for bit).
// cuda/linear.cu's W' launchers and cuda/optimizer.cu's update send NOISE_SIGN here; the other kinds
// keep their kernels (a thread per group of 8, one noise_z8 each). Include from .cu files only.
// Tests: tests/test_backend_ops.cu (the op cases and the pair against the CPU), tests/test_noise_cuda.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/tensor.h"  // DType
#include "probe_args.h"      // ProbeArgs, MaskArgs

namespace smezo {

// Elements [first, first + n) of the tensor at src (first a multiple of 8) under p (its scale: the
// + half's for a pair) into plus[0, n), and at -p.scale into minus[0, n) unless minus is nullptr.
void launch_sign_perturb(DType dtype, void* plus, void* minus, const void* src, int64_t first, int64_t n,
                         const ProbeArgs& p, cudaStream_t stream);

// w[i] <- keep ? fma(-decay, w, updated_value(w, z, coef, keep)) : w for the n elements of w, as
// update_kernel without stochastic rounding (which keeps update_kernel: its own Philox dominates).
void launch_sign_update(DType dtype, void* w, int64_t n, float coef, float decay, uint64_t seed,
                        const MaskArgs& mask, cudaStream_t stream);

}  // namespace smezo
