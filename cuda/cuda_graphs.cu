// --graphs on: each forward pass (Model::forward: every layer, the LM head and the logits' read-back)
// captured as one CUDA graph and launched. The capture unit is the whole pass: nothing host-side sits
// between its layers (the loss is computed on the host from the logits, after the pass).
//
// Each pass is captured anew and the shape's executable graph updated from it (cudaGraphExecUpdate;
// instantiated again when the update is refused): the per-step values the kernels take by value
// (probe seed and scale, the fold's coefficients) and the batch's index data (tokens, positions,
// sequences, logit rows, which the pass copies from pinned staging) reach the graph through the capture,
// so the kernels, their arguments and their order are those of the uncaptured pass, and graphs on equals
// graphs off bit for bit by construction (tests/test_cuda_graphs.cpp). The first pass of each shape (rows,
// logit rows, sequences, probe kind, a fold held or not) runs uncaptured: it sizes the scratch buffer,
// the index buffers and the pointer tables (a capture cannot allocate: growing in one is an internal
// error) and counts the pinned bytes a capture of it needs. The logits' read-back is a captured copy into
// pinned memory, copied out after the launch and a stream synchronisation. cuBLAS gets a workspace of
// its own before any capture (set_graphs), so a captured GEMM never asks for one.
//
// Cost model (predicted, not measured; no GPU has run this). A probe pair's pass launches about 30 kernels,
// copies and GEMMs per layer (two norms per half, q|k|v and gate|up grouped, rope, attention, o, down,
// adds): smollm2-135m ~900, llama-7b ~960. Uncaptured, each costs the host ~2-4 us to launch (smollm2:
// 1.8-3.6 ms per pass) while the GPU runs what is queued, and the GPU idles whenever its kernels are
// shorter than their launches (smollm2 at T = 64). Captured, the host walks the same launches (~1-2 us each
// to record) and updates the executable graph (~0.5 us per node): ~1.4-2.3 ms, during which the GPU waits;
// then the GPU runs the nodes back to back (~1 us apart). Today launch and GPU time overlap (a pass takes
// about the larger); captured they add (the GPU waits for the capture), less the launch gaps. Whether that
// wins is open: `smezo bench --graphs on|off` decides, and the default stays off until it has. Replaying without a capture (per-step values read from device
// memory, the index data uploaded to fixed buffers) would remove the host's walk: the next step.
#include "cuda/cuda_backend.h"

#include <cstring>

#include "common/check.h"
#include "cuda/cuda_check.h"

namespace smezo {

namespace {

size_t aligned256(size_t bytes) { return (bytes + 255) & ~size_t(255); }

}  // namespace

void CudaBackend::set_graphs(bool on) {
  SMEZO_REQUIRE(!on || !cuda_sync_debug(),
                "--graphs on: SMEZO_CUDA_SYNC=1 synchronises after every launch, which a CUDA graph capture "
                "forbids ---> HINT: unset SMEZO_CUDA_SYNC, or pass --graphs off");
  graphs_ = on;
  if (!on || cublas_workspace_ != nullptr) return;
  // After cublasSetStream (which resets a workspace; bind_cublas sets it again), before any capture.
  CUDA_CHECK(cudaMalloc(&cublas_workspace_, kCublasWorkspaceBytes));
  CUBLAS_CHECK(cublasSetWorkspace(cublas_, cublas_workspace_, kCublasWorkspaceBytes));
}

const void* CudaBackend::staged(const void* host, size_t bytes) {
  if (!capturing_) return host;
  SMEZO_REQUIRE(stage_used_ + bytes <= stage_cap_,
                "a captured forward pass staged %zu bytes beyond the %zu its shape counted (internal error)",
                stage_used_ + bytes - stage_cap_, stage_cap_);
  unsigned char* dst = stage_ + stage_used_;
  std::memcpy(dst, host, bytes);
  stage_used_ += aligned256(bytes);
  return dst;
}

// *buf grown to hold `bytes` of pinned host memory (its contents are not kept).
template <typename T>
static void grow_pinned(T** buf, size_t* cap, size_t bytes) {
  if (bytes <= *cap) return;
  if (*buf != nullptr) CUDA_CHECK(cudaFreeHost(*buf));
  *buf = nullptr;
  *cap = 0;
  CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(buf), bytes));
  *cap = bytes;
}

void CudaBackend::reserve_pinned(size_t stage_bytes, size_t read_back_bytes) {
  if (stage_bytes <= stage_cap_ && read_back_bytes <= read_back_cap_) return;
  CUDA_CHECK(cudaStreamSynchronize(stream_));  // an earlier graph may still read them
  grow_pinned(&stage_, &stage_cap_, stage_bytes);
  grow_pinned(&read_back_, &read_back_cap_, read_back_bytes);
}

// What the device buffers hold is unknown after a capture that never ran: copy again next time.
void CudaBackend::forget_device_copies() {
  for (std::vector<unsigned char>& held : index_held_) held.clear();
  for (std::vector<const void*>& t : table_host_) t.clear();
  for (uint64_t& used : table_used_) used = 0;
}

cudaGraph_t CudaBackend::capture_pass(const std::function<void()>& pass) {
  stage_used_ = 0;
  read_back_used_ = 0;
  read_backs_.clear();
  CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
  try {
    pass();
  } catch (...) {
    capturing_ = false;
    cudaGraph_t broken = nullptr;
    cudaStreamEndCapture(stream_, &broken);
    if (broken != nullptr) cudaGraphDestroy(broken);
    cudaGetLastError();
    forget_device_copies();
    throw;
  }
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t err = cudaStreamEndCapture(stream_, &graph);
  if (err != cudaSuccess) forget_device_copies();
  CUDA_CHECK(err);
  return graph;
}

void CudaBackend::launch_pass(PassGraph& g, cudaGraph_t graph) {
  if (g.exec != nullptr) {
    cudaGraphExecUpdateResultInfo info;
    if (cudaGraphExecUpdate(g.exec, graph, &info) != cudaSuccess) {  // another topology: instantiate anew
      cudaGetLastError();
      CUDA_CHECK(cudaGraphExecDestroy(g.exec));
      g.exec = nullptr;
    }
  }
  if (g.exec == nullptr) {
    const cudaError_t err = cudaGraphInstantiate(&g.exec, graph, 0);
    if (err != cudaSuccess) {
      g.exec = nullptr;
      cudaGraphDestroy(graph);
      forget_device_copies();
      CUDA_CHECK(err);
    }
    graph_instantiations_++;
  }
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaGraphLaunch(g.exec, stream_));
  graph_launches_++;
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (const Readback& r : read_backs_)
    std::memcpy(r.dst, reinterpret_cast<const char*>(read_back_) + r.offset, r.n * sizeof(float));
  read_backs_.clear();
}

void CudaBackend::forward_pass(const std::string& shape, const std::function<void()>& pass) {
  if (!graphs_) return pass();
  SMEZO_REQUIRE(!capturing_, "a forward pass inside a captured one (internal error)");
  // a held fold changes which kernel forms W' (and adds its writes of W): another graph
  PassGraph& g = pass_graphs_[held_.size() > 0 ? shape + " fold" : shape];
  if (!g.warm) {  // uncaptured: sizes the buffers, counts what a capture will stage and read back
    pass_stage_bytes_ = 0;
    pass_read_back_bytes_ = 0;
    pass();
    g.stage_bytes = pass_stage_bytes_;
    g.read_back_bytes = pass_read_back_bytes_;
    g.warm = true;
    return;
  }
  reserve_pinned(g.stage_bytes, g.read_back_bytes);
  launch_pass(g, capture_pass(pass));
}

void CudaBackend::release_graphs() {
  for (auto& kv : pass_graphs_)
    if (kv.second.exec != nullptr) cudaGraphExecDestroy(kv.second.exec);
  pass_graphs_.clear();
  if (stage_ != nullptr) cudaFreeHost(stage_);
  if (read_back_ != nullptr) cudaFreeHost(read_back_);
  stage_ = nullptr;
  read_back_ = nullptr;
}

}  // namespace smezo
