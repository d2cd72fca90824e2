// The CUDA backend's memory and plumbing: construction (stream, cuBLAS handle), tensor allocation,
// upload/download with fp32 <-> fp16/bf16 conversion on the host (never of a weight whose folded
// update is held: pending_updates.h), the per-slot device copies of small host arrays, and the
// grow-on-demand scratch buffer.
#include "cuda/cuda_backend.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/check.h"
#include "common/half.h"
#include "cuda/cuda_check.h"
#include "cuda/packed_dequant.h"
#include "formats/gguf_dequant.h"

namespace smezo {

namespace {

// Host staging for fp16/bf16 transfers is done in chunks of this many elements (32 MiB).
constexpr int64_t kStageElems = int64_t(1) << 24;

// cudaMalloc with a message that names what was being allocated.
void* device_malloc(size_t bytes, const char* what, int64_t already) {
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, std::max<size_t>(bytes, 1));
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw_error("out of GPU memory allocating %s (%.1f MiB; %.1f MiB of tensors already "
                "allocated)\n---> HINT: lower the batch size or sequence length, use fp16/bf16 "
                "storage, or free other processes on this GPU (nvidia-smi)",
                what, bytes / 1048576.0, already / 1048576.0);
  }
  CUDA_CHECK(err);
  return p;
}

void host_to_storage(DType dtype, const float* src, int64_t n, uint16_t* dst) {
  if (dtype == DTYPE_F16) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_f16(src[i]);
  } else {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
  }
}

void storage_to_host(DType dtype, const uint16_t* src, int64_t n, float* dst) {
  if (dtype == DTYPE_F16) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_float(src[i]);
  } else {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(src[i]);
  }
}

}  // namespace

CudaBackend::CudaBackend() {
  SMEZO_REQUIRE(cuda_device_available(),
                "no usable CUDA device (no GPU, no driver, or a driver too old for this build)"
                "\n---> HINT: check nvidia-smi, or run with the CPU backend");
  cuda_weight_chunk_bytes();  // a bad SMEZO_CUDA_WEIGHT_BLOCK_MIB is a start-up error, not the first linear's
  try {
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&cublas_));
    CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
  } catch (...) {
    if (cublas_ != nullptr) cublasDestroy(cublas_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    throw;
  }
}

CudaBackend::~CudaBackend() {
  // Never throws: errors here are ignored (the process may be unwinding from a CUDA fault).
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  release_graphs();
  for (void* p : blocks_) cudaFree(p);
  for (void* p : index_buf_)
    if (p != nullptr) cudaFree(p);
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (tables_ != nullptr) cudaFree(tables_);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (cublas_workspace_ != nullptr) cudaFree(cublas_workspace_);  // --graphs on (cuda_graphs.cu)
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  cudaGetLastError();
}

Tensor CudaBackend::alloc(int64_t rows, int64_t cols, DType dtype) {
  SMEZO_REQUIRE(rows >= 0 && cols >= 0, "bad tensor shape [%lld, %lld]", (long long)rows,
                (long long)cols);
  SMEZO_REQUIRE(dtype == DTYPE_F32 || dtype == DTYPE_F16 || dtype == DTYPE_BF16,
                "alloc: unknown dtype %d", static_cast<int>(dtype));
  const int64_t bytes = rows * cols * dtype_size(dtype);
  const std::string what =
      format_string("a [%lld, %lld] %s tensor", (long long)rows, (long long)cols, dtype_name(dtype));
  // Reserve first, so that push_back cannot throw after the allocation.
  if (blocks_.size() == blocks_.capacity()) blocks_.reserve(2 * blocks_.size() + 16);
  void* p = device_malloc(static_cast<size_t>(bytes), what.c_str(), bytes_);
  blocks_.push_back(p);
  bytes_ += bytes;
  Tensor t;
  t.data = p;
  t.dtype = dtype;
  t.rows = rows;
  t.cols = cols;
  return t;
}

Tensor CudaBackend::alloc_packed(int64_t rows, int64_t cols, uint32_t packed_type, int64_t row_bytes,
                                 const void* src) {
  SMEZO_REQUIRE(rows >= 0 && cols > 0 && row_bytes > 0, "bad packed tensor shape [%lld, %lld]", (long long)rows,
                (long long)cols);
  SMEZO_REQUIRE(gguf_block_quantized(packed_type), "alloc_packed: GGUF type %u is not block-quantised", packed_type);
  const int64_t bytes = rows * row_bytes;
  const std::string what = format_string("a packed [%lld, %lld] tensor", (long long)rows, (long long)cols);
  if (blocks_.size() == blocks_.capacity()) blocks_.reserve(2 * blocks_.size() + 16);
  void* p = device_malloc(static_cast<size_t>(bytes), what.c_str(), bytes_);
  blocks_.push_back(p);
  bytes_ += bytes;
  CUDA_CHECK(cudaMemcpyAsync(p, src, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
  Tensor t;
  t.data = p;
  t.rows = rows;
  t.cols = cols;
  t.packed_type = packed_type;
  t.packed_row_bytes = row_bytes;
  return t;
}

// Rows dequantised in fp32 into scratch (packed_dequant.cu), at most 16 MiB at a time, then copied back.
void CudaBackend::download_packed(const Tensor& src, float* dst) {
  SMEZO_REQUIRE(!capturing_, "download of a packed tensor inside a captured forward pass (internal error)");
  const int64_t rows_at_once = std::max<int64_t>(1, (int64_t{16} << 20) / (4 * src.cols));
  Param p;
  p.w = src;
  for (int64_t r0 = 0; r0 < src.rows; r0 += rows_at_once) {
    const int64_t n = std::min(rows_at_once, src.rows - r0);
    void* buf = scratch(static_cast<size_t>(n * src.cols) * 4);
    launch_dequant_packed(DTYPE_F32, buf, p, nullptr, r0, n, Probe{}, stream_);
    CUDA_CHECK(cudaMemcpyAsync(dst + r0 * src.cols, buf, static_cast<size_t>(n * src.cols) * 4,
                               cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
}

void CudaBackend::upload(const Tensor& dst, const float* src) {
  SMEZO_REQUIRE(!dst.packed(), "upload into a packed weight (frozen: --weights packed)");
  SMEZO_REQUIRE(!capturing_, "upload inside a captured forward pass (internal error)");
  held_.require_none(dst, "upload");
  const int64_t n = dst.numel();
  if (n == 0) return;
  if (dst.dtype == DTYPE_F32) {
    CUDA_CHECK(cudaMemcpyAsync(dst.data, src, static_cast<size_t>(n) * 4, cudaMemcpyHostToDevice,
                               stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    return;
  }
  std::vector<uint16_t> stage(static_cast<size_t>(std::min(n, kStageElems)));
  uint16_t* out = static_cast<uint16_t*>(dst.data);
  for (int64_t start = 0; start < n; start += kStageElems) {
    const int64_t count = std::min(kStageElems, n - start);
    host_to_storage(dst.dtype, src + start, count, stage.data());
    CUDA_CHECK(cudaMemcpyAsync(out + start, stage.data(), static_cast<size_t>(count) * 2,
                               cudaMemcpyHostToDevice, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));  // the staging buffer is reused next chunk
  }
}

void CudaBackend::download(const Tensor& src, float* dst) {
  held_.require_none(src, "download");
  if (src.packed()) return download_packed(src, dst);
  const int64_t n = src.numel();
  if (n == 0) return;
  pass_read_back_bytes_ += (static_cast<size_t>(n) * 4 + 255) & ~size_t(255);
  if (capturing_) {  // a captured copy into pinned memory, read after the launch (cuda_graphs.cu)
    SMEZO_REQUIRE(src.dtype == DTYPE_F32 && read_back_used_ + static_cast<size_t>(n) * 4 <= read_back_cap_,
                  "download of a %s tensor of %lld inside a captured forward pass (internal error)",
                  dtype_name(src.dtype), (long long)n);
    CUDA_CHECK(cudaMemcpyAsync(reinterpret_cast<char*>(read_back_) + read_back_used_, src.data,
                               static_cast<size_t>(n) * 4, cudaMemcpyDeviceToHost, stream_));
    read_backs_.push_back(Readback{read_back_used_, dst, static_cast<size_t>(n)});
    read_back_used_ += (static_cast<size_t>(n) * 4 + 255) & ~size_t(255);
    return;
  }
  if (src.dtype == DTYPE_F32) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src.data, static_cast<size_t>(n) * 4, cudaMemcpyDeviceToHost,
                               stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    return;
  }
  std::vector<uint16_t> stage(static_cast<size_t>(std::min(n, kStageElems)));
  const uint16_t* in = static_cast<const uint16_t*>(src.data);
  for (int64_t start = 0; start < n; start += kStageElems) {
    const int64_t count = std::min(kStageElems, n - start);
    CUDA_CHECK(cudaMemcpyAsync(stage.data(), in + start, static_cast<size_t>(count) * 2,
                               cudaMemcpyDeviceToHost, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    storage_to_host(src.dtype, stage.data(), count, dst + start);
  }
}

void* CudaBackend::device_copy(IndexSlot slot, const void* host, size_t bytes) {
  SMEZO_REQUIRE(slot >= 0 && slot < SLOT_COUNT, "device_copy: bad slot %d", static_cast<int>(slot));
  pass_stage_bytes_ += (bytes + 255) & ~size_t(255);
  if (bytes > index_cap_[slot]) {
    SMEZO_REQUIRE(!capturing_, "an index buffer grew inside a captured forward pass (internal error)");
    // Kernels queued earlier may still read the old buffer.
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (index_buf_[slot] != nullptr) CUDA_CHECK(cudaFree(index_buf_[slot]));
    index_buf_[slot] = nullptr;
    index_cap_[slot] = 0;
    const size_t cap = std::max<size_t>(bytes + bytes / 2, 4096);
    index_buf_[slot] = device_malloc(cap, "an index buffer", bytes_);
    index_cap_[slot] = cap;
    index_held_[slot].clear();
  }
  std::vector<unsigned char>& held = index_held_[slot];
  const unsigned char* src = static_cast<const unsigned char*>(host);
  // captured: always copied (from pinned staging), so that every capture of a shape has the same nodes
  if (bytes > 0 && (capturing_ || !(held.size() == bytes && std::memcmp(held.data(), src, bytes) == 0))) {
    // Stream-ordered after earlier readers; a pageable source is staged before the call returns.
    CUDA_CHECK(cudaMemcpyAsync(index_buf_[slot], staged(host, bytes), bytes, cudaMemcpyHostToDevice, stream_));
    held.assign(src, src + bytes);
    index_copies_++;
  }
  return index_buf_[slot];
}

const void* const* CudaBackend::pointer_table(const std::vector<const void*>& pointers) {
  SMEZO_REQUIRE(pointers.size() <= kPointerTableEntries, "pointer_table: %zu pointers (at most %d)",
                pointers.size(), kPointerTableEntries);
  pass_stage_bytes_ += (sizeof(void*) * pointers.size() + 255) & ~size_t(255);
  if (tables_ == nullptr)
    tables_ = static_cast<const void**>(device_malloc(
        sizeof(void*) * kPointerTableSlots * kPointerTableEntries, "the GEMM pointer tables", bytes_));
  int slot = 0;
  bool held = false;
  for (int s = 0; s < kPointerTableSlots && !held; ++s) {
    held = table_host_[s] == pointers;
    if (held || table_used_[s] < table_used_[slot]) slot = s;
  }
  table_used_[slot] = ++table_clock_;
  const void** dst = tables_ + slot * kPointerTableEntries;
  if (held && !capturing_) return dst;  // captured: copied again, so that every capture of a shape has the same nodes
  table_host_[slot] = pointers;
  // Stream-ordered after the GEMMs that read the slot before; a pageable source is staged before the call returns.
  CUDA_CHECK(cudaMemcpyAsync(dst, staged(pointers.data(), sizeof(void*) * pointers.size()), sizeof(void*) * pointers.size(),
                             cudaMemcpyHostToDevice, stream_));
  return dst;
}

void* CudaBackend::scratch(size_t bytes) {
  if (bytes > scratch_cap_ || scratch_ == nullptr) {
    SMEZO_REQUIRE(!capturing_, "the scratch buffer grew inside a captured forward pass (internal error)");
    CUDA_CHECK(cudaStreamSynchronize(stream_));  // queued kernels may still use the old one
    if (scratch_ != nullptr) CUDA_CHECK(cudaFree(scratch_));
    scratch_ = nullptr;
    scratch_cap_ = 0;
    const size_t cap = std::max<size_t>(bytes, 1 << 16);
    const std::string what = format_string("the %.1f MiB scratch buffer", cap / 1048576.0);
    scratch_ = device_malloc(cap, what.c_str(), bytes_);
    scratch_cap_ = cap;
  }
  return scratch_;
}

void CudaBackend::bind_cublas() {
  cudaStream_t handle_stream = nullptr;
  CUBLAS_CHECK(cublasGetStream(cublas_, &handle_stream));
  if (handle_stream == stream_) return;
  CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
  if (cublas_workspace_ != nullptr) CUBLAS_CHECK(cublasSetWorkspace(cublas_, cublas_workspace_, kCublasWorkspaceBytes));
}

}  // namespace smezo
