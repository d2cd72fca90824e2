// Emulated wmma (nvcuda::wmma of mma.h): the 16x16x16 shape with __half or __nv_bfloat16
// matrix_a/matrix_b and float accumulators, which is what this project uses; any other
// fragment does not compile (static_assert naming it). Each lane holds 8 of a fragment's 256
// elements (element e = row * 16 + col of the logical matrix lives in lane e / 8; the GPU's
// layout is opaque, and code may only treat x[] element-wise, as here). load_matrix_sync,
// store_matrix_sync and mma_sync are warp collectives over all 32 lanes: every lane must
// call them with the same pointer, ldm and layout; the pointer must be 256-bit aligned and
// ldm a multiple of 16 bytes, as the CUDA programming guide requires. mma_sync multiplies
// in fp32 (the 16-bit products are exact) summing k in order: a GPU's tensor cores may sum
// in another order, so results agree to fp32 rounding, not bit for bit.
#pragma once

#include <cstdint>
#include <type_traits>

#include "emu_device.h"
#include "emu_half.h"

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "emu: wmma models the 16x16x16 shape only");
  static_assert(std::is_same<Use, accumulator>::value ? std::is_same<T, float>::value
                                                      : (std::is_same<T, __half>::value ||
                                                         std::is_same<T, __nv_bfloat16>::value),
                "emu: wmma models __half/__nv_bfloat16 matrix_a/b and float accumulators only");
  using element_type = T;
  static constexpr int num_elements = 8;
  T x[num_elements];
};

}  // namespace wmma
}  // namespace nvcuda

namespace emu {
namespace wmma_impl {

// The same pointer, ldm and layout on every lane (read from lane args[first]).
inline const CollArgs* uniform_args(CollArgs* const lanes[32], unsigned mask) {
  if (mask != 0xffffffffu) collective_fault("wmma operations need all 32 lanes (mask 0x%08x)", mask);
  for (int l = 1; l < 32; ++l)
    if (lanes[l]->ptr[1] != lanes[0]->ptr[1] || lanes[l]->arg != lanes[0]->arg ||
        lanes[l]->layout != lanes[0]->layout)
      collective_fault("lane %d passes pointer %p, ldm %lld, layout %d; lane 0 passes %p, %lld, %d: "
                       "wmma needs the same on every lane",
                       l, lanes[l]->ptr[1], (long long)lanes[l]->arg, lanes[l]->layout,
                       lanes[0]->ptr[1], (long long)lanes[0]->arg, lanes[0]->layout);
  const CollArgs* a = lanes[0];
  const int elem = static_cast<int>(a->value);  // element size in bytes
  if (reinterpret_cast<uintptr_t>(a->ptr[1]) % 32 != 0)
    collective_fault("pointer %p is not 256-bit aligned", a->ptr[1]);
  if ((a->arg * elem) % 16 != 0)
    collective_fault("ldm %lld (%d-byte elements) is not a multiple of 16 bytes", (long long)a->arg, elem);
  return a;
}

// Logical element (r, c) of a 16x16 matrix at p with leading dimension ld.
inline int64_t offset(int r, int c, int64_t ld, bool row_major) {
  return row_major ? r * ld + c : c * ld + r;
}

template <class T>
void complete_load(CollArgs* const lanes[32], unsigned mask) {
  const CollArgs* a = uniform_args(lanes, mask);
  const T* p = static_cast<const T*>(a->ptr[1]);
  for (int e = 0; e < 256; ++e)
    static_cast<T*>(lanes[e / 8]->ptr[0])[e % 8] = p[offset(e / 16, e % 16, a->arg, a->layout == 0)];
}

template <class T>
void complete_store(CollArgs* const lanes[32], unsigned mask) {
  const CollArgs* a = uniform_args(lanes, mask);
  T* p = static_cast<T*>(a->ptr[1]);
  for (int e = 0; e < 256; ++e)
    p[offset(e / 16, e % 16, a->arg, a->layout == 0)] = static_cast<const T*>(lanes[e / 8]->ptr[0])[e % 8];
}

template <class T>
void complete_mma(CollArgs* const lanes[32], unsigned mask) {
  if (mask != 0xffffffffu) collective_fault("wmma::mma_sync needs all 32 lanes (mask 0x%08x)", mask);
  float A[256], B[256], C[256];  // gathered first: d may alias c
  for (int e = 0; e < 256; ++e) {
    A[e] = static_cast<float>(static_cast<const T*>(lanes[e / 8]->ptr[1])[e % 8]);
    B[e] = static_cast<float>(static_cast<const T*>(lanes[e / 8]->ptr[2])[e % 8]);
    C[e] = static_cast<const float*>(lanes[e / 8]->ptr[3])[e % 8];
  }
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) {
      float acc = C[r * 16 + c];
      for (int k = 0; k < 16; ++k) acc += A[r * 16 + k] * B[k * 16 + c];
      static_cast<float*>(lanes[(r * 16 + c) / 8]->ptr[0])[(r * 16 + c) % 8] = acc;
    }
}

template <class T> inline const CollOp kLoad{"wmma::load_matrix_sync", complete_load<T>};
template <class T> inline const CollOp kStore{"wmma::store_matrix_sync", complete_store<T>};
template <class T> inline const CollOp kMma{"wmma::mma_sync", complete_mma<T>};

template <class L> constexpr int layout_of() { return std::is_same<L, nvcuda::wmma::row_major>::value ? 0 : 1; }

}  // namespace wmma_impl
}  // namespace emu

namespace nvcuda {
namespace wmma {

template <class Use, class T, class L>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, L>& f, const T* p, unsigned ldm,
                      const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  static_assert(!std::is_same<Use, accumulator>::value, "accumulator loads take a layout_t");
  ::emu::CollArgs a;
  a.ptr[0] = f.x;
  a.ptr[1] = const_cast<T*>(p);
  a.arg = ldm;
  a.layout = ::emu::wmma_impl::layout_of<L>();
  a.value = sizeof(T);
  ::emu::warp_collective(::emu::wmma_impl::kLoad<T>, 0xffffffffu, a, file, line);
}

template <class T>
void load_matrix_sync(fragment<accumulator, 16, 16, 16, T, void>& f, const T* p, unsigned ldm,
                      layout_t layout, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::emu::CollArgs a;
  a.ptr[0] = f.x;
  a.ptr[1] = const_cast<T*>(p);
  a.arg = ldm;
  a.layout = layout == mem_row_major ? 0 : 1;
  a.value = sizeof(T);
  ::emu::warp_collective(::emu::wmma_impl::kLoad<T>, 0xffffffffu, a, file, line);
}

template <class T>
void store_matrix_sync(T* p, const fragment<accumulator, 16, 16, 16, T, void>& f, unsigned ldm,
                       layout_t layout, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::emu::CollArgs a;
  a.ptr[0] = const_cast<T*>(f.x);
  a.ptr[1] = p;
  a.arg = ldm;
  a.layout = layout == mem_row_major ? 0 : 1;
  a.value = sizeof(T);
  ::emu::warp_collective(::emu::wmma_impl::kStore<T>, 0xffffffffu, a, file, line);
}

template <class Use, class T, class L, class V>
void fill_fragment(fragment<Use, 16, 16, 16, T, L>& f, const V& v) {
  for (int i = 0; i < f.num_elements; ++i) f.x[i] = static_cast<T>(v);
}

template <class T, class LA, class LB>
void mma_sync(fragment<accumulator, 16, 16, 16, float, void>& d,
              const fragment<matrix_a, 16, 16, 16, T, LA>& a,
              const fragment<matrix_b, 16, 16, 16, T, LB>& b,
              const fragment<accumulator, 16, 16, 16, float, void>& c,
              const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::emu::CollArgs args;
  args.ptr[0] = d.x;
  args.ptr[1] = const_cast<T*>(a.x);
  args.ptr[2] = const_cast<T*>(b.x);
  args.ptr[3] = const_cast<float*>(c.x);
  ::emu::warp_collective(::emu::wmma_impl::kMma<T>, 0xffffffffu, args, file, line);
}

}  // namespace wmma
}  // namespace nvcuda
