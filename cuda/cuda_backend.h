// The CUDA backend: the Backend ops on the GPU. Parameters are stored in fp32, fp16 or bf16;
// activations, norms, softmax and accumulation are fp32. Parameters are read through the Probe
// exactly as the CPU reads them (src/common/noise_spec.h). One file per op family, named as its
// src/cpu/ twin (cuda_backend.cu: memory, stream, cuBLAS handle, scratch; linear.cu or fused_linear.cu).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cuda_plan.h"  // cuda_memory_plan, LinearPathMode

namespace smezo {

class CudaBackend : public Backend {
 public:
  CudaBackend();  // throws smezo::Error when no CUDA device is usable
  ~CudaBackend() override;
  const char* name() const override { return "cuda"; }
  BackendKind kind() const override { return BACKEND_CUDA; }
  BackendMemoryPlan memory_plan() const override { return cuda_memory_plan(); }

  Tensor alloc(int64_t rows, int64_t cols, DType dtype) override;
  // --weights packed: the GGUF blocks on the device as the file has them (stored bytes only); linear
  // dequantises them block by block into its W' scratch (packed_dequant.cu), embedding the rows it gathers.
  Tensor alloc_packed(int64_t rows, int64_t cols, uint32_t packed_type, int64_t row_bytes, const void* src) override;
  // The dtype of a packed weight's W' block and of its GEMM (the run's storage dtype; default fp32).
  void set_packed_wprime_dtype(DType dtype) { packed_wprime_dtype_ = dtype; }
  void upload(const Tensor& dst, const float* src) override;
  void download(const Tensor& src, float* dst) override;
  int64_t bytes_allocated() const override { return bytes_; }
  // upload_stored.cu: raw file bytes to the device in chunks, converted and checked there.
  int64_t upload_stored(const Tensor& dst, const void* src, DType src_dtype) override;
  int64_t free_memory_bytes() const override;  // cudaMemGetInfo

  void embedding(const Tensor& out, const Param& table, const std::vector<int32_t>& tokens,
                 const Probe& probe) override;
  void add_position_embedding(const Tensor& out, const Param& table,
                              const std::vector<int32_t>& positions, int64_t offset,
                              const Probe& probe) override;
  void norm(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
            NormKind kind, float eps, const Probe& probe) override;
  void linear(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
              const Probe& probe) override;
  void linear_group(const std::vector<LinearItem>& items, const Tensor& in, const Probe& probe) override;
  void rope(const Tensor& x, const std::vector<int32_t>& positions, int64_t n_heads,
            const std::vector<float>& inv_freq, RopeStyle style) override;
  void attention(const AttentionParams& p) override;
  void swiglu(const Tensor& out, const Tensor& gate, const Tensor& up) override;
  void relu(const Tensor& x) override;
  void add(const Tensor& x, const Tensor& y) override;
  void add_scaled(const Tensor& x, const Tensor& y, float alpha) override;
  void gather_rows(const Tensor& out, const Tensor& in, const std::vector<int64_t>& rows) override;
  void copy_rows(const Tensor& dst, int64_t dst_row, const Tensor& src) override;

  void update(Param& p, float coef, float decay, uint64_t seed) override;
  float abs_quantile(const Param& p, double q) override;
  // The fold (pending_updates.h): linear.cu's W' kernel applies a held update to a row block of W,
  // writes it back, and forms the block's W' from it in the same pass.
  void defer_updates(Param& p, const std::vector<UpdateArgs>& updates) override { held_.hold(*this, p, updates); }
  void flush_updates() override { held_.flush(*this); }
  const PendingUpdates& held_updates() const { return held_; }
  // Groups linear_group multiplied with batched GEMMs (not item by item): tests.
  int64_t grouped_linears() const { return grouped_linears_; }

  // --linear-path (cuda_plan.h)
  void set_linear_mode(LinearPathMode mode) { linear_mode_ = mode; }

  // --graphs (cuda/cuda_graphs.cu): forward_pass captures each forward as a CUDA graph and launches it.
  // On: sets a cuBLAS workspace (a capture must not let cuBLAS allocate one); refuses SMEZO_CUDA_SYNC=1.
  void set_graphs(bool on);
  static constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;  // cuBLAS's advice for Hopper
  bool graphs() const { return graphs_; }
  void forward_pass(const std::string& shape, const std::function<void()>& pass) override;
  int64_t graph_launches() const { return graph_launches_; }              // passes run as a graph (tests)
  int64_t graph_instantiations() const { return graph_instantiations_; }  // executables made, not updated

  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }

  // Device copies of small host arrays, valid until the next call with the same slot. A call whose
  // bytes equal what the slot holds copies nothing (rope's positions and frequencies for q, then k;
  // attention's sequences, layer after layer): the kernels only read these buffers.
  enum IndexSlot { SLOT_TOKENS, SLOT_POSITIONS, SLOT_ROWS, SLOT_SEQS, SLOT_COUNT };
  void* device_copy(IndexSlot slot, const void* host, size_t bytes);
  int64_t index_copies() const { return index_copies_; }  // host-to-device copies device_copy made (tests)
  // A device copy of a batched GEMM's pointer table (at most kPointerTableEntries pointers), cached:
  // the copy is made only when no slot holds these pointers already (a forward's groups repeat theirs
  // layer after layer), into the least recently used of kPointerTableSlots, stream-ordered after
  // the GEMMs that read it before.
  static constexpr int kPointerTableSlots = 8, kPointerTableEntries = 3 * 2 * kLinearGroupMaxItems;
  const void* const* pointer_table(const std::vector<const void*>& pointers);
  // Shared device scratch of >= `bytes`, grown on demand (may move the previous region), never shrunk.
  void* scratch(size_t bytes);
  // Its high-water mark (at least 64 KiB once used, else 0), as model/memory_estimate.h predicts.
  int64_t scratch_capacity() const { return static_cast<int64_t>(scratch_cap_); }
  // Binds the cuBLAS handle to our stream if it is not (which resets its workspace: set again under --graphs).
  void bind_cublas();

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::vector<void*> blocks_;
  int64_t bytes_ = 0;
  void* index_buf_[SLOT_COUNT] = {};
  size_t index_cap_[SLOT_COUNT] = {};
  std::vector<unsigned char> index_held_[SLOT_COUNT];  // the bytes each slot holds
  int64_t index_copies_ = 0;
  const void** tables_ = nullptr;  // kPointerTableSlots x kPointerTableEntries device pointers
  std::vector<const void*> table_host_[kPointerTableSlots];  // what each slot holds
  uint64_t table_used_[kPointerTableSlots] = {}, table_clock_ = 0;
  void* scratch_ = nullptr;
  size_t scratch_cap_ = 0;
  LinearPathMode linear_mode_ = LINEAR_MODE_AUTO;
  DType packed_wprime_dtype_ = DTYPE_F32;
  void linear_packed(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
                     const Probe& probe);   // linear.cu
  void download_packed(const Tensor& src, float* dst);  // cuda_backend.cu
  PendingUpdates held_;  // the linear weights' updates held for the fold
  int64_t grouped_linears_ = 0;

  // --graphs (cuda_graphs.cu). A pass's shape is warm once it ran uncaptured (scratch, index buffers and
  // pointer tables sized; its staging and read-back bytes counted); later passes of it are captured.
  struct PassGraph {
    bool warm = false;
    size_t stage_bytes = 0, read_back_bytes = 0;  // pinned bytes its capture needs
    cudaGraphExec_t exec = nullptr;              // updated from each new capture
  };
  struct Readback {  // a captured D2H copy: read_back_[offset, + n) goes to dst after the launch
    size_t offset;
    float* dst;
    size_t n;
  };
  const void* staged(const void* host, size_t bytes);  // capturing: host bytes copied into pinned staging
  void reserve_pinned(size_t stage_bytes, size_t readback_bytes);
  cudaGraph_t capture_pass(const std::function<void()>& pass);
  void launch_pass(PassGraph& g, cudaGraph_t graph);
  void forget_device_copies();
  void release_graphs();  // the destructor's share
  bool graphs_ = false, capturing_ = false;
  void* cublas_workspace_ = nullptr;
  std::map<std::string, PassGraph> pass_graphs_;  // by shape (+ whether a fold is held)
  unsigned char* stage_ = nullptr;  // pinned: the sources of a capture's H2D copies
  float* read_back_ = nullptr;      // pinned: the destinations of its D2H copies
  size_t stage_cap_ = 0, stage_used_ = 0, read_back_cap_ = 0, read_back_used_ = 0;
  size_t pass_stage_bytes_ = 0, pass_read_back_bytes_ = 0;  // a pass's demand, counted uncaptured too
  std::vector<Readback> read_backs_;
  int64_t graph_launches_ = 0, graph_instantiations_ = 0;
};

}  // namespace smezo
