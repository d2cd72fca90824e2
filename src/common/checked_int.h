// Overflow-checked int64 arithmetic for sizes read from files: a corrupt header fails, never wraps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

namespace smezo {

// For non-negative a, b: false (*out untouched) when the result would not fit int64.
inline bool checked_mul(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0) return false;
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a) return false;
  *out = a * b;
  return true;
}

inline bool checked_add(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0 || a > std::numeric_limits<int64_t>::max() - b) return false;
  *out = a + b;
  return true;
}

// The product of a shape's dimensions (each >= 0), or -1 when it overflows int64.
inline int64_t checked_numel(const int64_t* dims, size_t n) {
  int64_t numel = 1;
  for (size_t i = 0; i < n; i++)
    if (!checked_mul(numel, dims[i], &numel)) return -1;
  return numel;
}

}  // namespace smezo
