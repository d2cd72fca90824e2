// Emulated CUDA: what device code sees. The CUDA keywords as C++ (kernels are plain
// functions; __shared__ is per-OS-thread storage, and one OS thread runs one block at a time,
// so it is per block), the built-in variables (the scheduler sets them for the fiber it
// runs), the warp collectives and barriers (cooperative: a fiber waits there until the
// scheduler completes the collective for every lane named in the mask, exec.cpp), atomics
// (real atomics: blocks run in parallel), and the intrinsics with the GPU's rounding.
// See tests/emu/README.md for what this models and what it does not.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "emu_types.h"

// ---- keywords
#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __shared__ thread_local
constexpr int warpSize = 32;

// ---- the built-in variables of the running thread (set by the scheduler at every switch):
// globals, as CUDA declares them, so that a member of the same name (cudaKernelNodeParams::
// gridDim) is still a member. Per OS thread: one OS thread runs a block at a time.
extern __thread uint3 threadIdx;
extern __thread uint3 blockIdx;
extern __thread dim3 blockDim;
extern __thread dim3 gridDim;

namespace emu {

extern __thread void* tl_dynamic_smem;

inline void* dynamic_shared_memory() { return tl_dynamic_smem; }

// A static __shared__ variable of this OS thread: filled with 0xff bytes now and at the start
// of every later block (exec.cpp), as uninitialised shared memory.
struct SharedPoison {
  SharedPoison(void* p, size_t bytes);
};

// ---- barriers and warp collectives (exec.cpp)
void syncthreads_at(const char* file, int line);

// One lane's part in a warp collective. The lane fills the inputs, waits, reads `result`.
struct CollArgs {
  uint64_t value = 0;   // operand bits (shuffle value, predicate, match key)
  int64_t arg = 0;      // shuffle source lane / delta / lane mask; wmma: ldm
  int width = 32;       // shuffle segment width
  int layout = 0;       // wmma memory layout
  void* ptr[4] = {};    // wmma: fragments and memory
  uint64_t result = 0;
  int pred = 0;
};
// `complete` runs once, in the scheduler, when every lane in `mask` has arrived at the same
// collective (same op, call site and mask); lanes[l] is lane l's CollArgs (null outside mask).
struct CollOp {
  const char* name;
  void (*complete)(CollArgs* const lanes[32], unsigned mask);
};
void warp_collective(const CollOp& op, unsigned mask, CollArgs& args, const char* file, int line);
// Ends the kernel with a clear message (called from a collective's `complete`).
[[noreturn]] void collective_fault(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

extern const CollOp kShfl, kBallot, kMatchAny, kMatchAll, kSyncwarp, kReduceAdd, kReduceMin,
    kReduceMax;

template <class T>
uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                "emu: warp shuffles of types wider than 8 bytes are not modelled");
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof v);
  return u;
}
template <class T>
T from_bits(uint64_t u) {
  T v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

// Shuffle modes packed into CollArgs::layout.
enum ShflMode { SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_XOR };
template <class T>
T shfl(ShflMode mode, unsigned mask, T v, int arg, int width, const char* file, int line) {
  CollArgs a;
  a.value = to_bits(v);
  a.arg = arg;
  a.width = width;
  a.layout = mode;
  warp_collective(kShfl, mask, a, file, line);
  return from_bits<T>(a.result);
}

}  // namespace emu


inline void __syncthreads(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::emu::syncthreads_at(file, line);
}
inline void __syncwarp(unsigned mask = 0xffffffffu, const char* file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
  ::emu::CollArgs a;
  ::emu::warp_collective(::emu::kSyncwarp, mask, a, file, line);
}
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

template <class T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32, const char* file = __builtin_FILE(),
              int line = __builtin_LINE()) {
  return ::emu::shfl(::emu::SHFL_IDX, mask, v, src, width, file, line);
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32,
                 const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::emu::shfl(::emu::SHFL_UP, mask, v, static_cast<int>(delta), width, file, line);
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32,
                   const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::emu::shfl(::emu::SHFL_DOWN, mask, v, static_cast<int>(delta), width, file, line);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32,
                  const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return ::emu::shfl(::emu::SHFL_XOR, mask, v, lane_mask, width, file, line);
}
inline unsigned __ballot_sync(unsigned mask, int pred, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  ::emu::CollArgs a;
  a.value = pred != 0;
  ::emu::warp_collective(::emu::kBallot, mask, a, file, line);
  return static_cast<unsigned>(a.result);
}
inline int __any_sync(unsigned mask, int pred, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  return __ballot_sync(mask, pred, file, line) != 0;
}
inline int __all_sync(unsigned mask, int pred, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE()) {
  return __ballot_sync(mask, pred, file, line) == mask;
}
template <class T>
unsigned __match_any_sync(unsigned mask, T value, const char* file = __builtin_FILE(),
                          int line = __builtin_LINE()) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "__match_any_sync takes 32- or 64-bit values");
  ::emu::CollArgs a;
  a.value = ::emu::to_bits(value);
  ::emu::warp_collective(::emu::kMatchAny, mask, a, file, line);
  return static_cast<unsigned>(a.result);
}
template <class T>
unsigned __match_all_sync(unsigned mask, T value, int* pred, const char* file = __builtin_FILE(),
                          int line = __builtin_LINE()) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "__match_all_sync takes 32- or 64-bit values");
  ::emu::CollArgs a;
  a.value = ::emu::to_bits(value);
  ::emu::warp_collective(::emu::kMatchAll, mask, a, file, line);
  *pred = a.pred;
  return static_cast<unsigned>(a.result);
}
#define EMU_REDUCE(name, op)                                                                  \
  inline unsigned name(unsigned mask, unsigned v, const char* file = __builtin_FILE(),         \
                       int line = __builtin_LINE()) {                                         \
    ::emu::CollArgs a;                                                                        \
    a.value = v;                                                                              \
    ::emu::warp_collective(::emu::op, mask, a, file, line);                                   \
    return static_cast<unsigned>(a.result);                                                   \
  }
EMU_REDUCE(__reduce_add_sync, kReduceAdd)
EMU_REDUCE(__reduce_min_sync, kReduceMin)
EMU_REDUCE(__reduce_max_sync, kReduceMax)
#undef EMU_REDUCE

// ---- atomics (device-wide: blocks run on several OS threads)
template <class T>
T emu_atomic_rmw_float(T* p, T v, int op) {  // op 0 add, 1 min, 2 max
  T old;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  for (;;) {
    const T next = op == 0 ? old + v : op == 1 ? (v < old ? v : old) : (v > old ? v : old);
    if (__atomic_compare_exchange(p, &old, &next, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
      return old;
  }
}
inline float atomicAdd(float* p, float v) { return emu_atomic_rmw_float(p, v, 0); }
inline double atomicAdd(double* p, double v) { return emu_atomic_rmw_float(p, v, 0); }
#define EMU_ATOMIC_INT(T)                                                                      \
  inline T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }         \
  inline T atomicSub(T* p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); }         \
  inline T atomicAnd(T* p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }         \
  inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }           \
  inline T atomicXor(T* p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }         \
  inline T atomicExch(T* p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }       \
  inline T atomicMin(T* p, T v) { return emu_atomic_rmw_float(p, v, 1); }                      \
  inline T atomicMax(T* p, T v) { return emu_atomic_rmw_float(p, v, 2); }                      \
  inline T atomicCAS(T* p, T expected, T desired) {                                            \
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
    return expected;                                                                           \
  }
EMU_ATOMIC_INT(int)
EMU_ATOMIC_INT(unsigned int)
EMU_ATOMIC_INT(unsigned long long)
EMU_ATOMIC_INT(long long)
#undef EMU_ATOMIC_INT

// ---- intrinsics. The _rn arithmetic is IEEE round-to-nearest-even, which the host computes
// exactly when the build keeps -ffp-contract=off (the Makefile's emu flags do).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }
inline unsigned __float_as_uint(float f) { return emu::f32_bits(f); }
inline float __uint_as_float(unsigned u) { return emu::f32_from_bits(u); }
inline int __float_as_int(float f) { return static_cast<int>(emu::f32_bits(f)); }
inline float __int_as_float(int i) { return emu::f32_from_bits(static_cast<unsigned>(i)); }
inline unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<uint64_t>(a) * b) >> 32);
}
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<int64_t>(a) * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned __activemask() { return 0xffffffffu; }  // see README: not modelled per lane
template <class T> T __ldg(const T* p) { return *p; }
// Fast-math intrinsics are computed precisely here (the GPU's are approximations).
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x != x ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

// CUDA's min/max overloads for device code (host C++ has only std::min/std::max).
#define EMU_MINMAX(T)                                   \
  inline T min(T a, T b) { return b < a ? b : a; }      \
  inline T max(T a, T b) { return a < b ? b : a; }
EMU_MINMAX(int)
EMU_MINMAX(unsigned int)
EMU_MINMAX(long long)
EMU_MINMAX(unsigned long long)
EMU_MINMAX(long)
EMU_MINMAX(unsigned long)
#undef EMU_MINMAX
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }
