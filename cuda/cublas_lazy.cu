// cuBLAS opened on first use (dlopen), not at start-up. Linked the usual way, libcublas pulls in
// libcublasLt, whose start-up maps about 146 MB of resident memory (61 MB of relocated data and an
// 84 MB .bss its constructors touch) into every process, CPU runs included: a SmolLM2 --tune scales
// run on the CPU peaked at 416 MB of which that was a third. These definitions are the cuBLAS entry
// points the backend calls, each forwarding to the library's own, which the first call loads; the
// program links -ldl instead of -lcublas. The emulated build has its own cuBLAS (tests/emu/cublas.cpp).
#ifndef SMEZO_EMU
#include <dlfcn.h>

#include <string>

#include <cublas_v2.h>

#include "common/check.h"

namespace {

// The library's handle, opened once; throws smezo::Error (and tries again next call) if it is absent.
void* cublas_library() {
  static void* const library = [] {
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    const char* why = handle ? "" : dlerror();
    SMEZO_REQUIRE(handle, "the CUDA backend needs %s, which did not load (%s) ---> HINT: install the CUDA "
                  "toolkit's cuBLAS %d, or put its folder on LD_LIBRARY_PATH", name.c_str(), why, CUBLAS_VER_MAJOR);
    return handle;
  }();
  return library;
}

template <typename Fn>
Fn cublas_symbol(const char* name) {
  void* symbol = dlsym(cublas_library(), name);
  SMEZO_REQUIRE(symbol, "libcublas.so.%d has no %s (dlsym: %s) ---> HINT: the program was built against "
                "another cuBLAS: rebuild it (make) against the one installed", CUBLAS_VER_MAJOR, name, dlerror());
  return reinterpret_cast<Fn>(symbol);
}

// The pointer type of a function returning R that takes the arguments' types (the header overloads
// some entry points in C++, so decltype(&fn) would be ambiguous).
template <typename R, typename... A>
constexpr R (*function_type(A...))(A...) { return nullptr; }

}  // namespace

// The exported name of an entry point: cublas_v2.h maps several to a _v2 symbol by macro.
#define SMEZO_CUBLAS_NAME2(fn) #fn
#define SMEZO_CUBLAS_NAME(fn) SMEZO_CUBLAS_NAME2(fn)
// The body of a forwarding definition: the library's fn, looked up once, called with the parameters.
#define SMEZO_CUBLAS_FORWARD(R, fn, ...)                                                               \
  static const auto real = cublas_symbol<decltype(function_type<R>(__VA_ARGS__))>(SMEZO_CUBLAS_NAME(fn)); \
  return real(__VA_ARGS__)

cublasStatus_t cublasCreate(cublasHandle_t* handle) { SMEZO_CUBLAS_FORWARD(cublasStatus_t, cublasCreate, handle); }
cublasStatus_t cublasDestroy(cublasHandle_t handle) { SMEZO_CUBLAS_FORWARD(cublasStatus_t, cublasDestroy, handle); }
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  SMEZO_CUBLAS_FORWARD(cublasStatus_t, cublasSetStream, handle, stream);
}
cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream) {
  SMEZO_CUBLAS_FORWARD(cublasStatus_t, cublasGetStream, handle, stream);
}
cublasStatus_t cublasGetVersion(cublasHandle_t handle, int* version) {
  SMEZO_CUBLAS_FORWARD(cublasStatus_t, cublasGetVersion, handle, version);
}
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void* workspace, size_t bytes) {
  SMEZO_CUBLAS_FORWARD(cublasStatus_t, cublasSetWorkspace, handle, workspace, bytes);
}
cublasStatus_t cublasSetSmCountTarget(cublasHandle_t handle, int sm_count_target) {
  SMEZO_CUBLAS_FORWARD(cublasStatus_t, cublasSetSmCountTarget, handle, sm_count_target);
}
const char* cublasGetStatusString(cublasStatus_t status) {
  SMEZO_CUBLAS_FORWARD(const char*, cublasGetStatusString, status);
}
const char* cublasGetStatusName(cublasStatus_t status) {
  SMEZO_CUBLAS_FORWARD(const char*, cublasGetStatusName, status);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B,
                            cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  SMEZO_CUBLAS_FORWARD(cublasStatus_t, cublasGemmEx, handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype,
                       ldb, beta, C, Ctype, ldc, compute, algo);
}
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
                                          long long int strideB, const void* beta, void* C, cudaDataType Ctype,
                                          int ldc, long long int strideC, int batch, cublasComputeType_t compute,
                                          cublasGemmAlgo_t algo) {
  SMEZO_CUBLAS_FORWARD(cublasStatus_t, cublasGemmStridedBatchedEx, handle, transa, transb, m, n, k, alpha, A, Atype,
                       lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batch, compute, algo);
}
cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                   int n, int k, const void* alpha, const void* const A[], cudaDataType Atype, int lda,
                                   const void* const B[], cudaDataType Btype, int ldb, const void* beta,
                                   void* const C[], cudaDataType Ctype, int ldc, int batch,
                                   cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  SMEZO_CUBLAS_FORWARD(cublasStatus_t, cublasGemmBatchedEx, handle, transa, transb, m, n, k, alpha, A, Atype, lda, B,
                       Btype, ldb, beta, C, Ctype, ldc, batch, compute, algo);
}
#endif  // SMEZO_EMU
