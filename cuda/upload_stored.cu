// Streaming weight upload on the GPU (Backend::upload_stored) and the free-memory query.
// The file's bytes go to the device in chunks of at most kCudaUploadChunkBytes (cuda_plan.h):
//   - file dtype == storage dtype: straight into the tensor, then check_kernel scans them;
//   - otherwise: into scratch, and convert_kernel rounds to the storage dtype (nearest even, as the
//     host does), checking each CONVERTED value, so f32 70000 into F16 is reported like a NaN/Inf.
// The first non-finite index is an atomicMin'd u64 at the start of scratch (all ones = none).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "common/check.h"
#include "cuda_backend.h"
#include "cuda_check.h"
#include "cuda_plan.h"  // kCudaUploadChunkBytes
#include "device_utils.cuh"

namespace smezo {

namespace {

// --- kernels

template <typename T> struct StoredBits;
template <> struct StoredBits<float> {
  using U = uint32_t;
  static constexpr U kExp = 0x7f800000u;
};
template <> struct StoredBits<__half> {
  using U = uint16_t;
  static constexpr U kExp = 0x7c00u;
};
template <> struct StoredBits<__nv_bfloat16> {
  using U = uint16_t;
  static constexpr U kExp = 0x7f80u;
};

template <typename T>
__device__ __forceinline__ bool non_finite(T v) {
  using B = StoredBits<T>;
  typename B::U bits;
  memcpy(&bits, &v, sizeof bits);
  return (bits & B::kExp) == B::kExp;
}

// Elements [0, n) of src checked; first_bad = min(first_bad, base + i) for a non-finite one.
template <typename T>
__global__ void check_kernel(const T* data, int64_t n, int64_t base, unsigned long long* first_bad) {
  SMEZO_GRID_STRIDE(i, n)
    if (non_finite(data[i])) atomicMin(first_bad, static_cast<unsigned long long>(base + i));
}

// dst[i] = round_Dst(src[i]); first_bad = min(first_bad, base + i) when the stored value is not finite.
template <typename Src, typename Dst>
__global__ void convert_kernel(const Src* src, Dst* dst, int64_t n, int64_t base,
                               unsigned long long* first_bad) {
  SMEZO_GRID_STRIDE(i, n) {
    const Dst v = from_float<Dst>(to_float(src[i]));
    if (non_finite(v)) atomicMin(first_bad, static_cast<unsigned long long>(base + i));
    dst[i] = v;
  }
}

}  // namespace

// --- launcher

int64_t CudaBackend::upload_stored(const Tensor& dst, const void* src, DType src_dtype) {
  held_.require_none(dst, "upload");
  const int64_t n = dst.numel();
  if (n == 0) return -1;
  const int64_t src_size = dtype_size(src_dtype), dst_size = dtype_size(dst.dtype);
  const bool same = src_dtype == dst.dtype;
  const int64_t chunk = std::min(n, std::max<int64_t>(1, kCudaUploadChunkBytes / src_size));
  // [first_bad (256 B slot) | staging chunk (conversions only)]
  char* base = static_cast<char*>(scratch(static_cast<size_t>(256 + (same ? 0 : chunk * src_size))));
  auto* first_bad = reinterpret_cast<unsigned long long*>(base);
  void* stage = base + 256;
  CUDA_CHECK(cudaMemsetAsync(first_bad, 0xff, sizeof(unsigned long long), stream_));
  const char* host = static_cast<const char*>(src);
  char* out = static_cast<char*>(dst.data);
  constexpr int kBlock = 256;
  for (int64_t start = 0; start < n; start += chunk) {
    const int64_t count = std::min(chunk, n - start);
    const size_t bytes = static_cast<size_t>(count * src_size);
    if (same) {
      void* target = out + start * dst_size;
      // pageable source: the call returns once it is read, so the caller may release it
      CUDA_CHECK(cudaMemcpyAsync(target, host + start * src_size, bytes, cudaMemcpyHostToDevice, stream_));
      dispatch_dtype(dst.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        check_kernel<T><<<grid_blocks(count, kBlock), kBlock, 0, stream_>>>(static_cast<const T*>(target),
                                                                            count, start, first_bad);
        CUDA_CHECK_LAUNCH();
      });
    } else {
      CUDA_CHECK(cudaMemcpyAsync(stage, host + start * src_size, bytes, cudaMemcpyHostToDevice, stream_));
      dispatch_dtype(src_dtype, [&](auto src_tag) {
        using S = typename decltype(src_tag)::type;
        dispatch_dtype(dst.dtype, [&](auto dst_tag) {
          using D = typename decltype(dst_tag)::type;
          convert_kernel<S, D><<<grid_blocks(count, kBlock), kBlock, 0, stream_>>>(
              static_cast<const S*>(stage), reinterpret_cast<D*>(out) + start, count, start, first_bad);
          CUDA_CHECK_LAUNCH();
        });
      });
      // the staging chunk is reused by the next copy
      CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
  }
  unsigned long long bad = ULLONG_MAX;
  CUDA_CHECK(cudaMemcpyAsync(&bad, first_bad, sizeof bad, cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  return bad == ULLONG_MAX ? -1 : static_cast<int64_t>(bad);
}

int64_t CudaBackend::free_memory_bytes() const {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return static_cast<int64_t>(free_bytes);
}

}  // namespace smezo
