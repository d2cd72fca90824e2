// Storage dtypes to fp32, and the finiteness checks of a load (see dtype_convert.h).
#include "backend/dtype_convert.h"

#include <cmath>
#include <cstring>

#include "common/half.h"

namespace smezo {

void convert_to_f32(const void* src, DType dtype, int64_t n, float* dst) {
  switch (dtype) {
    case DTYPE_F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DTYPE_F16:
    case DTYPE_BF16: {
      const unsigned char* bytes = static_cast<const unsigned char*>(src);
      for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        dst[i] = dtype == DTYPE_F16 ? f16_to_float(h) : bf16_to_float(h);
      }
      return;
    }
  }
}

namespace {

// Converts in blocks, flagging non-finite values per block (rescanned); memcpy reads: unaligned is fine.
template <typename Bits, typename Convert>
int64_t convert_block_checked(const void* src, int64_t n, float* dst, Bits exp_mask,
                              Convert convert) {
  const unsigned char* bytes = static_cast<const unsigned char*>(src);
  auto load = [bytes](int64_t i) {
    Bits v;
    std::memcpy(&v, bytes + i * static_cast<int64_t>(sizeof(Bits)), sizeof v);
    return v;
  };
  constexpr int64_t kBlock = 4096;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t end = start + kBlock < n ? start + kBlock : n;
    bool bad = false;
    for (int64_t i = start; i < end; i++) {
      const Bits v = load(i);
      dst[i] = convert(v);
      bad |= (v & exp_mask) == exp_mask;
    }
    if (bad)
      for (int64_t i = start; i < end; i++)
        if ((load(i) & exp_mask) == exp_mask) return i;
  }
  return -1;
}

}  // namespace

int64_t convert_to_f32_checked(const void* src, DType dtype, int64_t n, float* dst) {
  switch (dtype) {
    case DTYPE_F32:
      return convert_block_checked<uint32_t>(src, n, dst, 0x7f800000u,
                                             [](uint32_t u) { return bits_float(u); });
    case DTYPE_F16:
      return convert_block_checked<uint16_t>(src, n, dst, 0x7c00,
                                             [](uint16_t h) { return f16_to_float(h); });
    case DTYPE_BF16:
      return convert_block_checked<uint16_t>(src, n, dst, 0x7f80,
                                             [](uint16_t h) { return bf16_to_float(h); });
  }
  return -1;
}

float dtype_max_finite(DType dtype) {
  switch (dtype) {
    case DTYPE_F16: return f16_to_float(0x7bff);
    case DTYPE_BF16: return bf16_to_float(0x7f7f);
    case DTYPE_F32: break;
  }
  return bits_float(0x7f7fffffu);
}

int64_t first_non_finite_in(const float* values, int64_t n, DType storage) {
  for (int64_t i = 0; i < n; i++) {
    float stored = values[i];
    if (storage == DTYPE_F16) stored = f16_to_float(float_to_f16(stored));
    if (storage == DTYPE_BF16) stored = bf16_to_float(float_to_bf16(stored));
    if (!std::isfinite(stored)) return i;
  }
  return -1;
}

}  // namespace smezo
