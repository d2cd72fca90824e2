// CUDA error reporting and device discovery: the bodies behind cuda/cuda_check.h.
#include "cuda_check.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "common/check.h"

namespace smezo {

namespace {

// " on device N (name)", or " (device unknown)" when the runtime cannot tell.
std::string describe_device() {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return " (device unknown)";
  }
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    cudaGetLastError();
    return format_string(" on device %d", dev);
  }
  return format_string(" on device %d (%s, sm_%d%d)", dev, prop.name, prop.major, prop.minor);
}

const char* cuda_hint(cudaError_t err) {
  switch (err) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
      return "\n---> HINT: no usable GPU/driver here; check nvidia-smi, or run the CPU backend";
    case cudaErrorMemoryAllocation:
      return "\n---> HINT: out of GPU memory; lower the batch size or sequence length, or free "
             "other processes on this GPU (nvidia-smi)";
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
      return "\n---> HINT: the binary has no code for this GPU; rebuild with CUDA_ARCH=<its "
             "compute capability>, e.g. make CUDA_ARCH=80";
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
      return "\n---> HINT: a kernel faulted; rerun with SMEZO_CUDA_SYNC=1 to name the launch, "
             "or under compute-sanitizer";
    default:
      return "";
  }
}

}  // namespace

void cuda_check_fail(const char* stmt, cudaError_t err, const char* file, int line) {
  const std::string where = describe_device();
  throw_error("CUDA error %s (%s) in `%s` at %s:%d%s%s", cudaGetErrorName(err),
              cudaGetErrorString(err), stmt, file, line, where.c_str(), cuda_hint(err));
}

void cublas_check_fail(const char* stmt, cublasStatus_t status, const char* file, int line) {
  const std::string where = describe_device();
  const char* hint = status == CUBLAS_STATUS_NOT_INITIALIZED
                         ? "\n---> HINT: cuBLAS could not start (no GPU, or out of memory)"
                         : "";
  throw_error("cuBLAS error %s (%s) in `%s` at %s:%d%s%s", cublasGetStatusName(status),
              cublasGetStatusString(status), stmt, file, line, where.c_str(), hint);
}

bool cuda_sync_debug() {
  static const bool on = [] {
    const char* v = std::getenv("SMEZO_CUDA_SYNC");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}

void cuda_check_launch(const char* file, int line) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) cuda_check_fail("kernel launch", err, file, line);
  if (cuda_sync_debug()) {
    const cudaError_t sync_err = cudaDeviceSynchronize();
    if (sync_err != cudaSuccess)
      cuda_check_fail("kernel execution (SMEZO_CUDA_SYNC=1)", sync_err, file, line);
  }
}

bool cuda_running_emulated() {
#if defined(SMEZO_EMU)
  return true;
#else
  return false;
#endif
}

bool cuda_device_available() {
  static const bool available = [] {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      cudaGetLastError();  // clear the non-sticky error so later calls start clean
      return false;
    }
    return count > 0;
  }();
  return available;
}

}  // namespace smezo
