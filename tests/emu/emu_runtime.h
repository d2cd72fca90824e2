// Emulated CUDA: the runtime API this project calls, checked as the real runtime checks it
// (runtime.cpp), plus the device-side header and the launch machinery. One emulated device:
// an H100 (132 SMs, compute capability 9.0, 228 KB shared memory per SM, 80 GB), named
// "... (emulated)". Work is executed when it is enqueued: every stream is synchronous.
#pragma once

#include <cstddef>

#include "emu_device.h"
#include "emu_launch.h"
#include "emu_types.h"

cudaError_t cudaMalloc(void** p, size_t bytes);
template <class T>
cudaError_t cudaMalloc(T** p, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
cudaError_t cudaFree(void* p);
cudaError_t cudaMallocHost(void** p, size_t bytes);
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* p, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDeviceReset();
cudaError_t cudaRuntimeGetVersion(int* version);
cudaError_t cudaDriverGetVersion(int* version);

cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
// Every stream is synchronous here, so the wait is already met: only the handles and flags are checked.
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags = 0);
// cuda_profiler_api.h: the region a profiler attached with "profile from start off" measures. No
// profiler here: recorded (emu::profiler_record) so tests can see what a region would hold.
cudaError_t cudaProfilerStart();
cudaError_t cudaProfilerStop();

cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorName(cudaError_t err);
const char* cudaGetErrorString(cudaError_t err);

namespace emu {
cudaError_t func_set_attribute(const void* fn, cudaFuncAttribute attr, int value);
}
template <class... P>
cudaError_t cudaFuncSetAttribute(void (*fn)(P...), cudaFuncAttribute attr, int value) {
  return ::emu::func_set_attribute(reinterpret_cast<const void*>(fn), attr, value);
}

// ---- for the emulator's own tests and tools (not CUDA API)
namespace emu {
// The message of the last error the emulator diagnosed ("" if none).
const char* last_diagnostic();
// Ends a sticky fault and clears the last error, keeping every allocation (cudaDeviceReset
// would free them): lets one test process check many deliberate faults.
void clear_fault();
// The thread schedule between barriers: "fwd", "rev" or "random:SEED" (EMU_SCHED sets the
// initial one). Returns false for an unknown name.
bool set_schedule(const char* spec);
const char* schedule_name();
// What cudaProfilerStart/Stop bracketed since the last reset: complete regions, the kernel launches
// inside them, and stops without a start (real CUDA ignores those; a bench that makes one is wrong).
struct ProfilerRecord {
  int regions = 0;
  long long launches_inside = 0;
  int unmatched_stops = 0;
};
ProfilerRecord profiler_record();
void reset_profiler_record();
}  // namespace emu
