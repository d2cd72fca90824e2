// The emulated CUDA target's own tests (built only by `make emu`, run by `make emu-test`): a
// set of deliberately wrong kernels and calls, each of which the emulator must catch with a
// clear message, beside a correct twin that must pass; plus the emulated hardware's
// arithmetic (16-bit conversions, cuRAND's Philox known-answer vector, atomics, cuBLAS).
// A caught fault is sticky, as on a GPU; each test ends it with emu::clear_fault().
// The out-of-bounds write and the misaligned vector load are also checked under EMU_SAN=1,
// where AddressSanitizer / UBSan end the process (death tests).
#include <gtest/gtest.h>

#include <cublas_v2.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <curand_philox4x32_x.h>
#include <mma.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/half.h"
#include "tests/test_util.h"

namespace {

// ---- helpers

template <typename T>
struct Dev {
  T* p = nullptr;
  size_t n = 0;
  explicit Dev(size_t count) : n(count) { EXPECT_EQ(cudaMalloc(&p, count * sizeof(T)), cudaSuccess); }
  ~Dev() { cudaFree(p); }
  std::vector<T> get() const {
    std::vector<T> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  void put(const std::vector<T>& h) {
    ASSERT_EQ(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
};

// Runs `launch`, expects the fault `code` with `words` in the emulator's message, clears it.
template <typename F>
void expect_fault(F launch, cudaError_t code, const std::string& words) {
  launch();
  const cudaError_t err = cudaDeviceSynchronize();
  const std::string msg = emu::last_diagnostic();
  EXPECT_EQ(err, code) << cudaGetErrorName(err) << ": " << msg;
  EXPECT_NE(msg.find(words), std::string::npos) << "message: " << msg;
  emu::clear_fault();
}

struct ScheduleGuard {  // restores the schedule a test changed
  std::string saved = emu::schedule_name();
  ~ScheduleGuard() { emu::set_schedule(saved.c_str()); }
};

constexpr int kN = 256;

// ---- missing __syncthreads

__global__ void neighbour_kernel(int* out, int seed, bool with_barrier) {
  __shared__ int s[kN];
  const int t = threadIdx.x;
  s[t] = seed + t;
  if (with_barrier) __syncthreads();
  out[t] = s[(t + 1) % kN];
}

std::vector<int> run_neighbour(int seed, bool with_barrier) {
  Dev<int> out(kN);
  neighbour_kernel<<<1, kN>>>(out.p, seed, with_barrier);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  return out.get();
}

TEST(EmuSelfTest, MissingSyncthreadsChangesTheResultUnderEverySchedule) {
  ScheduleGuard guard;
  int seed = 1000;
  for (const char* sched : {"fwd", "rev", "random:7"}) {
    ASSERT_TRUE(emu::set_schedule(sched));
    seed += 1000;
    std::vector<int> expected(kN);
    for (int t = 0; t < kN; ++t) expected[t] = seed + (t + 1) % kN;
    EXPECT_EQ(run_neighbour(seed, true), expected) << "correct twin, schedule " << sched;
    const std::vector<int> racy = run_neighbour(seed, false);
    int wrong = 0;
    for (int t = 0; t < kN; ++t) wrong += racy[t] != expected[t];
    EXPECT_GT(wrong, 0) << "schedule " << sched
                        << ": a kernel without its __syncthreads computed the right answer";
    std::printf("  schedule %-8s: missing __syncthreads gives %d of %d wrong values\n", sched,
                wrong, kN);
  }
}

// ---- divergent barrier

__global__ void barrier_kernel(int* out, int mode) {
  const int t = threadIdx.x;
  if (mode == 1 && t >= 16) return;  // half the block leaves
  if (mode == 2 && t >= 16) {
    __syncthreads();  // a different barrier
  } else {
    __syncthreads();
  }
  out[t] = t;
}

TEST(EmuSelfTest, DivergentBarrierIsReported) {
  Dev<int> out(64);
  barrier_kernel<<<1, 64>>>(out.p, 0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "correct twin";
  expect_fault([&] { barrier_kernel<<<1, 64>>>(out.p, 1); }, cudaErrorLaunchFailure,
               "divergent __syncthreads");
  Dev<int> out2(64);
  expect_fault([&] { barrier_kernel<<<1, 64>>>(out2.p, 2); }, cudaErrorLaunchFailure,
               "divergent __syncthreads");
}

// ---- out-of-bounds write

__global__ void fill_kernel(float* out, int n, int extra) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n + extra) out[i] = 1.0f;
}

TEST(EmuSelfTest, OutOfBoundsWriteIsReported) {
  float* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 100 * sizeof(float)), cudaSuccess);
  fill_kernel<<<1, 128>>>(p, 100, 0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "correct twin";
#if defined(__SANITIZE_ADDRESS__)
  EXPECT_DEATH(
      {
        fill_kernel<<<1, 128>>>(p, 100, 1);
        cudaDeviceSynchronize();
      },
      "heap-buffer-overflow");
  cudaFree(p);
#else
  expect_fault([&] { fill_kernel<<<1, 128>>>(p, 100, 1); }, cudaErrorIllegalAddress,
               "out-of-bounds write: byte 1 after the end of allocation");
#endif
}

// ---- misaligned vector load

__global__ void load4_kernel(const float* in, float* out, int offset) {
  const float4 v = *reinterpret_cast<const float4*>(in + offset);
  out[threadIdx.x] = v.x + v.y + v.z + v.w;
}

TEST(EmuSelfTest, MisalignedFloat4LoadIsReported) {
  Dev<float> in(64), out(32);
  in.put(std::vector<float>(64, 1.0f));
  load4_kernel<<<1, 32>>>(in.p, out.p, 4);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "correct twin";
  EXPECT_EQ(out.get()[0], 4.0f);
#if !defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "a misaligned vector load is caught by UBSan: run make emu-test EMU_SAN=1";
#endif
  EXPECT_DEATH(
      {
        load4_kernel<<<1, 32>>>(in.p, out.p, 1);
        cudaDeviceSynchronize();
      },
      "misaligned address .* for type 'const.*float4'");
}

// ---- shuffles with a wrong mask

__global__ void shfl_kernel(float* out, int mode) {
  const int lane = threadIdx.x % 32;
  float v = static_cast<float>(lane);
  if (mode == 0) v += __shfl_xor_sync(0xffffffffu, v, 1);
  if (mode == 1) v += __shfl_xor_sync(0x0000ffffu, v, 1);  // lanes 16-31 are not in the mask
  if (mode == 2) v += __shfl_xor_sync(0x0000ffffu, v, 16, 32);  // reads lanes outside the mask
  if (mode == 3) {
    if (lane >= 16) return;
    v += __shfl_xor_sync(0xffffffffu, v, 1);  // names lanes that have exited
  }
  out[threadIdx.x] = v;
}

TEST(EmuSelfTest, ShuffleWithAWrongMaskIsReported) {
  Dev<float> out(32);
  shfl_kernel<<<1, 32>>>(out.p, 0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "correct twin";
  const std::vector<float> got = out.get();
  for (int l = 0; l < 32; ++l) EXPECT_EQ(got[l], static_cast<float>(l + (l ^ 1)));
  expect_fault([&] { shfl_kernel<<<1, 32>>>(out.p, 1); }, cudaErrorLaunchFailure,
               "which does not name its own lane");
  Dev<float> out2(32);
  expect_fault(
      [&] {
        shfl_kernel<<<1, 16>>>(out2.p, 2);
      },
      cudaErrorLaunchFailure, "which is not in the mask");
  Dev<float> out3(32);
  expect_fault([&] { shfl_kernel<<<1, 32>>>(out3.p, 3); }, cudaErrorLaunchFailure, "has exited");
}

// ---- dynamic shared memory over 48 KB

__global__ void big_smem_kernel(float* out, int n) {
  extern __shared__ float big[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) big[i] = 1.0f;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int i = 0; i < n; ++i) s += big[i];
    out[0] = s;
  }
}

TEST(EmuSelfTest, DynamicSharedMemoryOver48KbNeedsTheAttribute) {
  Dev<float> out(1);
  const int n = 16384;  // 64 KB
  big_smem_kernel<<<1, 128, n * sizeof(float)>>>(out.p, n);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_NE(std::string(emu::last_diagnostic()).find("cudaFuncSetAttribute"), std::string::npos)
      << emu::last_diagnostic();
  ASSERT_EQ(cudaFuncSetAttribute(big_smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 n * sizeof(float)),
            cudaSuccess);
  big_smem_kernel<<<1, 128, n * sizeof(float)>>>(out.p, n);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess) << "correct twin";
  EXPECT_EQ(out.get()[0], static_cast<float>(n));
  EXPECT_EQ(cudaFuncSetAttribute(big_smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 228 * 1024),
            cudaErrorInvalidValue);
  cudaGetLastError();
  big_smem_kernel<<<1, 1025>>>(out.p, 1);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration) << "1025 threads per block";
}

// ---- cuBLAS argument checks

TEST(EmuSelfTest, CublasBadLeadingDimensionIsRefused) {
  // C (m x n) = A^T (m x k) * B (k x n), A stored k x m (lda >= k), small integers: exact.
  const int m = 5, n = 3, k = 7;
  std::vector<float> a(k * m), b(k * n), c(m * n, -1.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(int(i % 5) - 2);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(int(i % 3) - 1);
  Dev<float> da(a.size()), db(b.size()), dc(c.size());
  da.put(a);
  db.put(b);
  cublasHandle_t h = nullptr;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  const float one = 1.0f, zero = 0.0f;
  ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, da.p, CUDA_R_32F, k, db.p,
                         CUDA_R_32F, k, &zero, dc.p, CUDA_R_32F, m, CUBLAS_COMPUTE_32F_PEDANTIC,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS)
      << "correct twin";
  const std::vector<float> got = dc.get();
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float s = 0.0f;
      for (int q = 0; q < k; ++q) s += a[i * k + q] * b[j * k + q];
      EXPECT_EQ(got[j * m + i], s) << i << "," << j;
    }
  EXPECT_EQ(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, da.p, CUDA_R_32F, k - 1, db.p,
                         CUDA_R_32F, k, &zero, dc.p, CUDA_R_32F, m, CUBLAS_COMPUTE_32F_PEDANTIC,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(std::string(emu::last_diagnostic()).find("lda 6 (needs >= 7)"), std::string::npos)
      << emu::last_diagnostic();
  EXPECT_EQ(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, da.p, CUDA_R_32F, k, db.p,
                         CUDA_R_32F, k, &zero, dc.p, CUDA_R_32F, m, CUBLAS_COMPUTE_32F_FAST_TF32,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_NE(std::string(emu::last_diagnostic()).find("NOT MODELLED"), std::string::npos)
      << emu::last_diagnostic();
  // B's extent (k x n with ldb 70) runs past its allocation: a GPU would fault.
  EXPECT_EQ(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, da.p, CUDA_R_32F, k, db.p,
                         CUDA_R_32F, 70, &zero, dc.p, CUDA_R_32F, m, CUBLAS_COMPUTE_32F_PEDANTIC,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_EXECUTION_FAILED);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  emu::clear_fault();
  cublasDestroy(h);
}

TEST(EmuSelfTest, CublasBatchedPointerArraysReadEachProblemsMatrices) {
  // Three problems C_i (m x n) = A_i^T B with one shared B, A_i and C_i in separate allocations, the
  // pointers in device arrays: each C_i must equal cublasGemmEx of (A_i, B) bit for bit (the same
  // sgemm on the same operands), random normal inputs, C poisoned.
  const int m = 6, n = 5, k = 9, batch = 3;
  std::mt19937 rng(4144);
  std::normal_distribution<float> normal;
  std::vector<Dev<float>*> as, cs;
  Dev<float> b(k * n), ref(m * n);
  std::vector<float> hb(b.n);
  for (float& v : hb) v = normal(rng);
  b.put(hb);
  std::vector<const void*> a_ptrs, b_ptrs;
  std::vector<void*> c_ptrs;
  for (int i = 0; i < batch; ++i) {
    as.push_back(new Dev<float>(k * m));
    cs.push_back(new Dev<float>(m * n));
    std::vector<float> ha(as[i]->n);
    for (float& v : ha) v = normal(rng);
    as[i]->put(ha);
    cs[i]->put(std::vector<float>(cs[i]->n, std::nanf("")));
    a_ptrs.push_back(as[i]->p);
    b_ptrs.push_back(b.p);
    c_ptrs.push_back(cs[i]->p);
  }
  Dev<const void*> da(batch), db(batch);
  Dev<void*> dc(batch);
  da.put(a_ptrs);
  db.put(b_ptrs);
  dc.put(c_ptrs);
  cublasHandle_t h = nullptr;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  const float one = 1.0f, zero = 0.0f;
  auto batched = [&](const void* const* A, const void* const* B, void* const* C) {
    return cublasGemmBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, A, CUDA_R_32F, k, B, CUDA_R_32F, k,
                               &zero, C, CUDA_R_32F, m, batch, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT);
  };
  ASSERT_EQ(batched(da.p, db.p, dc.p), CUBLAS_STATUS_SUCCESS) << "correct twin";
  for (int i = 0; i < batch; ++i) {
    ASSERT_EQ(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, as[i]->p, CUDA_R_32F, k, b.p, CUDA_R_32F, k,
                           &zero, ref.p, CUDA_R_32F, m, CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT),
              CUBLAS_STATUS_SUCCESS);
    const std::vector<float> got = cs[i]->get(), want = ref.get();
    for (int e = 0; e < m * n; ++e) ASSERT_EQ(got[e], want[e]) << "problem " << i << " entry " << e;
  }
  // Planted bug: the pointer arrays left in host memory (a GPU kernel cannot read them).
  EXPECT_EQ(batched(a_ptrs.data(), b_ptrs.data(), c_ptrs.data()), CUBLAS_STATUS_EXECUTION_FAILED);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  EXPECT_NE(std::string(emu::last_diagnostic()).find("Aarray"), std::string::npos) << emu::last_diagnostic();
  emu::clear_fault();
  // Planted bug: problem 2's C pointer one row block too far (past its allocation's end).
  c_ptrs[2] = cs[2]->p + m;
  dc.put(c_ptrs);
  EXPECT_EQ(batched(da.p, db.p, dc.p), CUBLAS_STATUS_EXECUTION_FAILED);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  EXPECT_NE(std::string(emu::last_diagnostic()).find("matrix C"), std::string::npos) << emu::last_diagnostic();
  emu::clear_fault();
  for (int i = 0; i < batch; ++i) {
    delete as[i];
    delete cs[i];
  }
  cublasDestroy(h);
}

// ---- deadlock

__global__ void deadlock_kernel(float* out, bool bad) {
  float v = threadIdx.x;
  if (!bad || threadIdx.x == 0) v = __shfl_sync(0xffffffffu, v, 0);
  __syncthreads();
  out[threadIdx.x] = v;
}

TEST(EmuSelfTest, DeadlockIsReported) {
  Dev<float> out(32);
  deadlock_kernel<<<1, 32>>>(out.p, false);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << "correct twin";
  expect_fault([&] { deadlock_kernel<<<1, 32>>>(out.p, true); }, cudaErrorLaunchTimeout,
               "deadlock: no thread can proceed");
}

// ---- the runtime's own checks

TEST(EmuSelfTest, CopiesOutsideAnAllocationAreRefused) {
  Dev<float> d(16);
  std::vector<float> h(32, 1.0f);
  EXPECT_EQ(cudaMemcpy(d.p, h.data(), 16 * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d.p, h.data(), 17 * sizeof(float), cudaMemcpyHostToDevice),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "not sticky";
  EXPECT_EQ(cudaMemcpy(h.data(), d.p + 8, 9 * sizeof(float), cudaMemcpyDeviceToHost),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(d.p + 1, 0, 16 * sizeof(float)), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(h.data()), cudaErrorInvalidValue);
  cudaGetLastError();
}

// A wait on a destroyed event or a dead stream is refused (the two-stream probe of bench/excess_bench.cu
// orders its streams with these); the correct twin passes.
TEST(EmuSelfTest, StreamWaitEventChecksItsHandles) {
  cudaStream_t s = nullptr;
  cudaEvent_t e = nullptr, gone = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&e), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&gone), cudaSuccess);
  ASSERT_EQ(cudaEventDestroy(gone), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(e, s), cudaSuccess);
  EXPECT_EQ(cudaStreamWaitEvent(nullptr, e, 0), cudaSuccess) << "correct twin";
  EXPECT_EQ(cudaStreamWaitEvent(s, gone, 0), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaStreamWaitEvent(s, e, 7), cudaErrorInvalidValue);
  cudaStreamDestroy(s);
  EXPECT_EQ(cudaStreamWaitEvent(s, e, 0), cudaErrorInvalidResourceHandle);
  cudaEventDestroy(e);
  cudaGetLastError();
}

// cublasSetSmCountTarget keeps what it is given and refuses a negative count.
TEST(EmuSelfTest, CublasSmCountTargetIsKeptAndChecked) {
  cublasHandle_t h = nullptr;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  int got = -1;
  ASSERT_EQ(cublasGetSmCountTarget(h, &got), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(got, 0);
  EXPECT_EQ(cublasSetSmCountTarget(h, 116), CUBLAS_STATUS_SUCCESS) << "correct twin";
  ASSERT_EQ(cublasGetSmCountTarget(h, &got), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(got, 116);
  EXPECT_EQ(cublasSetSmCountTarget(h, -1), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(std::string(emu::last_diagnostic()).find("cublasSetSmCountTarget: -1 SMs"), std::string::npos)
      << emu::last_diagnostic();
  ASSERT_EQ(cublasGetSmCountTarget(h, &got), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(got, 116) << "a refused value leaves the last one";
  cublasDestroy(h);
}

__global__ void one_kernel(int* p) { *p = 1; }

// cudaProfilerStart/Stop regions are recorded with the launches inside them; a stop without a start
// (which a real profiler ignores) is counted apart, so a test can tell a bench that brackets wrongly.
TEST(EmuSelfTest, ProfilerRegionsCountTheirLaunches) {
  Dev<int> d(1);
  emu::reset_profiler_record();
  one_kernel<<<1, 1>>>(d.p);  // outside any region
  ASSERT_EQ(cudaProfilerStart(), cudaSuccess);
  one_kernel<<<1, 1>>>(d.p);
  one_kernel<<<1, 1>>>(d.p);
  ASSERT_EQ(cudaProfilerStop(), cudaSuccess);
  ASSERT_EQ(cudaProfilerStop(), cudaSuccess);  // the planted mistake
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const emu::ProfilerRecord r = emu::profiler_record();
  EXPECT_EQ(r.regions, 1);
  EXPECT_EQ(r.launches_inside, 2);
  EXPECT_EQ(r.unmatched_stops, 1);
  emu::reset_profiler_record();
  EXPECT_EQ(emu::profiler_record().regions, 0);
}

TEST(EmuSelfTest, FreshDeviceMemoryIsNaN) {
  Dev<float> d(8);
  for (float v : d.get()) EXPECT_TRUE(std::isnan(v));
}

// ---- emulated arithmetic

__global__ void atomic_kernel(unsigned long long* counter, int* imin) {
  atomicAdd(counter, 1ull);
  atomicMin(imin, static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x));
}

TEST(EmuSelfTest, AtomicsAreAtomicAcrossBlocks) {
  Dev<unsigned long long> c(1);
  Dev<int> m(1);
  c.put({0});
  m.put({1 << 30});
  atomic_kernel<<<200, 64>>>(c.p, m.p);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(c.get()[0], 200ull * 64);
  EXPECT_EQ(m.get()[0], 0);
}

TEST(EmuSelfTest, HalfAndBfloat16ConversionsRoundToNearestEven) {
  // Every 16-bit pattern converts to float and back unchanged (NaNs become canonical).
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = emu::f16_to_f32(static_cast<uint16_t>(b));
    if (std::isnan(f)) {
      EXPECT_EQ(emu::f32_to_f16_rn(f), 0x7fffu);
      continue;
    }
    ASSERT_EQ(emu::f32_to_f16_rn(f), b);
    const float g = emu::bf16_to_f32(static_cast<uint16_t>(b));
    ASSERT_EQ(emu::f32_to_bf16_rn(g), std::isnan(g) ? 0x7fffu : b);
  }
  // Ties go to even; 65520 overflows to infinity; the smallest subnormal's half rounds to 0.
  EXPECT_EQ(emu::f32_to_f16_rn(1.0f + 1.0f / 2048), 0x3c00u);
  EXPECT_EQ(emu::f32_to_f16_rn(1.0f + 3.0f / 2048), 0x3c02u);
  EXPECT_EQ(emu::f32_to_f16_rn(65519.0f), 0x7bffu);
  EXPECT_EQ(emu::f32_to_f16_rn(65520.0f), 0x7c00u);
  EXPECT_EQ(emu::f32_to_f16_rn(std::ldexp(1.0f, -25)), 0x0000u);
  EXPECT_EQ(emu::f32_to_f16_rn(std::ldexp(1.5f, -25)), 0x0001u);
  // Two independent implementations agree: the emulator's and the project's host one.
  std::mt19937 rng(12345);
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, sizeof f);
    if (std::isnan(f)) continue;
    ASSERT_EQ(emu::f32_to_f16_rn(f), smezo::float_to_f16(f)) << f;
    ASSERT_EQ(emu::f32_to_bf16_rn(f), smezo::float_to_bf16(f)) << f;
  }
}

TEST(EmuSelfTest, PhiloxKnownAnswer) {
  const uint4 r = curand_Philox4x32_10(make_uint4(0, 0, 0, 0), make_uint2(0, 0));
  EXPECT_EQ(r.x, 0x6627e8d5u);
  EXPECT_EQ(r.y, 0xe169c58du);
  EXPECT_EQ(r.z, 0xbc57ac4cu);
  EXPECT_EQ(r.w, 0x9b00dbd8u);
  const uint4 s = curand_Philox4x32_10(make_uint4(~0u, ~0u, ~0u, ~0u), make_uint2(~0u, ~0u));
  EXPECT_EQ(s.x, 0x408f276du);  // Random123's kat_vectors for philox4x32_10
  EXPECT_EQ(s.y, 0x41c83b0eu);
  EXPECT_EQ(s.z, 0xa20bc7c6u);
  EXPECT_EQ(s.w, 0x6d5451fdu);
}

// ---- wmma: a 16x16x16 product against plain loops, and a misaligned pointer

__global__ void wmma_kernel(const __half* a, const __half* b, float* c, int offset) {
  namespace wmma = nvcuda::wmma;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 1.0f);
  wmma::load_matrix_sync(fa, a + offset, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
}

TEST(EmuSelfTest, WmmaMatchesLoopsAndChecksAlignment) {
  std::vector<__half> a(256 + 8), b(256);
  std::vector<float> fa(256), fb(256);
  for (int i = 0; i < 256; ++i) {
    fa[i] = static_cast<float>(i % 7 - 3);
    fb[i] = static_cast<float>(i % 5 - 2);
    a[i] = __float2half_rn(fa[i]);
    b[i] = __float2half_rn(fb[i]);
  }
  Dev<__half> da(a.size()), db(b.size());
  Dev<float> dc(256);
  da.put(a);
  db.put(b);
  wmma_kernel<<<1, 32>>>(da.p, db.p, dc.p, 0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> c = dc.get();
  for (int r = 0; r < 16; ++r)
    for (int col = 0; col < 16; ++col) {
      float s = 1.0f;
      for (int k = 0; k < 16; ++k) s += fa[r * 16 + k] * fb[col * 16 + k];  // b col-major
      EXPECT_EQ(c[r * 16 + col], s) << r << "," << col;
    }
  expect_fault([&] { wmma_kernel<<<1, 32>>>(da.p, db.p, dc.p, 8); }, cudaErrorLaunchFailure,
               "is not 256-bit aligned");
}

// ---- inline PTX: refused by name at build time

TEST(EmuSelfTest, InlinePtxIsRefusedByName) {
  const std::string dir = smezo_test::make_temp_dir("emu_ptx");
  smezo_test::write_file(dir + "/ok.cu", "// asm(\"not code\")\n__global__ void k(int* p) { *p = 1; }\n"
                                         "void f(int* p) { k<<<1, 1>>>(p); }\n");
  smezo_test::write_file(dir + "/ptx.cu", "__global__ void k(float* d) {\n  float v;\n"
                                          "  asm volatile(\"mma.sync.aligned.m16n8k16 ...\" : \"=f\"(v));\n}\n");
  const std::string tool = smezo_test::build_dir() + "/launch_rewrite ";
  std::string out;
  EXPECT_EQ(smezo_test::run_command(tool + dir + "/ok.cu " + dir + "/ok.cpp", &out), 0) << out;
  EXPECT_NE(smezo_test::read_file(dir + "/ok.cpp").find("::emu::make_launch(k, \"k\""), std::string::npos);
  EXPECT_NE(smezo_test::run_command(tool + dir + "/ptx.cu " + dir + "/ptx.cpp", &out), 0);
  EXPECT_NE(out.find("ptx.cu:3: emu launch_rewrite: inline PTX `mma.sync.aligned.m16n8k16` is not emulated"),
            std::string::npos)
      << out;
}

}  // namespace
