// Emulated CUDA: what exec.cpp, runtime.cpp and cublas.cpp share (not for device code).
#pragma once

#include <string>

#include "emu_runtime.h"

namespace emu {

// Print "emu: error: MSG" once and make `code` the sticky error of the device (every later
// API call returns it until cudaDeviceReset), as a fault inside a kernel does on a GPU.
void record_fault(cudaError_t code, const std::string& msg);
// Print "emu: error: MSG" and set the (non-sticky) last error, as a refused launch or a bad
// API argument does. Returns `code`.
cudaError_t record_error(cudaError_t code, const std::string& msg);
void set_diagnostic(const std::string& msg);
// The sticky error, or cudaSuccess.
cudaError_t sticky_error();
// Checks the guard bytes around every live allocation; a changed guard is a fault naming the
// allocation and `after` (what ran last).
void check_guards(const char* after);
// The dynamic shared memory limit a kernel opted into (cudaFuncSetAttribute), 0 if none.
int max_dynamic_smem(const void* fn);
bool stream_valid(cudaStream_t s);
// True when [p, p + bytes) lies inside one live device allocation.
bool device_range_ok(const void* p, size_t bytes);
// A kernel launch ran (counted inside a cudaProfilerStart/Stop region).
void note_launch();
// The device's fixed properties.
const cudaDeviceProp& device_properties();

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace emu
