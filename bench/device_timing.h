// What the CUDA benchmarks (bench/*.cu) share for timing: a device allocation freed on scope exit,
// and RegionTimer (events on the stream around each call, warm-up calls first,
// the L2 flushed before every timed rep by a memset outside the events, the median of the reps).
// Include from .cu files of bench/ only.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <vector>

#include "common/check.h"
#include "cuda/cuda_check.h"

namespace smezo {
namespace bench {

// A device allocation freed on scope exit (CudaBackend::alloc never frees, and the shapes'
// buffers must be released between shapes).
class DeviceBuffer {
 public:
  DeviceBuffer(size_t bytes, const char* what) {
    const cudaError_t err = cudaMalloc(&ptr_, std::max<size_t>(bytes, 1));
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw_error("bench: out of GPU memory allocating %s (%.1f MiB)\n---> HINT: fewer or "
                  "smaller --shapes / --m, or free other processes on this GPU (nvidia-smi)",
                  what, bytes / 1048576.0);
    }
    CUDA_CHECK(err);
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

struct Timing {
  double median_ms = NAN;
  double min_ms = NAN;
  double max_ms = NAN;
};

inline Timing summarize(std::vector<double> ms) {
  Timing t;
  if (ms.empty()) return t;
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  t.median_ms = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  return t;
}

// Times one region: `warmup` untimed calls, then `reps` x (L2 flush memset, start event, the
// call, stop event), all queued before one synchronisation (the host runs ahead of the GPU,
// so no launch gap lands inside the events); median of the reps.
class RegionTimer {
 public:
  RegionTimer(cudaStream_t stream, void* flush, size_t flush_bytes, int reps, int warmup)
      : stream_(stream), flush_(flush), flush_bytes_(flush_bytes), reps_(reps), warmup_(warmup) {
    try {
      for (int r = 0; r < 2 * reps; ++r) {
        cudaEvent_t e = nullptr;
        CUDA_CHECK(cudaEventCreate(&e));
        events_.push_back(e);
      }
    } catch (...) {
      destroy();
      throw;
    }
  }
  ~RegionTimer() { destroy(); }
  RegionTimer(const RegionTimer&) = delete;
  RegionTimer& operator=(const RegionTimer&) = delete;

  void flush_l2() { CUDA_CHECK(cudaMemsetAsync(flush_, 0x5a, flush_bytes_, stream_)); }

  template <typename Fn>
  Timing time(Fn&& fn) {
    for (int i = 0; i < warmup_; ++i) fn();
    for (int r = 0; r < reps_; ++r) {
      CUDA_CHECK(cudaMemsetAsync(flush_, r & 0xff, flush_bytes_, stream_));
      CUDA_CHECK(cudaEventRecord(events_[2 * r], stream_));
      fn();
      CUDA_CHECK(cudaEventRecord(events_[2 * r + 1], stream_));
    }
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::vector<double> ms;
    for (int r = 0; r < reps_; ++r) {
      float t = 0.0f;
      CUDA_CHECK(cudaEventElapsedTime(&t, events_[2 * r], events_[2 * r + 1]));
      ms.push_back(t);
    }
    return summarize(ms);
  }

  // Host wall clock, for calls that synchronise inside (abs_quantile: one D2H copy per pass).
  template <typename Fn>
  Timing time_wall(Fn&& fn, int reps) {
    fn();  // warm-up
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) {
      flush_l2();
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      const auto t0 = std::chrono::steady_clock::now();
      fn();
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      const auto t1 = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    return summarize(ms);
  }

 private:
  void destroy() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    events_.clear();
  }
  cudaStream_t stream_;
  void* flush_;
  size_t flush_bytes_;
  int reps_;
  int warmup_;
  std::vector<cudaEvent_t> events_;
};

}  // namespace bench
}  // namespace smezo
