// Emulated cuBLAS: GemmEx, GemmStridedBatchedEx and GemmBatchedEx, checked as cuBLAS checks them, then
// computed with OpenBLAS's sgemm on fp32 copies of A and B (16-bit inputs widen exactly; the
// products are exact in fp32; the summation order is OpenBLAS's, not cuBLAS's: results
// agree with a GPU to fp32 rounding, not bit for bit).
//   Checks (status INVALID_VALUE, as cuBLAS): null handle (NOT_INITIALIZED), m, n, k < 0,
//   transa/transb not N/T/C, lda < max(1, rows of A as stored), ldb likewise, ldc < max(1, m),
//   batchCount < 0. Type combinations: those of cuBLAS's GemmEx table for
//   CUBLAS_COMPUTE_32F[_PEDANTIC] with A = B in {16F, 16BF, 32F} and C = 32F or = A are
//   modelled; any other combination cuBLAS accepts is refused as NOT_SUPPORTED with a message
//   saying the emulator does not model it (never approximated); a combination cuBLAS rejects
//   gets NOT_SUPPORTED as from cuBLAS. Every matrix must lie inside one device allocation
//   (a GPU would fault): otherwise EXECUTION_FAILED and the sticky cudaErrorIllegalAddress.
//   On a capturing stream a GEMM is recorded (graph.cpp) with alpha and beta by value (host
//   pointer mode, the only one modelled) and runs at cudaGraphLaunch, where the allocation
//   check and the workspace it was captured with are checked again. cublasSetStream resets a
//   workspace set by cublasSetWorkspace, as cuBLAS does.
//   GemmBatchedEx: Aarray, Barray, Carray are device arrays of batchCount device pointers, read
//   when the GEMM runs (stream order; a captured call reads them at each replay), as a GPU's
//   kernel reads them: each array must lie in device memory and each matrix inside one
//   allocation, else EXECUTION_FAILED and the sticky cudaErrorIllegalAddress. Problem bi is
//   computed as GemmEx of its three matrices, so it equals that call bit for bit.
#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "emu_cublas.h"
#include "emu_half.h"
#include "emu_internal.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  void* workspace = nullptr;  // a user workspace (cublasSetWorkspace), or none: cuBLAS's own
  size_t workspace_bytes = 0;
  int sm_count_target = 0;
};

namespace {

using emu::format;

cublasStatus_t refuse(cublasStatus_t status, const std::string& msg) {
  std::fprintf(stderr, "emu: error: %s\n", msg.c_str());
  emu::set_diagnostic(msg);
  return status;
}

const char* type_name(cudaDataType t) {
  switch (t) {
    case CUDA_R_32F: return "CUDA_R_32F";
    case CUDA_R_64F: return "CUDA_R_64F";
    case CUDA_R_16F: return "CUDA_R_16F";
    case CUDA_R_16BF: return "CUDA_R_16BF";
    case CUDA_R_8I: return "CUDA_R_8I";
    case CUDA_R_32I: return "CUDA_R_32I";
    case CUDA_C_32F: return "CUDA_C_32F";
  }
  return "unknown";
}

size_t type_size(cudaDataType t) {
  switch (t) {
    case CUDA_R_16F: case CUDA_R_16BF: return 2;
    case CUDA_R_8I: return 1;
    case CUDA_R_64F: case CUDA_C_32F: return 8;
    default: return 4;
  }
}

// Is (compute, A, B, C) in cuBLAS's GemmEx table at all (real or complex aside)?
bool cublas_accepts(cublasComputeType_t ct, cudaDataType a, cudaDataType b, cudaDataType c) {
  if (a != b) return false;
  switch (ct) {
    case CUBLAS_COMPUTE_16F: case CUBLAS_COMPUTE_16F_PEDANTIC:
      return a == CUDA_R_16F && c == CUDA_R_16F;
    case CUBLAS_COMPUTE_32I: case CUBLAS_COMPUTE_32I_PEDANTIC:
      return a == CUDA_R_8I && c == CUDA_R_32I;
    case CUBLAS_COMPUTE_32F: case CUBLAS_COMPUTE_32F_PEDANTIC:
      return (a == CUDA_R_16BF && (c == CUDA_R_16BF || c == CUDA_R_32F)) ||
             (a == CUDA_R_16F && (c == CUDA_R_16F || c == CUDA_R_32F)) ||
             (a == CUDA_R_8I && c == CUDA_R_32F) || (a == CUDA_R_32F && c == CUDA_R_32F) ||
             (a == CUDA_C_32F && c == CUDA_C_32F);
    case CUBLAS_COMPUTE_32F_FAST_16F: case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      return (a == CUDA_R_32F && c == CUDA_R_32F) || (a == CUDA_C_32F && c == CUDA_C_32F);
    case CUBLAS_COMPUTE_64F: case CUBLAS_COMPUTE_64F_PEDANTIC:
      return a == CUDA_R_64F && c == CUDA_R_64F;
  }
  return false;
}

bool emu_models(cublasComputeType_t ct, cudaDataType a, cudaDataType c) {
  if (ct != CUBLAS_COMPUTE_32F && ct != CUBLAS_COMPUTE_32F_PEDANTIC) return false;
  return (a == CUDA_R_32F && c == CUDA_R_32F) ||
         ((a == CUDA_R_16F || a == CUDA_R_16BF) && (c == CUDA_R_32F || c == a));
}

float load(const void* p, cudaDataType t, int64_t i) {
  switch (t) {
    case CUDA_R_16F: return emu::f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case CUDA_R_16BF: return emu::bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}
void store(void* p, cudaDataType t, int64_t i, float v) {
  switch (t) {
    case CUDA_R_16F: static_cast<uint16_t*>(p)[i] = emu::f32_to_f16_rn(v); break;
    case CUDA_R_16BF: static_cast<uint16_t*>(p)[i] = emu::f32_to_bf16_rn(v); break;
    default: static_cast<float*>(p)[i] = v;
  }
}

// A stored matrix: `rows` x `cols` column-major with leading dimension ld, `batch` copies
// `stride` elements apart. Its element span (for the allocation check) and an fp32 copy.
struct Stored {
  const void* p;
  cudaDataType t;
  int64_t rows, cols, ld, stride;
  int64_t span_elems(int batch) const {
    if (rows == 0 || cols == 0 || batch == 0) return 0;
    return (batch - 1) * stride + (cols - 1) * ld + rows;
  }
};

bool inside(const Stored& s, int batch) {
  const int64_t e = s.span_elems(batch);
  if (e == 0) return true;
  if (s.stride < 0) return false;
  return emu::device_range_ok(s.p, static_cast<size_t>(e) * type_size(s.t));
}

// Matrix bi of s as fp32 and its leading dimension: in place when fp32, else widened into out.
const float* as_f32(const Stored& s, int bi, std::vector<float>& out, int64_t* ld) {
  *ld = s.ld;
  if (s.t == CUDA_R_32F) return static_cast<const float*>(s.p) + bi * s.stride;
  out.resize(static_cast<size_t>(s.rows * s.cols));
  for (int64_t c = 0; c < s.cols; ++c)
    for (int64_t r = 0; r < s.rows; ++r) out[c * s.rows + r] = load(s.p, s.t, bi * s.stride + c * s.ld + r);
  *ld = s.rows;
  return out.data();
}

// One GEMM that passed cuBLAS's checks, with alpha and beta by value (host pointer mode: a
// captured call keeps the values of the capture, as cuBLAS's graph nodes do) and the handle's
// workspace when it was made.
struct GemmCall {
  const char* call;
  cublasOperation_t ta, tb;  // N or T
  int m, n, k, batch;
  float alpha, beta;
  Stored a, b, c;
  void* c_out;
  void* workspace;
  size_t workspace_bytes;
  const void* const* arrays[3] = {};  // GemmBatchedEx: device arrays of A, B, C pointers; else null
};

bool gemm_run(const GemmCall& g);

// GemmBatchedEx's problems, each as the GemmEx of the pointers its arrays hold when it runs.
bool gemm_run_pointer_arrays(const GemmCall& g) {
  const char* names[] = {"Aarray", "Barray", "Carray"};
  for (int i = 0; i < 3; ++i)
    if (!emu::device_range_ok(g.arrays[i], sizeof(void*) * static_cast<size_t>(g.batch))) {
      emu::record_fault(cudaErrorIllegalAddress,
                        format("%s: %s (%d pointers at %p) is not inside one device allocation: a GPU "
                               "would read it out of bounds", g.call, names[i], g.batch,
                               static_cast<const void*>(g.arrays[i])));
      return false;
    }
  for (int bi = 0; bi < g.batch; ++bi) {
    GemmCall one = g;
    one.batch = 1;
    for (const void* const*& a : one.arrays) a = nullptr;
    one.a.p = g.arrays[0][bi];
    one.b.p = g.arrays[1][bi];
    one.c.p = one.c_out = const_cast<void*>(g.arrays[2][bi]);
    if (!gemm_run(one)) return false;
  }
  return true;
}

// Runs g: every matrix must lie inside one device allocation (a GPU would fault: the sticky
// cudaErrorIllegalAddress and false).
bool gemm_run(const GemmCall& g) {
  if (g.arrays[0] != nullptr) return gemm_run_pointer_arrays(g);
  const char* names[] = {"A", "B", "C"};
  const Stored* mats[] = {&g.a, &g.b, &g.c};
  for (int i = 0; i < 3; ++i)
    if (!inside(*mats[i], g.batch)) {
      emu::record_fault(cudaErrorIllegalAddress,
                        format("%s: matrix %s (%lld x %lld, ld %lld, stride %lld, batch %d) is not "
                               "inside one device allocation: a GPU would read or write out of bounds",
                               g.call, names[i], (long long)mats[i]->rows, (long long)mats[i]->cols,
                               (long long)mats[i]->ld, (long long)mats[i]->stride, g.batch));
      return false;
    }
  const int m = g.m, n = g.n, k = g.k;
  const cudaDataType ct_ = g.c.t;
  const int64_t ldc = g.c.ld, sc = g.c.stride;
  std::vector<float> a32, b32, c32;
  for (int bi = 0; bi < g.batch; ++bi) {
    int64_t la, lb, lc = ldc;
    const float* pa = as_f32(g.a, bi, a32, &la);
    const float* pb = as_f32(g.b, bi, b32, &lb);
    float* pc;
    const bool c_fp32 = ct_ == CUDA_R_32F;
    if (c_fp32) pc = static_cast<float*>(g.c_out) + bi * sc;
    else {
      c32.assign(static_cast<size_t>(int64_t(m) * n), 0.0f);
      if (g.beta != 0.0f)
        for (int64_t c = 0; c < n; ++c)
          for (int64_t r = 0; r < m; ++r) c32[c * m + r] = load(g.c_out, ct_, bi * sc + c * ldc + r);
      pc = c32.data();
      lc = m;
    }
    if (k == 0) {  // C = beta * C (BLAS semantics; beta 0 does not read C)
      for (int64_t c = 0; c < n; ++c)
        for (int64_t r = 0; r < m; ++r) pc[c * lc + r] = g.beta == 0.0f ? 0.0f : g.beta * pc[c * lc + r];
    } else {
      cblas_sgemm(CblasColMajor, g.ta == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
                  g.tb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans, m, n, k, g.alpha, pa,
                  static_cast<int>(la), pb, static_cast<int>(lb), g.beta, pc, static_cast<int>(lc));
    }
    if (!c_fp32)
      for (int64_t c = 0; c < n; ++c)
        for (int64_t r = 0; r < m; ++r) store(g.c_out, ct_, bi * sc + c * ldc + r, c32[c * m + r]);
  }
  return true;
}

// A GEMM recorded by stream capture (a kernel node on a GPU). The workspace it was captured
// with must still be allocated when it runs.
struct GemmOp : emu::GraphOp {
  GemmCall g;
  explicit GemmOp(const GemmCall& call) : g(call) {}
  cudaGraphNodeType type() const override { return cudaGraphNodeTypeKernel; }
  std::string describe() const override {
    return format("%s node (m %d n %d k %d, batch %d)", g.call, g.m, g.n, g.k, g.batch);
  }
  void run() const override {
    if (emu::sticky_error() != cudaSuccess) return;
    if (g.workspace_bytes > 0 && !emu::device_range_ok(g.workspace, g.workspace_bytes))
      return emu::record_fault(cudaErrorIllegalAddress,
                               format("%s: the cuBLAS workspace it was captured with (%zu bytes at "
                                      "%p) is no longer allocated",
                                      describe().c_str(), g.workspace_bytes, g.workspace));
    gemm_run(g);
  }
};

cublasStatus_t gemm(const char* call, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                    int m, int n, int k, const void* alpha, const void* A, cudaDataType at,
                    int lda, long long sa, const void* B, cudaDataType bt, int ldb, long long sb,
                    const void* beta, void* C, cudaDataType ct_, int ldc, long long sc, int batch,
                    cublasComputeType_t comp, bool pointer_arrays = false) {
  if (h == nullptr) return refuse(CUBLAS_STATUS_NOT_INITIALIZED, format("%s: null handle", call));
  const auto op_ok = [](cublasOperation_t o) { return o == CUBLAS_OP_N || o == CUBLAS_OP_T || o == CUBLAS_OP_C; };
  const int64_t a_rows = ta == CUBLAS_OP_N ? m : k, b_rows = tb == CUBLAS_OP_N ? k : n;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || !op_ok(ta) || !op_ok(tb) ||
      lda < std::max<int64_t>(1, a_rows) || ldb < std::max<int64_t>(1, b_rows) ||
      ldc < std::max(1, m) || alpha == nullptr || beta == nullptr)
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  format("%s: invalid arguments (as cuBLAS checks them): m %d n %d k %d, op %d/%d, "
                         "lda %d (needs >= %lld), ldb %d (needs >= %lld), ldc %d (needs >= %d), "
                         "batch %d",
                         call, m, n, k, int(ta), int(tb), lda, (long long)std::max<int64_t>(1, a_rows),
                         ldb, (long long)std::max<int64_t>(1, b_rows), ldc, std::max(1, m), batch));
  if (!cublas_accepts(comp, at, bt, ct_))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                  format("%s: cuBLAS does not support compute type %d with A %s, B %s, C %s", call,
                         int(comp), type_name(at), type_name(bt), type_name(ct_)));
  if (!emu_models(comp, at, ct_))
    return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                  format("%s: compute type %d with A %s, C %s is valid in cuBLAS but NOT MODELLED by "
                         "the emulator (tests/emu/cublas.cpp); it is refused rather than approximated",
                         call, int(comp), type_name(at), type_name(ct_)));
  if (ta == CUBLAS_OP_C) ta = CUBLAS_OP_T;  // real types: the conjugate transpose is the transpose
  if (tb == CUBLAS_OP_C) tb = CUBLAS_OP_T;
  if (emu::sticky_error() != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  const GemmCall g{call, ta, tb, m, n, k, batch,
                   *static_cast<const float*>(alpha), *static_cast<const float*>(beta),
                   Stored{A, at, a_rows, ta == CUBLAS_OP_N ? k : m, lda, sa},
                   Stored{B, bt, b_rows, tb == CUBLAS_OP_N ? n : k, ldb, sb},
                   Stored{C, ct_, m, n, ldc, sc}, C, h->workspace, h->workspace_bytes};
  GemmCall call_g = g;
  if (pointer_arrays) {  // A, B, C are the arrays: the matrices are known when the GEMM runs
    call_g.arrays[0] = static_cast<const void* const*>(A);
    call_g.arrays[1] = static_cast<const void* const*>(B);
    call_g.arrays[2] = static_cast<const void* const*>(C);
  }
  bool captured = false;  // on a capturing stream the call is recorded, not run
  if (emu::enqueue(h->stream, call, [&] { return std::make_shared<const GemmOp>(call_g); }, &captured) !=
      cudaSuccess)
    return CUBLAS_STATUS_EXECUTION_FAILED;
  if (captured) return CUBLAS_STATUS_SUCCESS;
  return gemm_run(call_g) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

}  // namespace

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (emu::sticky_error() != cudaSuccess) return CUBLAS_STATUS_NOT_INITIALIZED;
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!emu::stream_valid(stream)) return refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasSetStream: not a live stream");
  handle->stream = stream;
  handle->workspace = nullptr;  // as cuBLAS: setting the stream resets the workspace to its own
  handle->workspace_bytes = 0;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, size_t bytes) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bytes > 0 && !emu::device_range_ok(workspace, bytes))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasSetWorkspace: the workspace is not device memory");
  if (reinterpret_cast<uintptr_t>(workspace) % 256 != 0)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasSetWorkspace: the workspace is not 256-byte aligned");
  handle->workspace = bytes > 0 ? workspace : nullptr;
  handle->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetVersion(cublasHandle_t handle, int* version) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (version == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *version = 130000;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetSmCountTarget(cublasHandle_t handle, int sm_count_target) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (sm_count_target < 0)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, format("cublasSetSmCountTarget: %d SMs (needs >= 0)", sm_count_target));
  handle->sm_count_target = sm_count_target;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetSmCountTarget(cublasHandle_t handle, int* sm_count_target) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (sm_count_target == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *sm_count_target = handle->sm_count_target;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}
const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    default: return "see cublasGetStatusName";
  }
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t) {
  return gemm("cublasGemmEx", handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype,
              ldb, 0, beta, C, Ctype, ldc, 0, 1, computeType);
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType Atype, int lda, long long strideA,
    const void* B, cudaDataType Btype, int ldb, long long strideB, const void* beta, void* C,
    cudaDataType Ctype, int ldc, long long strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t) {
  return gemm("cublasGemmStridedBatchedEx", handle, transa, transb, m, n, k, alpha, A, Atype, lda,
              strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount,
              computeType);
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                   int m, int n, int k, const void* alpha, const void* const Aarray[],
                                   cudaDataType Atype, int lda, const void* const Barray[], cudaDataType Btype,
                                   int ldb, const void* beta, void* const Carray[], cudaDataType Ctype, int ldc,
                                   int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t) {
  return gemm("cublasGemmBatchedEx", handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda, 0, Barray,
              Btype, ldb, 0, beta, const_cast<void**>(Carray), Ctype, ldc, 0, batchCount, computeType,
              /*pointer_arrays=*/true);
}
