// CUDA error checking: one macro family for the whole CUDA backend, plus device discovery.
//   CUDA_CHECK(cudaMalloc(&p, bytes));       // any cudaError_t-returning call
//   CUBLAS_CHECK(cublasGemmEx(...));         // any cublasStatus_t-returning call
//   my_kernel<<<grid, block, 0, stream>>>(...);
//   CUDA_CHECK_LAUNCH();                     // after EVERY launch
// Each evaluates its argument once and on failure throws smezo::Error naming the statement, the
// error, file:line and device. SMEZO_CUDA_SYNC=1 makes CUDA_CHECK_LAUNCH() synchronise, so an
// asynchronous fault names the launch that caused it (slow). Host code only.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace smezo {

// Throw smezo::Error for a failed CUDA runtime call / cuBLAS call (used by the macros).
[[noreturn]] void cuda_check_fail(const char* stmt, cudaError_t err, const char* file, int line);
[[noreturn]] void cublas_check_fail(const char* stmt, cublasStatus_t status, const char* file,
                                    int line);
void cuda_check_launch(const char* file, int line);  // the body of CUDA_CHECK_LAUNCH()
bool cuda_sync_debug();  // SMEZO_CUDA_SYNC=1 (read once)

// True when a CUDA driver and at least one device are usable. Never throws; computed once.
bool cuda_device_available();

// True in the emulated CUDA build (tests/emu/), where tests shrink their throughput-only sizes.
bool cuda_running_emulated();

}  // namespace smezo

#define CUDA_CHECK(stmt)                                                  \
  do {                                                                    \
    const cudaError_t smezo_cuda_err_ = (stmt);                           \
    if (smezo_cuda_err_ != cudaSuccess)                                   \
      ::smezo::cuda_check_fail(#stmt, smezo_cuda_err_, __FILE__, __LINE__); \
  } while (0)

#define CUBLAS_CHECK(stmt)                                                     \
  do {                                                                         \
    const cublasStatus_t smezo_cublas_st_ = (stmt);                            \
    if (smezo_cublas_st_ != CUBLAS_STATUS_SUCCESS)                             \
      ::smezo::cublas_check_fail(#stmt, smezo_cublas_st_, __FILE__, __LINE__); \
  } while (0)

#define CUDA_CHECK_LAUNCH()                              \
  do {                                                   \
    ::smezo::cuda_check_launch(__FILE__, __LINE__);      \
  } while (0)
