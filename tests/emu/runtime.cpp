// Emulated CUDA: the runtime API (memory, copies, streams, events, errors, device queries)
// with the real runtime's argument checks and error codes.
//   Memory: cudaMalloc returns 256-byte aligned host memory filled with 0xff bytes (NaN in
//   every float format: a read of memory nobody wrote shows up), between 256-byte guard
//   zones that are checked after every kernel and at cudaFree (under EMU_SAN=1 AddressSanitizer
//   does this instead, at the faulting source line). Copies and memsets must lie inside one
//   live allocation on the device side; a host side that is a device allocation is refused.
//   Errors: a refused call sets the last error (cudaGetLastError reads and clears it); a fault
//   inside a kernel is sticky: every later call returns it until cudaDeviceReset.
//   Streams and events exist and are checked, but work runs when it is enqueued (no overlap);
//   event times are host wall-clock times of an emulation and mean nothing about a GPU. Every
//   stream-ordered call asks graph.cpp first: a capturing stream records it into a graph, and
//   what stream capture forbids (allocations, synchronisations) fails as on a GPU.
#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include <unistd.h>

#include "emu_internal.h"

namespace emu {

namespace {

constexpr size_t kGuard = 256;
constexpr unsigned char kGuardByte = 0xa5;
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kUseGuards = false;  // ASan's redzones report the faulting line instead
#else
constexpr bool kUseGuards = true;
#endif

struct Alloc {
  size_t bytes;
  uint64_t id;
  void* base;  // what malloc returned
};

struct State {
  std::mutex mutex;
  std::map<uintptr_t, Alloc> allocs;  // by user address
  size_t allocated = 0;
  uint64_t next_id = 1;
  std::set<cudaStream_t> streams;
  std::set<cudaEvent_t> events;
  std::map<const void*, int> smem_optin;
  cudaError_t sticky = cudaSuccess;
  std::string diagnostic;
  bool profiling = false;  // inside cudaProfilerStart .. cudaProfilerStop
  emu::ProfilerRecord profiler;
};
State& st() {
  static State* s = new State;  // never destroyed: late cudaFree calls from static destructors
  return *s;
}
thread_local cudaError_t tl_last_error = cudaSuccess;

void banner() {
  static std::once_flag once;
  std::call_once(once, [] {
    // On a terminal only: piped output (tests comparing a command's text, logs) stays the
    // program's own; there the device name and the test binary's closing line say "emulated".
    if (std::getenv("EMU_QUIET") == nullptr && isatty(2))
      std::fprintf(stderr,
                   "emu: CUDA is EMULATED on the CPU (tests/emu; schedule %s): results show logic, "
                   "not GPU numerics or speed\n",
                   schedule_name());
  });
}

// The sticky error if there is one, else `code` (recorded as the last error when not success).
cudaError_t ret(cudaError_t code) {
  if (st().sticky != cudaSuccess) return st().sticky;
  if (code != cudaSuccess) tl_last_error = code;
  return code;
}

// The allocation holding [p, p + bytes), or null.
const Alloc* find_alloc(const void* p, size_t bytes) {
  auto& allocs = st().allocs;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = allocs.upper_bound(a);
  if (it == allocs.begin()) return nullptr;
  --it;
  if (a < it->first || a + bytes > it->first + it->second.bytes || a + bytes < a) return nullptr;
  return &it->second;
}

bool guards_intact(uintptr_t user, const Alloc& al, std::string* where) {
  const unsigned char* front = reinterpret_cast<const unsigned char*>(user) - kGuard;
  const unsigned char* back = reinterpret_cast<const unsigned char*>(user) + al.bytes;
  for (size_t i = 0; i < kGuard; ++i) {
    if (front[i] != kGuardByte) {
      *where = format("byte %zu before the start of", kGuard - i);
      return false;
    }
    if (back[i] != kGuardByte) {
      *where = format("byte %zu after the end of", i + 1);
      return false;
    }
  }
  return true;
}

std::string describe(uintptr_t user, const Alloc& al) {
  return format("allocation #%llu (%zu bytes at %p)", (unsigned long long)al.id, al.bytes,
                reinterpret_cast<void*>(user));
}

// The device side of a copy or memset must be inside one allocation (caller holds
// st().mutex). "" if so, else why not.
std::string device_range_problem(const void* p, size_t bytes, const char* side) {
  if (find_alloc(p, bytes) != nullptr) return "";
  return format("the %s range [%p, +%zu bytes) is not inside one device allocation", side, p, bytes);
}
std::string host_side_problem(const void* p, const char* side) {
  if (find_alloc(p, 1) == nullptr) return "";
  return format("the %s pointer %p is device memory, but the copy kind says host", side, p);
}
// The checks of a copy's two sides; "" when they pass.
std::string copy_problem(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  std::lock_guard<std::mutex> lock(st().mutex);
  std::string why;
  switch (kind) {
    case cudaMemcpyHostToDevice:
      why = device_range_problem(dst, bytes, "destination");
      return why.empty() ? host_side_problem(src, "source") : why;
    case cudaMemcpyDeviceToHost:
      why = device_range_problem(src, bytes, "source");
      return why.empty() ? host_side_problem(dst, "destination") : why;
    case cudaMemcpyDeviceToDevice:
      why = device_range_problem(src, bytes, "source");
      return why.empty() ? device_range_problem(dst, bytes, "destination") : why;
    case cudaMemcpyDefault:  // unified addressing: each side is what it is
      if (find_alloc(src, 1) && !find_alloc(src, bytes)) return device_range_problem(src, bytes, "source");
      if (find_alloc(dst, 1) && !find_alloc(dst, bytes))
        return device_range_problem(dst, bytes, "destination");
      return "";
    default: return "";  // host to host
  }
}
bool writes_host(void* dst, cudaMemcpyKind kind) {
  if (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost) return true;
  std::lock_guard<std::mutex> lock(st().mutex);
  return kind == cudaMemcpyDefault && find_alloc(dst, 1) == nullptr;
}

// A copy recorded by stream capture: it runs when its graph is launched, reading host memory
// then (as a GPU's memcpy node does); memory freed since the capture is a fault, as on a GPU.
struct CopyOp : GraphOp {
  void* dst;
  const void* src;
  size_t bytes;
  cudaMemcpyKind kind;
  CopyOp(void* d, const void* s, size_t n, cudaMemcpyKind k) : dst(d), src(s), bytes(n), kind(k) {}
  cudaGraphNodeType type() const override { return cudaGraphNodeTypeMemcpy; }
  std::string describe() const override {
    return format("memcpy node (%zu bytes, %p -> %p, kind %d)", bytes, src, dst, int(kind));
  }
  void run() const override {
    if (sticky_error() != cudaSuccess) return;
    const std::string why = copy_problem(dst, src, bytes, kind);
    if (!why.empty()) return record_fault(cudaErrorIllegalAddress, describe() + ": " + why);
    std::memmove(dst, src, bytes);
  }
  cudaGraphExecUpdateResult update_to(const GraphOp& next) const override {
    const CopyOp* c = dynamic_cast<const CopyOp*>(&next);
    if (c == nullptr) return cudaGraphExecUpdateErrorNodeTypeChanged;
    return c->kind == kind ? cudaGraphExecUpdateSuccess : cudaGraphExecUpdateErrorParametersChanged;
  }
};
struct SetOp : GraphOp {
  void* p;
  int value;
  size_t bytes;
  SetOp(void* q, int v, size_t n) : p(q), value(v), bytes(n) {}
  cudaGraphNodeType type() const override { return cudaGraphNodeTypeMemset; }
  std::string describe() const override {
    return format("memset node (%zu bytes of 0x%02x at %p)", bytes, value & 0xff, p);
  }
  void run() const override {
    if (sticky_error() != cudaSuccess) return;
    if (!device_range_ok(p, bytes))
      return record_fault(cudaErrorIllegalAddress,
                          describe() + ": the range is not inside one device allocation");
    std::memset(p, value, bytes);
  }
};

}  // namespace

std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[4096];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

std::mutex g_diag_mutex;  // guards State::diagnostic (callers may hold State::mutex)

void set_diagnostic(const std::string& msg) {
  std::lock_guard<std::mutex> lock(g_diag_mutex);
  st().diagnostic = msg;
}

void record_fault(cudaError_t code, const std::string& msg) {
  std::fprintf(stderr, "emu: error: %s\n", msg.c_str());
  set_diagnostic(msg);
  if (st().sticky == cudaSuccess) st().sticky = code;
}

cudaError_t record_error(cudaError_t code, const std::string& msg) {
  std::fprintf(stderr, "emu: error: %s\n", msg.c_str());
  set_diagnostic(msg);
  tl_last_error = code;
  return code;
}

cudaError_t sticky_error() { return st().sticky; }

void note_launch() {
  std::lock_guard<std::mutex> lock(st().mutex);
  if (st().profiling) st().profiler.launches_inside++;
}

ProfilerRecord profiler_record() {
  std::lock_guard<std::mutex> lock(st().mutex);
  return st().profiler;
}

void reset_profiler_record() {
  std::lock_guard<std::mutex> lock(st().mutex);
  st().profiler = ProfilerRecord{};
  st().profiling = false;
}

void clear_fault() {
  st().sticky = cudaSuccess;
  tl_last_error = cudaSuccess;
}

const char* last_diagnostic() {
  static thread_local std::string copy;
  std::lock_guard<std::mutex> lock(g_diag_mutex);
  copy = st().diagnostic;
  return copy.c_str();
}

void check_guards(const char* after) {
  if (!kUseGuards) return;
  std::lock_guard<std::mutex> lock(st().mutex);
  for (const auto& [user, al] : st().allocs) {
    std::string where;
    if (!guards_intact(user, al, &where)) {
      const std::string msg =
          format("out-of-bounds write: %s %s was written by `%s` (rerun with EMU_SAN=1 "
                 "for the faulting source line)",
                 where.c_str(), describe(user, al).c_str(), after);
      std::fprintf(stderr, "emu: error: %s\n", msg.c_str());
      set_diagnostic(msg);
      if (st().sticky == cudaSuccess) st().sticky = cudaErrorIllegalAddress;
      std::memset(reinterpret_cast<unsigned char*>(user) - kGuard, kGuardByte, kGuard);
      std::memset(reinterpret_cast<unsigned char*>(user) + al.bytes, kGuardByte, kGuard);
    }
  }
}

int max_dynamic_smem(const void* fn) {
  std::lock_guard<std::mutex> lock(st().mutex);
  auto it = st().smem_optin.find(fn);
  return it == st().smem_optin.end() ? 0 : it->second;
}

bool stream_valid(cudaStream_t s) {
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return true;
  std::lock_guard<std::mutex> lock(st().mutex);
  return st().streams.count(s) != 0;
}

bool device_range_ok(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(st().mutex);
  return find_alloc(p, bytes) != nullptr;
}

bool event_valid(cudaEvent_t e) {
  std::lock_guard<std::mutex> lock(st().mutex);
  return st().events.count(e) != 0;
}

const cudaDeviceProp& device_properties() {
  static const cudaDeviceProp p = [] {
    cudaDeviceProp d{};
    std::snprintf(d.name, sizeof d.name, "NVIDIA H100 80GB HBM3 (emulated)");
    d.totalGlobalMem = 85029158912ull;
    d.sharedMemPerBlock = 48 * 1024;
    d.regsPerBlock = 65536;
    d.warpSize = 32;
    d.maxThreadsPerBlock = 1024;
    d.maxThreadsDim[0] = 1024, d.maxThreadsDim[1] = 1024, d.maxThreadsDim[2] = 64;
    d.maxGridSize[0] = 2147483647, d.maxGridSize[1] = 65535, d.maxGridSize[2] = 65535;
    d.clockRate = 1980000;
    d.major = 9;
    d.minor = 0;
    d.multiProcessorCount = 132;
    d.memoryBusWidth = 5120;
    d.l2CacheSize = 50 * 1024 * 1024;
    d.maxThreadsPerMultiProcessor = 2048;
    d.sharedMemPerMultiprocessor = 228 * 1024;
    d.sharedMemPerBlockOptin = 227 * 1024;
    d.regsPerMultiprocessor = 65536;
    return d;
  }();
  return p;
}

cudaError_t func_set_attribute(const void* fn, cudaFuncAttribute attr, int value) {
  if (st().sticky != cudaSuccess) return st().sticky;
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || static_cast<size_t>(value) > device_properties().sharedMemPerBlockOptin)
      return record_error(cudaErrorInvalidValue,
                          format("cudaFuncSetAttribute: %d bytes of dynamic shared memory exceed "
                                 "the device's %zu per block",
                                 value, device_properties().sharedMemPerBlockOptin));
    std::lock_guard<std::mutex> lock(st().mutex);
    st().smem_optin[fn] = value;
    return cudaSuccess;
  }
  if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) return cudaSuccess;
  return record_error(cudaErrorInvalidValue,
                      format("cudaFuncSetAttribute: attribute %d is not modelled", int(attr)));
}

}  // namespace emu

using emu::format;
using emu::st;

// ---- memory

cudaError_t cudaMalloc(void** p, size_t bytes) {
  emu::banner();
  if (p == nullptr) return emu::ret(cudaErrorInvalidValue);
  *p = nullptr;
  if (st().sticky != cudaSuccess) return st().sticky;
  if (emu::unsafe_call("cudaMalloc") != cudaSuccess) return cudaErrorStreamCaptureUnsupported;
  const size_t size = std::max<size_t>(bytes, 1);
  std::lock_guard<std::mutex> lock(st().mutex);
  if (st().allocated + size > emu::device_properties().totalGlobalMem)
    return emu::ret(cudaErrorMemoryAllocation);
  const size_t guard = emu::kUseGuards ? emu::kGuard : 0;
  void* base = nullptr;
  if (posix_memalign(&base, 256, size + 2 * guard) != 0) return emu::ret(cudaErrorMemoryAllocation);
  unsigned char* user = static_cast<unsigned char*>(base) + guard;
  if (guard > 0) {
    std::memset(base, emu::kGuardByte, guard);
    std::memset(user + size, emu::kGuardByte, guard);
  }
  std::memset(user, 0xff, size);
  st().allocs[reinterpret_cast<uintptr_t>(user)] = emu::Alloc{size, st().next_id++, base};
  st().allocated += size;
  *p = user;
  return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
  if (p == nullptr) return emu::ret(cudaSuccess);
  if (emu::unsafe_call("cudaFree") != cudaSuccess) return cudaErrorStreamCaptureUnsupported;
  std::lock_guard<std::mutex> lock(st().mutex);
  auto it = st().allocs.find(reinterpret_cast<uintptr_t>(p));
  if (it == st().allocs.end()) {
    std::fprintf(stderr, "emu: error: cudaFree(%p): not the start of a live device allocation\n", p);
    emu::set_diagnostic("cudaFree of a pointer that is not a live allocation");
    return emu::ret(cudaErrorInvalidValue);
  }
  std::string where;
  if (emu::kUseGuards && !emu::guards_intact(it->first, it->second, &where)) {
    const std::string msg = format("out-of-bounds write: %s %s was written (found at cudaFree)",
                                   where.c_str(), emu::describe(it->first, it->second).c_str());
    std::fprintf(stderr, "emu: error: %s\n", msg.c_str());
    emu::set_diagnostic(msg);
    if (st().sticky == cudaSuccess) st().sticky = cudaErrorIllegalAddress;
  }
  st().allocated -= it->second.bytes;
  std::free(it->second.base);
  st().allocs.erase(it);
  return emu::ret(cudaSuccess);
}

cudaError_t cudaMallocHost(void** p, size_t bytes) {
  if (p == nullptr) return emu::ret(cudaErrorInvalidValue);
  if (emu::unsafe_call("cudaMallocHost") != cudaSuccess) return cudaErrorStreamCaptureUnsupported;
  *p = std::malloc(std::max<size_t>(bytes, 1));
  return emu::ret(*p != nullptr ? cudaSuccess : cudaErrorMemoryAllocation);
}
cudaError_t cudaFreeHost(void* p) {
  if (emu::unsafe_call("cudaFreeHost") != cudaSuccess) return cudaErrorStreamCaptureUnsupported;
  std::free(p);
  return emu::ret(cudaSuccess);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  if (st().sticky != cudaSuccess) return st().sticky;
  if (!emu::stream_valid(stream)) return emu::ret(cudaErrorInvalidResourceHandle);
  if (bytes == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) return emu::ret(cudaErrorInvalidValue);
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
    return emu::ret(cudaErrorInvalidMemcpyDirection);
  const std::string why = emu::copy_problem(dst, src, bytes, kind);
  if (!why.empty()) return emu::record_error(cudaErrorInvalidValue, "cudaMemcpy: " + why);
  bool captured = false;
  const cudaError_t e = emu::enqueue(stream, "cudaMemcpyAsync", [&] {
    // Until the graph runs, the host destination holds nothing the copy wrote: 0xff bytes
    // (NaN), so a host read before cudaGraphLaunch and a synchronisation shows.
    if (emu::writes_host(dst, kind)) std::memset(dst, 0xff, bytes);
    return std::make_shared<const emu::CopyOp>(dst, src, bytes, kind);
  }, &captured);
  if (e != cudaSuccess || captured) return e;
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

// Synchronous: on the legacy stream, and it synchronises the host, which stream capture calls
// potentially unsafe.
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (st().sticky != cudaSuccess) return st().sticky;
  bool captured = false;  // the legacy stream never captures
  cudaError_t e = emu::enqueue(nullptr, "cudaMemcpy", nullptr, &captured);
  if (e == cudaSuccess) e = emu::unsafe_call("cudaMemcpy");
  if (e != cudaSuccess) return e;
  return cudaMemcpyAsync(dst, src, bytes, kind, nullptr);
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  if (st().sticky != cudaSuccess) return st().sticky;
  if (!emu::stream_valid(stream)) return emu::ret(cudaErrorInvalidResourceHandle);
  if (bytes == 0) return cudaSuccess;
  std::string why;
  {
    std::lock_guard<std::mutex> lock(st().mutex);
    why = emu::device_range_problem(p, bytes, "destination");
  }
  if (!why.empty()) return emu::record_error(cudaErrorInvalidValue, "cudaMemset: " + why);
  bool captured = false;
  const cudaError_t e = emu::enqueue(stream, "cudaMemsetAsync", [&] {
    return std::make_shared<const emu::SetOp>(p, value, bytes);
  }, &captured);
  if (e != cudaSuccess || captured) return e;
  std::memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) { return cudaMemsetAsync(p, value, bytes, nullptr); }

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) return emu::ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(st().mutex);
  *total_bytes = emu::device_properties().totalGlobalMem;
  *free_bytes = *total_bytes - st().allocated;
  return emu::ret(cudaSuccess);
}

// ---- device

cudaError_t cudaGetDeviceCount(int* count) {
  emu::banner();
  if (count == nullptr) return emu::ret(cudaErrorInvalidValue);
  *count = 1;
  return emu::ret(cudaSuccess);
}
cudaError_t cudaSetDevice(int device) {
  emu::banner();
  return emu::ret(device == 0 ? cudaSuccess : cudaErrorInvalidDevice);
}
cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return emu::ret(cudaErrorInvalidValue);
  *device = 0;
  return emu::ret(cudaSuccess);
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return emu::ret(cudaErrorInvalidValue);
  if (device != 0) return emu::ret(cudaErrorInvalidDevice);
  *prop = emu::device_properties();
  return emu::ret(cudaSuccess);
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (value == nullptr) return emu::ret(cudaErrorInvalidValue);
  if (device != 0) return emu::ret(cudaErrorInvalidDevice);
  const cudaDeviceProp& p = emu::device_properties();
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = int(p.sharedMemPerBlock); break;
    case cudaDevAttrWarpSize: *value = p.warpSize; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = int(p.sharedMemPerMultiprocessor); break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = int(p.sharedMemPerBlockOptin); break;
    default:
      return emu::record_error(cudaErrorInvalidValue,
                               format("cudaDeviceGetAttribute: attribute %d is not modelled", int(attr)));
  }
  return emu::ret(cudaSuccess);
}
cudaError_t cudaDeviceSynchronize() {
  if (st().sticky != cudaSuccess) return st().sticky;
  return emu::device_sync_call("cudaDeviceSynchronize");
}
cudaError_t cudaDeviceReset() {
  emu::graphs_reset();
  std::lock_guard<std::mutex> lock(st().mutex);
  for (auto& [user, al] : st().allocs) std::free(al.base);
  st().allocs.clear();
  st().allocated = 0;
  st().smem_optin.clear();
  st().sticky = cudaSuccess;
  emu::tl_last_error = cudaSuccess;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return emu::ret(cudaErrorInvalidValue);
  *version = 13000;
  return emu::ret(cudaSuccess);
}
cudaError_t cudaDriverGetVersion(int* version) { return cudaRuntimeGetVersion(version); }

// ---- streams and events

struct CUstream_st {
  unsigned flags;
};

bool emu::stream_blocking(cudaStream_t s) {
  if (s == nullptr || s == cudaStreamLegacy) return false;  // the legacy stream itself
  if (s == cudaStreamPerThread) return true;  // synchronises with the legacy stream
  std::lock_guard<std::mutex> lock(st().mutex);
  return st().streams.count(s) != 0 && (s->flags & cudaStreamNonBlocking) == 0;
}
struct CUevent_st {
  double ms = -1.0;  // host time of the last record, -1 before any
};

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  if (stream == nullptr || flags > 1) return emu::ret(cudaErrorInvalidValue);
  if (st().sticky != cudaSuccess) return st().sticky;
  *stream = new CUstream_st{flags};
  std::lock_guard<std::mutex> lock(st().mutex);
  st().streams.insert(*stream);
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, 0); }
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (emu::stream_in_capture(stream))
    return emu::record_error(cudaErrorStreamCaptureUnsupported,
                             format("cudaStreamDestroy: stream %p is part of a stream capture; end "
                                    "the capture (cudaStreamEndCapture) first",
                                    static_cast<void*>(stream)));
  std::lock_guard<std::mutex> lock(st().mutex);
  if (st().streams.erase(stream) == 0) return emu::ret(cudaErrorInvalidResourceHandle);
  delete stream;
  return emu::ret(cudaSuccess);
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (!emu::stream_valid(stream)) return emu::ret(cudaErrorInvalidResourceHandle);
  if (st().sticky != cudaSuccess) return st().sticky;
  return emu::stream_sync_call(stream, "cudaStreamSynchronize");
}
cudaError_t cudaStreamQuery(cudaStream_t stream) {  // all work is done when enqueued
  if (!emu::stream_valid(stream)) return emu::ret(cudaErrorInvalidResourceHandle);
  if (st().sticky != cudaSuccess) return st().sticky;
  return emu::stream_sync_call(stream, "cudaStreamQuery");
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  if (!emu::stream_valid(stream) || !emu::event_valid(event))
    return emu::ret(cudaErrorInvalidResourceHandle);
  if (flags > cudaEventWaitExternal) return emu::ret(cudaErrorInvalidValue);
  if (st().sticky != cudaSuccess) return st().sticky;
  return emu::stream_wait_event(stream, event, flags);
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  if (event == nullptr) return emu::ret(cudaErrorInvalidValue);
  *event = new CUevent_st;
  std::lock_guard<std::mutex> lock(st().mutex);
  st().events.insert(*event);
  return emu::ret(cudaSuccess);
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  {
    std::lock_guard<std::mutex> lock(st().mutex);
    if (st().events.erase(event) == 0) return emu::ret(cudaErrorInvalidResourceHandle);
  }
  emu::event_destroyed(event);
  delete event;
  return emu::ret(cudaSuccess);
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  {
    std::lock_guard<std::mutex> lock(st().mutex);
    if (st().events.count(event) == 0) return emu::ret(cudaErrorInvalidResourceHandle);
  }
  if (!emu::stream_valid(stream)) return emu::ret(cudaErrorInvalidResourceHandle);
  if (st().sticky != cudaSuccess) return st().sticky;
  bool captured = false;
  const cudaError_t e = emu::event_record(event, stream, &captured);
  if (e != cudaSuccess) return e;
  if (captured) {
    event->ms = -1.0;  // a point of the capture: no time until it is recorded outside one
    return cudaSuccess;
  }
  event->ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now().time_since_epoch()).count();
  return emu::ret(cudaSuccess);
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!emu::event_valid(event)) return emu::ret(cudaErrorInvalidResourceHandle);
  if (st().sticky != cudaSuccess) return st().sticky;
  return emu::event_sync_call(event, "cudaEventSynchronize", false);
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (!emu::event_valid(event)) return emu::ret(cudaErrorInvalidResourceHandle);
  if (st().sticky != cudaSuccess) return st().sticky;
  return emu::event_sync_call(event, "cudaEventQuery", false);
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return emu::ret(cudaErrorInvalidValue);
  {
    std::lock_guard<std::mutex> lock(st().mutex);
    if (!st().events.count(start) || !st().events.count(end)) return emu::ret(cudaErrorInvalidResourceHandle);
  }
  for (cudaEvent_t e : {start, end}) {
    const cudaError_t err = emu::event_sync_call(e, "cudaEventElapsedTime", true);
    if (err != cudaSuccess) return err;
  }
  if (start->ms < 0 || end->ms < 0) return emu::ret(cudaErrorInvalidResourceHandle);
  *ms = static_cast<float>(end->ms - start->ms);
  return emu::ret(cudaSuccess);
}

// ---- the profiler's region (cuda_profiler_api.h)

cudaError_t cudaProfilerStart() {
  std::lock_guard<std::mutex> lock(st().mutex);
  st().profiling = true;
  return emu::ret(cudaSuccess);
}
cudaError_t cudaProfilerStop() {
  std::lock_guard<std::mutex> lock(st().mutex);
  if (st().profiling) st().profiler.regions++;
  else st().profiler.unmatched_stops++;
  st().profiling = false;
  return emu::ret(cudaSuccess);
}

// ---- errors

cudaError_t cudaGetLastError() {
  if (st().sticky != cudaSuccess) return st().sticky;
  const cudaError_t e = emu::tl_last_error;
  emu::tl_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() {
  return st().sticky != cudaSuccess ? st().sticky : emu::tl_last_error;
}

namespace {
struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};
const ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidSymbol, "cudaErrorInvalidSymbol", "invalid device symbol"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorNoKernelImageForDevice, "cudaErrorNoKernelImageForDevice", "no kernel image is available for execution on the device"},
    {cudaErrorUnsupportedPtxVersion, "cudaErrorUnsupportedPtxVersion", "the provided PTX was compiled with an unsupported toolchain."},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {cudaErrorLaunchTimeout, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
    {cudaErrorIllegalInstruction, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureMerge, "cudaErrorStreamCaptureMerge", "operation would result in a merge of separate capture sequences"},
    {cudaErrorStreamCaptureUnmatched, "cudaErrorStreamCaptureUnmatched", "capture was not ended in the same stream as it began"},
    {cudaErrorStreamCaptureUnjoined, "cudaErrorStreamCaptureUnjoined", "capturing stream has unjoined work"},
    {cudaErrorStreamCaptureIsolation, "cudaErrorStreamCaptureIsolation", "dependency created on uncaptured work in another stream"},
    {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit", "operation would make the legacy stream depend on a capturing blocking stream"},
    {cudaErrorCapturedEvent, "cudaErrorCapturedEvent", "operation not permitted on an event last recorded in a capturing stream"},
    {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread", "attempt to terminate a thread-local capture sequence from another thread"},
    {cudaErrorGraphExecUpdateFailure, "cudaErrorGraphExecUpdateFailure", "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};
const ErrorText* find_error(cudaError_t e) {
  for (const ErrorText& t : kErrors)
    if (t.code == e) return &t;
  return nullptr;
}
}  // namespace

const char* cudaGetErrorName(cudaError_t err) {
  const ErrorText* t = find_error(err);
  return t ? t->name : "cudaErrorUnknown";
}
const char* cudaGetErrorString(cudaError_t err) {
  const ErrorText* t = find_error(err);
  return t ? t->text : "unrecognized error code";
}
