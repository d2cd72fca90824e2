// Small helpers shared by the CUDA op files (include from .cu files only): ceil_div, grid_blocks
// (grid-stride blocks in [1, 65536]), SMEZO_GRID_STRIDE, require_f32; to_float / from_float<T> (round
// to nearest even); load4 / store4 (elements i..i+3 below n, one vector access when aligned);
// warp_reduce_sum, block_reduce_sum (blockDim.x a multiple of 32, called by every thread, returns the
// total to all, callable repeatedly); mask_keep4, mask_keep8; perturb_group8; dispatch_dtype(dtype, fn)
// calls fn(TypeTag<float|__half|__nv_bfloat16>{}).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/check.h"
#include "common/noise_spec.h"
#include "backend/tensor.h"
#include "probe_args.h"  // MaskArgs, mask_args

namespace smezo {

__host__ __device__ __forceinline__ int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks for a grid-stride loop over `items` work items (the loop covers the rest).
inline unsigned grid_blocks(int64_t items, int block) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(ceil_div(items, block), 65536)));
}

// A grid-stride loop over [0, n) with int64_t indices (launch with grid_blocks(n, block)).
#define SMEZO_GRID_STRIDE(i, n)                                                             \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

// An op's check of an fp32-only operand: "<op>: <what> must be fp32 (got <dtype>)".
inline void require_f32(const Tensor& t, const char* op, const char* what) {
  SMEZO_REQUIRE(t.dtype == DTYPE_F32, "%s: %s must be fp32 (got %s)", op, what, dtype_name(t.dtype));
}

// ---- dtype conversions

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// The vector type that holds 4 elements of T in one access.
template <typename T>
using Raw4 = typename std::conditional<sizeof(T) == 4, float4, uint2>::type;

template <typename T>
__device__ __forceinline__ void load4(const T* p, int64_t i, int64_t n, float v[4]) {
  if (i + 3 < n && reinterpret_cast<uintptr_t>(p + i) % sizeof(Raw4<T>) == 0) {
    const Raw4<T> raw = *reinterpret_cast<const Raw4<T>*>(p + i);
    T t[4];
    memcpy(t, &raw, sizeof raw);
#pragma unroll
    for (int l = 0; l < 4; ++l) v[l] = to_float(t[l]);
  } else {
#pragma unroll
    for (int l = 0; l < 4; ++l) v[l] = i + l < n ? to_float(p[i + l]) : 0.0f;
  }
}

template <typename T>
__device__ __forceinline__ void store4(T* p, int64_t i, int64_t n, const float v[4]) {
  if (i + 3 < n && reinterpret_cast<uintptr_t>(p + i) % sizeof(Raw4<T>) == 0) {
    T t[4];
#pragma unroll
    for (int l = 0; l < 4; ++l) t[l] = from_float<T>(v[l]);
    Raw4<T> raw;
    memcpy(&raw, t, sizeof raw);
    *reinterpret_cast<Raw4<T>*>(p + i) = raw;
  } else {
#pragma unroll
    for (int l = 0; l < 4; ++l)
      if (i + l < n) p[i + l] = from_float<T>(v[l]);
  }
}

// ---- reductions

__device__ __forceinline__ float warp_reduce_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float block_reduce_sum(float v) {
  __shared__ float partial[32];
  __shared__ float total;
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  v = warp_reduce_sum(v);
  __syncthreads();  // a previous call's readers of `partial`/`total` are done
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int n_warps = static_cast<int>(blockDim.x >> 5);
    float s = lane < n_warps ? partial[lane] : 0.0f;
    s = warp_reduce_sum(s);
    if (lane == 0) total = s;
  }
  __syncthreads();
  return total;
}

// ---- masks

// keep[l] = mask_keep(m.kind, w[l], ..., 4*group + l) for l = 0..3 (mask_keep_group4).
__device__ __forceinline__ void mask_keep4(const MaskArgs& m, const float w[4], int64_t group,
                                           bool keep[4]) {
  mask_keep_group4(m.kind, w, m.threshold, m.keep_prob, m.mask_seed, m.tensor_id, group, keep);
}

// keep[l] for elements 8*group8 + l, l = 0..7 (two groups of four); returns whether any is kept.
__device__ __forceinline__ bool mask_keep8(const MaskArgs& m, const float w[8], int64_t group8,
                                           bool keep[8]) {
  mask_keep4(m, w, 2 * group8, keep);
  mask_keep4(m, w + 4, 2 * group8 + 1, keep + 4);
  bool any = false;
#pragma unroll
  for (int l = 0; l < 8; ++l) any = any || keep[l];
  return any;
}

// ---- probes

// plus[l] = w' of element 8*group8 + l at +p.scale, minus[l] at -scale (unless nullptr): ONE noise_z8.
__device__ __forceinline__ void perturb_group8(const ProbeArgs& p, int64_t group8, const float w[8],
                                               float plus[8], float* minus = nullptr) {
  float z[8];
  noise_z8(p.noise, p.seed, p.mask.tensor_id, group8, z);
  bool keep[8];
  mask_keep8(p.mask, w, group8, keep);
#pragma unroll
  for (int l = 0; l < 8; ++l) {
    plus[l] = perturbed_value(w[l], z[l], p.scale, keep[l]);
    if (minus != nullptr) minus[l] = perturbed_value(w[l], z[l], -p.scale, keep[l]);
  }
}

// ---- dtype dispatch

template <typename T>
struct TypeTag {
  using type = T;
};

template <typename Fn>
void dispatch_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DTYPE_F32: fn(TypeTag<float>{}); return;
    case DTYPE_F16: fn(TypeTag<__half>{}); return;
    case DTYPE_BF16: fn(TypeTag<__nv_bfloat16>{}); return;
  }
  throw_error("unknown dtype %d", static_cast<int>(dtype));
}

}  // namespace smezo
