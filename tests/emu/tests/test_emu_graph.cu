// The emulated stream capture and graphs (tests/emu/graph.cpp), built only by `make emu`: a
// captured step replayed with its per-step values read from device memory, a cuBLAS GEMM in a
// graph, the two ways of updating a graph's kernel arguments, and planted bugs, each caught
// with the real runtime's error: work read before its graph ran, calls stream capture forbids,
// a capture ended on the wrong stream or thread, a destroyed executable graph, memory freed
// under a graph. Every check has a correct twin. Sizes are small: the file runs in about a
// second.
#include <gtest/gtest.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

// ---- helpers

template <typename T>
struct Dev {
  T* p = nullptr;
  size_t n = 0;
  explicit Dev(size_t count) : n(count) {
    EXPECT_EQ(cudaMalloc(&p, count * sizeof(T)), cudaSuccess);
  }
  ~Dev() { cudaFree(p); }
  std::vector<T> get() const {
    std::vector<T> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  void put(const std::vector<T>& h) {
    ASSERT_EQ(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  void poison() { ASSERT_EQ(cudaMemset(p, 0xff, n * sizeof(T)), cudaSuccess); }
};

struct Stream {
  cudaStream_t s = nullptr;
  explicit Stream(unsigned flags = cudaStreamNonBlocking) {
    EXPECT_EQ(cudaStreamCreateWithFlags(&s, flags), cudaSuccess);
  }
  ~Stream() { cudaStreamDestroy(s); }
};

struct Event {
  cudaEvent_t e = nullptr;
  Event() { EXPECT_EQ(cudaEventCreate(&e), cudaSuccess); }
  ~Event() { cudaEventDestroy(e); }
};

// `err` is `code` and the emulator's message says `words`; the last error is cleared.
void expect_error(cudaError_t err, cudaError_t code, const std::string& words) {
  const std::string msg = emu::last_diagnostic();
  EXPECT_EQ(err, code) << cudaGetErrorName(err) << ": " << msg;
  EXPECT_NE(msg.find(words), std::string::npos) << "message: " << msg;
  cudaGetLastError();
}

// Ends the capture on s, expecting `code` (a graph only on success); returns the graph.
cudaGraph_t end_capture(cudaStream_t s, cudaError_t code) {
  cudaGraph_t g = reinterpret_cast<cudaGraph_t>(0x1);
  EXPECT_EQ(cudaStreamEndCapture(s, &g), code);
  EXPECT_EQ(g == nullptr, code != cudaSuccess);
  cudaGetLastError();
  return g;
}

cudaGraphExec_t instantiate(cudaGraph_t g) {
  cudaGraphExec_t x = nullptr;
  EXPECT_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  return x;
}

bool all_nan(const std::vector<float>& v) {
  for (float f : v)
    if (!std::isnan(f)) return false;
  return true;
}

// The kernels' noise: a hash of (seed, i) in [-1, 1), the same function on both sides.
__host__ __device__ inline float hash_noise(unsigned seed, unsigned i) {
  unsigned h = seed * 0x9e3779b9u ^ (i + 0x7f4a7c15u) * 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

// ---- a captured step: per-step values from device memory, kernel arguments by value

struct StepValues {
  unsigned seed;
  float scale;
  float coef;
};

__global__ void perturb_kernel(float* y, const float* x, const StepValues* v, int n, float bias) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + v->scale * hash_noise(v->seed, static_cast<unsigned>(i)) + bias;
}

// loss = coef * sum(y^2), one warp.
__global__ void loss_kernel(float* loss, const float* y, const StepValues* v, int n) {
  float s = 0.0f;
  for (int i = threadIdx.x; i < n; i += 32) s += y[i] * y[i];
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (threadIdx.x == 0) *loss = v->coef * s;
}

TEST(EmuGraph, CapturedStepReplaysWithValuesFromDeviceMemory) {
  const int n = 1000;
  Stream s;
  Dev<float> x(n), y(n), loss(1);
  Dev<StepValues> values(1);
  float* host_loss = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&host_loss), sizeof(float)), cudaSuccess);
  float bias = 0.25f;
  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  perturb_kernel<<<(n + 127) / 128, 128, 0, s.s>>>(y.p, x.p, values.p, n, bias);
  loss_kernel<<<1, 32, 0, s.s>>>(loss.p, y.p, values.p, n);
  ASSERT_EQ(cudaMemcpyAsync(host_loss, loss.p, sizeof(float), cudaMemcpyDeviceToHost, s.s),
            cudaSuccess);
  cudaGraph_t graph = end_capture(s.s, cudaSuccess);
  bias = 99.0f;  // arguments are the capture's: the graph keeps 0.25
  cudaGraphExec_t exec = instantiate(graph);
  size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 3u);

  std::mt19937 rng(41);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform(0.5f, 2.0f);
  for (int step = 0; step < 4; ++step) {
    std::vector<float> hx(n);
    for (float& v : hx) v = normal(rng);
    const StepValues v{static_cast<unsigned>(rng()), uniform(rng), uniform(rng)};
    x.put(hx);
    values.put({v});  // the step's values, written between replays
    y.poison();
    loss.poison();
    *host_loss = 0.0f;
    ASSERT_EQ(cudaGraphLaunch(exec, s.s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s.s), cudaSuccess);
    const std::vector<float> got = y.get();
    double ref_loss = 0.0;
    for (int i = 0; i < n; ++i) {
      const float want = hx[i] + v.scale * hash_noise(v.seed, static_cast<unsigned>(i)) + 0.25f;
      ASSERT_EQ(got[i], want) << "step " << step << " i " << i;  // the same float operations
      ref_loss += static_cast<double>(want) * want;
    }
    ref_loss *= v.coef;
    // fp32 sum of 1000 squares in another order: 1e-5 relative covers its rounding
    EXPECT_NEAR(*host_loss, ref_loss, 1e-5 * ref_loss) << "step " << step;
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(host_loss), cudaSuccess);
}

// ---- planted bug: reading what a capture recorded before its graph ran

__global__ void fill_kernel(float* out, int n, float value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}

TEST(EmuGraph, CapturedWorkRunsOnlyWhenTheGraphLaunches) {
  const int n = 256;
  Stream s;
  Dev<float> y(n);
  std::vector<float> host(n, 1.0f);
  // Correct twin: outside a capture the kernel and the copy run at once.
  fill_kernel<<<2, 128, 0, s.s>>>(y.p, n, 2.0f);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), y.p, n * sizeof(float), cudaMemcpyDeviceToHost, s.s),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s.s), cudaSuccess);
  EXPECT_EQ(host, std::vector<float>(n, 2.0f));

  y.poison();
  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  fill_kernel<<<2, 128, 0, s.s>>>(y.p, n, 3.0f);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), y.p, n * sizeof(float), cudaMemcpyDeviceToHost, s.s),
            cudaSuccess);
  // The bug: the loss read back inside the captured step, before the graph ran.
  EXPECT_TRUE(all_nan(host)) << "a captured copy to the host must not have happened yet";
  cudaGraph_t graph = end_capture(s.s, cudaSuccess);
  EXPECT_TRUE(all_nan(y.get())) << "a captured kernel must not have run";
  cudaGraphExec_t exec = instantiate(graph);
  ASSERT_EQ(cudaGraphLaunch(exec, s.s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s.s), cudaSuccess);
  EXPECT_EQ(host, std::vector<float>(n, 3.0f));
  EXPECT_EQ(y.get(), std::vector<float>(n, 3.0f));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// ---- calls stream capture forbids

struct Forbidden {
  const char* what;
  cudaStreamCaptureMode mode;
  unsigned stream_flags;
  cudaError_t code;
  const char* words;
};

// Begins a capture on a fresh stream, records one kernel, makes call(s, event recorded in the
// capture): it must fail with f.code and invalidate the capture (later work on the stream fails,
// cudaStreamEndCapture returns cudaErrorStreamCaptureInvalidated and no graph).
template <typename F>
void expect_forbidden(const Forbidden& f, F call) {
  SCOPED_TRACE(f.what);
  Stream s(f.stream_flags);
  Event ev;
  Dev<float> y(64);
  ASSERT_EQ(cudaStreamBeginCapture(s.s, f.mode), cudaSuccess);
  fill_kernel<<<1, 64, 0, s.s>>>(y.p, 64, 1.0f);
  ASSERT_EQ(cudaEventRecord(ev.e, s.s), cudaSuccess);
  expect_error(call(s.s, ev.e), f.code, f.words);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  ASSERT_EQ(cudaStreamIsCapturing(s.s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusInvalidated);
  fill_kernel<<<1, 64, 0, s.s>>>(y.p, 64, 1.0f);
  expect_error(cudaGetLastError(), cudaErrorStreamCaptureInvalidated, "was invalidated by");
  end_capture(s.s, cudaErrorStreamCaptureInvalidated);
  ASSERT_EQ(cudaStreamIsCapturing(s.s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
}

TEST(EmuGraph, CallsStreamCaptureForbidsFailAndInvalidateIt) {
  const unsigned nb = cudaStreamNonBlocking, blocking = cudaStreamDefault;
  const auto global = cudaStreamCaptureModeGlobal;
  Dev<float> d(16);
  float h[16] = {};
  expect_forbidden({"sync of the capturing stream", global, nb, cudaErrorStreamCaptureUnsupported,
                    "cannot be synchronised"},
                   [](cudaStream_t s, cudaEvent_t) { return cudaStreamSynchronize(s); });
  expect_forbidden({"query of the capturing stream", cudaStreamCaptureModeRelaxed, nb,
                    cudaErrorStreamCaptureUnsupported, "cudaStreamQuery of stream"},
                   [](cudaStream_t s, cudaEvent_t) { return cudaStreamQuery(s); });
  expect_forbidden({"device sync", cudaStreamCaptureModeRelaxed, nb,
                    cudaErrorStreamCaptureUnsupported, "the device cannot be synchronised"},
                   [](cudaStream_t, cudaEvent_t) { return cudaDeviceSynchronize(); });
  expect_forbidden(
      {"cudaMalloc", global, nb, cudaErrorStreamCaptureUnsupported, "cudaMalloc while"},
      [](cudaStream_t, cudaEvent_t) {
        void* p = nullptr;
        return cudaMalloc(&p, 64);
      });
  expect_forbidden({"cudaFree", cudaStreamCaptureModeThreadLocal, nb,
                    cudaErrorStreamCaptureUnsupported, "cudaFree while"},
                   [&](cudaStream_t, cudaEvent_t) { return cudaFree(d.p); });
  expect_forbidden(
      {"synchronous copy", global, nb, cudaErrorStreamCaptureUnsupported, "cudaMemcpy while"},
      [&](cudaStream_t, cudaEvent_t) {
        return cudaMemcpy(h, d.p, sizeof h, cudaMemcpyDeviceToHost);
      });
  expect_forbidden({"synchronous copy, blocking stream", cudaStreamCaptureModeRelaxed, blocking,
                    cudaErrorStreamCaptureImplicit, "the legacy stream would wait for it"},
                   [&](cudaStream_t, cudaEvent_t) {
                     return cudaMemcpy(d.p, h, sizeof h, cudaMemcpyHostToDevice);
                   });
  expect_forbidden({"launch on the legacy stream, blocking stream", global, blocking,
                    cudaErrorStreamCaptureImplicit, "kernel launch on the legacy stream"},
                   [&](cudaStream_t, cudaEvent_t) {
                     fill_kernel<<<1, 16>>>(d.p, 16, 1.0f);
                     return cudaGetLastError();
                   });
  expect_forbidden({"sync of an event recorded in the capture", cudaStreamCaptureModeRelaxed, nb,
                    cudaErrorCapturedEvent, "last recorded in the capture"},
                   [](cudaStream_t, cudaEvent_t e) { return cudaEventSynchronize(e); });
  expect_forbidden({"wait on an event recorded outside the capture", global, nb,
                    cudaErrorStreamCaptureIsolation, "a dependency on uncaptured work"},
                   [](cudaStream_t s, cudaEvent_t) {
                     Event outside;
                     EXPECT_EQ(cudaEventRecord(outside.e, nullptr), cudaSuccess);
                     return cudaStreamWaitEvent(s, outside.e, 0);
                   });
  expect_forbidden({"the legacy stream waiting on a captured event", global, nb,
                    cudaErrorStreamCaptureUnsupported, "it cannot join a capture"},
                   [](cudaStream_t, cudaEvent_t e) { return cudaStreamWaitEvent(nullptr, e, 0); });
  // Correct twins: the same calls outside a capture.
  EXPECT_EQ(cudaMemcpy(h, d.p, sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(EmuGraph, CaptureModesDecideWhatIsUnsafe) {
  Stream s;
  // relaxed capture: allocating during it is the caller's business
  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeRelaxed), cudaSuccess);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 64), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  cudaGraph_t g = end_capture(s.s, cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
  // global capture, this thread switched to relaxed: permitted; switched back: forbidden
  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(mode, cudaStreamCaptureModeGlobal);
  EXPECT_EQ(cudaMalloc(&p, 64), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  g = end_capture(s.s, cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
  // another thread in global mode: a thread-local capture does not concern it, a global one does
  for (auto m : {cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeGlobal}) {
    ASSERT_EQ(cudaStreamBeginCapture(s.s, m), cudaSuccess);
    cudaError_t other = cudaSuccess;
    std::thread([&] {
      void* q = nullptr;
      other = cudaMalloc(&q, 64);
      if (other == cudaSuccess) cudaFree(q);
      cudaGetLastError();
    }).join();
    const bool global = m == cudaStreamCaptureModeGlobal;
    EXPECT_EQ(other, global ? cudaErrorStreamCaptureUnsupported : cudaSuccess) << int(m);
    g = end_capture(s.s, global ? cudaErrorStreamCaptureInvalidated : cudaSuccess);
    if (g != nullptr) cudaGraphDestroy(g);
  }
}

// ---- where a capture begins and ends; forks and joins

TEST(EmuGraph, CaptureEndsOnItsOwnStreamAndThread) {
  Stream s1, s2, s3;
  Dev<float> a(32), b(32);
  Event fork, join;
  expect_error(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal),
               cudaErrorStreamCaptureUnsupported, "the legacy (NULL) stream cannot capture");
  ASSERT_EQ(cudaStreamBeginCapture(s1.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  expect_error(cudaStreamBeginCapture(s1.s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState,
               "already capturing");
  cudaGraph_t g = nullptr;
  expect_error(cudaStreamEndCapture(s2.s, &g), cudaErrorIllegalState, "is not capturing");
  expect_error(cudaStreamDestroy(s1.s), cudaErrorStreamCaptureUnsupported, "end the capture");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id1 = 0, id2 = 0;
  ASSERT_EQ(cudaStreamGetCaptureInfo(s1.s, &status, &id1), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive) << "the wrong end left the capture alone";
  // the wrong thread
  cudaError_t other = cudaSuccess;
  std::thread([&] {
    cudaGraph_t tg = nullptr;
    other = cudaStreamEndCapture(s1.s, &tg);
  }).join();
  EXPECT_EQ(other, cudaErrorStreamCaptureWrongThread);
  // a stream that joined (fork) cannot end it; work on it must be joined back
  fill_kernel<<<1, 32, 0, s1.s>>>(a.p, 32, 1.0f);
  ASSERT_EQ(cudaEventRecord(fork.e, s1.s), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(s2.s, fork.e, 0), cudaSuccess);
  ASSERT_EQ(cudaStreamGetCaptureInfo(s2.s, &status, &id2), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  EXPECT_EQ(id2, id1) << "s2 joined s1's capture";
  fill_kernel<<<1, 32, 0, s2.s>>>(b.p, 32, 2.0f);
  expect_error(cudaStreamEndCapture(s2.s, &g), cudaErrorStreamCaptureUnmatched,
               "end it where it began");
  // another capture cannot wait on this one's event: the two would merge
  ASSERT_EQ(cudaStreamBeginCapture(s3.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  expect_error(cudaStreamWaitEvent(s3.s, fork.e, 0), cudaErrorStreamCaptureMerge, "would merge");
  end_capture(s3.s, cudaErrorStreamCaptureInvalidated);
  end_capture(s1.s, cudaErrorStreamCaptureInvalidated);  // merging invalidated both

  // Unjoined work: the fork's kernel is never waited for.
  ASSERT_EQ(cudaStreamBeginCapture(s1.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(fork.e, s1.s), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(s2.s, fork.e, 0), cudaSuccess);
  fill_kernel<<<1, 32, 0, s2.s>>>(b.p, 32, 2.0f);
  expect_error(cudaStreamEndCapture(s1.s, &g), cudaErrorStreamCaptureUnjoined,
               "has work no stream of it waited for");
  ASSERT_EQ(cudaStreamIsCapturing(s2.s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone) << "the joined stream left the capture too";

  // Correct twin: fork, join, end where it began; the graph runs both branches.
  a.poison();
  b.poison();
  ASSERT_EQ(cudaStreamBeginCapture(s1.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(fork.e, s1.s), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(s2.s, fork.e, 0), cudaSuccess);
  fill_kernel<<<1, 32, 0, s2.s>>>(b.p, 32, 2.0f);
  ASSERT_EQ(cudaEventRecord(join.e, s2.s), cudaSuccess);
  fill_kernel<<<1, 32, 0, s1.s>>>(a.p, 32, 1.0f);
  ASSERT_EQ(cudaStreamWaitEvent(s1.s, join.e, 0), cudaSuccess);
  g = end_capture(s1.s, cudaSuccess);
  cudaGraphExec_t exec = instantiate(g);
  ASSERT_EQ(cudaGraphLaunch(exec, s3.s), cudaSuccess);
  EXPECT_EQ(a.get(), std::vector<float>(32, 1.0f));
  EXPECT_EQ(b.get(), std::vector<float>(32, 2.0f));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  // A relaxed capture may end on another thread.
  ASSERT_EQ(cudaStreamBeginCapture(s1.s, cudaStreamCaptureModeRelaxed), cudaSuccess);
  std::thread([&] { other = cudaStreamEndCapture(s1.s, &g); }).join();
  EXPECT_EQ(other, cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
}

// ---- executable graphs' lifetime

TEST(EmuGraph, DestroyedExecutableGraphIsRefused) {
  Stream s;
  Dev<float> y(32);
  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  fill_kernel<<<1, 32, 0, s.s>>>(y.p, 32, 5.0f);
  cudaGraph_t under_capture = nullptr;
  cudaStreamCaptureStatus status;
  ASSERT_EQ(cudaStreamGetCaptureInfo(s.s, &status, nullptr, &under_capture), cudaSuccess);
  expect_error(cudaGraphDestroy(under_capture), cudaErrorInvalidValue, "end it first");
  cudaGraph_t g = end_capture(s.s, cudaSuccess);
  EXPECT_EQ(g, under_capture);
  cudaGraphExec_t x = nullptr;
  expect_error(cudaGraphInstantiate(&x, g, cudaGraphInstantiateFlagDeviceLaunch),
               cudaErrorNotSupported, "NOT MODELLED");
  expect_error(cudaGraphInstantiate(&x, g, cudaGraphInstantiateFlagUpload), cudaErrorInvalidValue,
               "cudaGraphInstantiateWithParams only");
  cudaGraphExec_t exec = instantiate(g);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);  // the executable graph keeps its own nodes
  y.poison();
  ASSERT_EQ(cudaGraphLaunch(exec, s.s), cudaSuccess);
  EXPECT_EQ(y.get(), std::vector<float>(32, 5.0f)) << "correct twin";
  ASSERT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  y.poison();
  expect_error(cudaGraphLaunch(exec, s.s), cudaErrorInvalidValue, "not a live executable graph");
  EXPECT_TRUE(all_nan(y.get())) << "a destroyed graph ran";
  expect_error(cudaGraphExecDestroy(exec), cudaErrorInvalidValue, "not a live executable graph");
  expect_error(cudaGraphDestroy(g), cudaErrorInvalidValue, "not a live graph");
}

// ---- a fault in a replay, and memory freed under a graph

__global__ void divergent_kernel(float* out) {
  if (threadIdx.x >= 16) return;
  __syncthreads();  // half the block never arrives
  out[threadIdx.x] = 1.0f;
}

TEST(EmuGraph, FaultsInAReplayAreStickyAndStopTheGraph) {
  Stream s;
  Dev<float> y(32), z(32);
  auto capture = [&](bool bad) {
    EXPECT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeGlobal), cudaSuccess);
    if (bad)
      divergent_kernel<<<1, 32, 0, s.s>>>(y.p);
    else
      fill_kernel<<<1, 32, 0, s.s>>>(y.p, 32, 1.0f);
    EXPECT_EQ(cudaMemsetAsync(z.p, 0, 32 * sizeof(float), s.s), cudaSuccess);
    return end_capture(s.s, cudaSuccess);
  };
  for (bool bad : {false, true}) {
    cudaGraph_t g = capture(bad);
    cudaGraphExec_t exec = instantiate(g);
    z.poison();
    const cudaError_t e = cudaGraphLaunch(exec, s.s);
    if (!bad) {
      EXPECT_EQ(e, cudaSuccess) << "correct twin";
      EXPECT_EQ(z.get(), std::vector<float>(32, 0.0f));
    } else {
      expect_error(e, cudaErrorLaunchFailure, "divergent __syncthreads");
      EXPECT_EQ(cudaStreamSynchronize(s.s), cudaErrorLaunchFailure) << "sticky";
      emu::clear_fault();
      EXPECT_TRUE(all_nan(z.get())) << "the node after the faulting kernel ran";
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
  }
  // A copy node whose source was freed after the capture: a GPU reads freed memory.
  float* src = nullptr;
  ASSERT_EQ(cudaMalloc(&src, 32 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(z.p, src, 32 * sizeof(float), cudaMemcpyDeviceToDevice, s.s),
            cudaSuccess);
  cudaGraph_t g = end_capture(s.s, cudaSuccess);
  cudaGraphExec_t exec = instantiate(g);
  ASSERT_EQ(cudaGraphLaunch(exec, s.s), cudaSuccess) << "correct twin";
  ASSERT_EQ(cudaFree(src), cudaSuccess);
  expect_error(cudaGraphLaunch(exec, s.s), cudaErrorIllegalAddress, "memcpy node");
  emu::clear_fault();
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
}

// ---- updating a graph's kernel arguments

__global__ void noise_kernel(float* y, unsigned seed, float scale, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = scale * hash_noise(seed, static_cast<unsigned>(i));
}

std::vector<float> noise_ref(unsigned seed, float scale, int n) {
  std::vector<float> r(n);
  for (int i = 0; i < n; ++i) r[i] = scale * hash_noise(seed, static_cast<unsigned>(i));
  return r;
}

TEST(EmuGraph, KernelArgumentsUpdateByExecUpdateOrNodeParams) {
  const int n = 200;
  Stream s;
  Dev<float> y(n);
  auto capture = [&](unsigned seed, bool extra, bool memset_instead) {
    EXPECT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeGlobal), cudaSuccess);
    if (memset_instead)
      EXPECT_EQ(cudaMemsetAsync(y.p, 0, n * sizeof(float), s.s), cudaSuccess);
    else
      noise_kernel<<<2, 128, 0, s.s>>>(y.p, seed, 0.5f, n);
    if (extra) fill_kernel<<<2, 128, 0, s.s>>>(y.p, n, 0.0f);
    return end_capture(s.s, cudaSuccess);
  };
  auto replay = [&](cudaGraphExec_t exec) {
    y.poison();
    EXPECT_EQ(cudaGraphLaunch(exec, s.s), cudaSuccess);
    return y.get();
  };
  cudaGraph_t g1 = capture(11, false, false);
  cudaGraphExec_t exec = instantiate(g1);
  EXPECT_EQ(replay(exec), noise_ref(11, 0.5f, n));

  // 1. Capture the step again with new arguments and update the executable graph.
  cudaGraph_t g2 = capture(22, false, false);
  cudaGraphExecUpdateResultInfo info{};
  ASSERT_EQ(cudaGraphExecUpdate(exec, g2, &info), cudaSuccess);
  EXPECT_EQ(info.result, cudaGraphExecUpdateSuccess);
  EXPECT_EQ(replay(exec), noise_ref(22, 0.5f, n));
  cudaGraph_t g3 = capture(33, true, false);
  expect_error(cudaGraphExecUpdate(exec, g3, &info), cudaErrorGraphExecUpdateFailure,
               "the graph has 2 nodes");
  EXPECT_EQ(info.result, cudaGraphExecUpdateErrorTopologyChanged);
  cudaGraph_t g4 = capture(44, false, true);
  expect_error(cudaGraphExecUpdate(exec, g4, &info), cudaErrorGraphExecUpdateFailure,
               "cannot become");
  EXPECT_EQ(info.result, cudaGraphExecUpdateErrorNodeTypeChanged);
  EXPECT_EQ(replay(exec), noise_ref(22, 0.5f, n)) << "a refused update changed the graph";

  // 2. Set the kernel node's arguments in place (the node of g1, which exec came from).
  cudaGraphNode_t node = nullptr;
  size_t count = 1;
  ASSERT_EQ(cudaGraphGetNodes(g1, &node, &count), cudaSuccess);
  ASSERT_EQ(count, 1u);
  cudaGraphNodeType type;
  ASSERT_EQ(cudaGraphNodeGetType(node, &type), cudaSuccess);
  EXPECT_EQ(type, cudaGraphNodeTypeKernel);
  cudaKernelNodeParams p{};
  ASSERT_EQ(cudaGraphKernelNodeGetParams(node, &p), cudaSuccess);
  EXPECT_EQ(p.func, reinterpret_cast<void*>(noise_kernel));
  EXPECT_EQ(p.gridDim.x, 2u);
  EXPECT_EQ(p.blockDim.x, 128u);
  EXPECT_EQ(*static_cast<unsigned*>(p.kernelParams[1]), 11u) << "the captured seed";
  float* out = y.p;
  unsigned seed = 55;
  float scale = 2.0f;
  int count_n = n;
  void* args[] = {&out, &seed, &scale, &count_n};
  cudaKernelNodeParams q = p;
  q.kernelParams = args;
  ASSERT_EQ(cudaGraphExecKernelNodeSetParams(exec, node, &q), cudaSuccess);
  seed = 66;  // read when set, not at the launch
  EXPECT_EQ(replay(exec), noise_ref(55, 2.0f, n));
  ASSERT_EQ(cudaGraphKernelNodeGetParams(node, &p), cudaSuccess);
  EXPECT_EQ(*static_cast<unsigned*>(p.kernelParams[1]), 11u) << "the graph's own node is unchanged";
  q.blockDim = dim3(2048);
  expect_error(cudaGraphExecKernelNodeSetParams(exec, node, &q), cudaErrorInvalidConfiguration,
               "exceeds the limits");
  q = p;
  q.func = reinterpret_cast<void*>(fill_kernel);
  expect_error(cudaGraphExecKernelNodeSetParams(exec, node, &q), cudaErrorNotSupported,
               "NOT MODELLED");
  EXPECT_EQ(replay(exec), noise_ref(55, 2.0f, n)) << "a refused update changed the graph";
  cudaGraphExecDestroy(exec);
  for (cudaGraph_t g : {g1, g2, g3, g4}) cudaGraphDestroy(g);
}

// ---- cuBLAS in a graph

TEST(EmuGraph, CublasGemmReplaysWithTheCapturedAlpha) {
  // C (m x n) = alpha * A^T (m x k) * B (k x n), A stored k x m; and a strided batch of 2.
  const int m = 12, n = 9, k = 24, batch = 2;
  Stream s;
  Dev<float> A(k * m * batch), B(k * n * batch), C(m * n * batch), D(m * n);
  Dev<char> workspace(1 << 20);
  cublasHandle_t h = nullptr;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSetStream(h, s.s), CUBLAS_STATUS_SUCCESS);  // first: it resets the workspace
  ASSERT_EQ(cublasSetWorkspace(h, workspace.p, 1 << 20), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSetWorkspace(h, workspace.p + 8, 1024), CUBLAS_STATUS_INVALID_VALUE)
      << "misaligned";
  float alpha = 1.5f;
  const float beta = 0.0f;
  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, A.p, CUDA_R_32F, k, B.p,
                         CUDA_R_32F, k, &beta, D.p, CUDA_R_32F, m, CUBLAS_COMPUTE_32F_PEDANTIC,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(
      cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, A.p, CUDA_R_32F, k,
                                 k * m, B.p, CUDA_R_32F, k, k * n, &beta, C.p, CUDA_R_32F, m, m * n,
                                 batch, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT),
      CUBLAS_STATUS_SUCCESS);
  cudaGraph_t g = end_capture(s.s, cudaSuccess);
  EXPECT_TRUE(all_nan(D.get())) << "a captured GEMM ran before its graph";
  alpha = 7.0f;  // host pointer mode: the graph keeps the capture's 1.5
  cudaGraphExec_t exec = instantiate(g);
  std::mt19937 rng(4141);
  std::normal_distribution<float> normal;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<float> a(A.n), b(B.n);
    for (float& v : a) v = normal(rng);
    for (float& v : b) v = normal(rng);
    A.put(a);
    B.put(b);
    C.poison();
    D.poison();
    ASSERT_EQ(cudaGraphLaunch(exec, s.s), cudaSuccess);
    const std::vector<float> c = C.get(), d = D.get();
    for (int bi = 0; bi < batch; ++bi)
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double ref = 0.0;
          for (int q = 0; q < k; ++q)
            ref += double(a[bi * k * m + i * k + q]) * b[bi * k * n + j * k + q];
          ref *= 1.5;
          // fp32 dot products of 24 terms of size ~1 in another order: 1e-4 absolute
          ASSERT_NEAR(c[bi * m * n + j * m + i], ref, 1e-4)
              << rep << " " << bi << " " << i << "," << j;
          if (bi == 0) {
            ASSERT_NEAR(d[j * m + i], ref, 1e-4) << rep << " " << i << "," << j;
          }
        }
  }
  // Planted bug: the workspace the GEMMs were captured with is freed before the replay.
  ASSERT_EQ(cudaFree(workspace.p), cudaSuccess);
  workspace.p = nullptr;
  expect_error(cudaGraphLaunch(exec, s.s), cudaErrorIllegalAddress,
               "workspace it was captured with");
  emu::clear_fault();
  // A GEMM on a stream whose capture was invalidated fails.
  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s.s), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, A.p, CUDA_R_32F, k, B.p,
                         CUDA_R_32F, k, &beta, D.p, CUDA_R_32F, m, CUBLAS_COMPUTE_32F_PEDANTIC,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_EXECUTION_FAILED);
  expect_error(cudaGetLastError(), cudaErrorStreamCaptureInvalidated, "cublasGemmEx on stream");
  end_capture(s.s, cudaErrorStreamCaptureInvalidated);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cublasDestroy(h);
}

}  // namespace
