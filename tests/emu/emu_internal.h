// Emulated CUDA: what exec.cpp, runtime.cpp and cublas.cpp share (not for device code).
#pragma once

#include <functional>
#include <memory>
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
bool event_valid(cudaEvent_t e);
// A kernel launch ran (counted inside a cudaProfilerStart/Stop region).
void note_launch();
// The device's fixed properties.
const cudaDeviceProp& device_properties();

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// True for a stream created without cudaStreamNonBlocking (the legacy stream waits for it).
bool stream_blocking(cudaStream_t s);
// Runs a kernel that passed its checks (graph replays call it directly).
void execute_kernel(const KernelLaunch& k);
cudaError_t check_kernel_launch(const KernelLaunch& k, std::string* why);

// ---- stream capture and graphs (graph.cpp)
// One operation a graph holds: a kernel, a copy, a memset, a cuBLAS call, a child graph.
// Immutable once made; shared between a graph and the executable graphs made from it.
struct GraphOp {
  virtual ~GraphOp() = default;
  virtual cudaGraphNodeType type() const = 0;
  // Executes it as an enqueued call would; a fault is the device's sticky error.
  virtual void run() const = 0;
  virtual std::string describe() const = 0;
  // For cudaGraphExecUpdate: whether `next` may replace this node (else the update result).
  virtual cudaGraphExecUpdateResult update_to(const GraphOp& next) const;
};
using GraphOpPtr = std::shared_ptr<const GraphOp>;
GraphOpPtr kernel_op(const KernelLaunch& k);

// Every stream-ordered call (launch, async copy or memset, cuBLAS call, graph launch) asks
// here before it runs. An error: the call fails (already recorded as the last error) and
// nothing runs. *captured: the stream is capturing and make_op()'s operation was recorded in
// its graph instead of running. Neither: run it now.
cudaError_t enqueue(cudaStream_t s, const char* call, const std::function<GraphOpPtr()>& make_op,
                    bool* captured);
// Calls the runtime calls "potentially unsafe" while a capture is under way (allocations,
// synchronising with anything): cudaErrorStreamCaptureUnsupported where the capture modes
// forbid them, which invalidates the captures that forbid them.
cudaError_t unsafe_call(const char* call);
// cudaStreamSynchronize / cudaStreamQuery of s, cudaDeviceSynchronize, and cudaEventSynchronize /
// cudaEventQuery / cudaEventElapsedTime of e (query_only: not a synchronisation).
cudaError_t stream_sync_call(cudaStream_t s, const char* call);
cudaError_t device_sync_call(const char* call);
cudaError_t event_sync_call(cudaEvent_t e, const char* call, bool query_only);
// cudaEventRecord of e on s: an error, or *captured (the event marks a point of the capture
// and gets no time), or neither (record it now).
cudaError_t event_record(cudaEvent_t e, cudaStream_t s, bool* captured);
void event_destroyed(cudaEvent_t e);
// cudaStreamWaitEvent (both handles checked): joins a capture, or is refused by it.
cudaError_t stream_wait_event(cudaStream_t s, cudaEvent_t e, unsigned flags);
// cudaStreamDestroy of a stream in a capture is refused.
bool stream_in_capture(cudaStream_t s);
// cudaDeviceReset: every capture, graph and executable graph ends.
void graphs_reset();

}  // namespace emu
