// Packed GGUF weights: row sizes, range dequantisation (see packed_weights.h).
#include "formats/packed_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/check.h"
#include "common/half.h"
#include "formats/gguf.h"

namespace smezo {

int64_t packed_row_bytes(uint32_t type, int64_t cols, const std::string& what) {
  const GgufTypeTraits* traits = gguf_type_traits(type);
  SMEZO_REQUIRE(traits && gguf_block_quantized(type),
                "%s has type %s, which --weights packed cannot keep in its blocks (it keeps Q8_0, Q4_0, Q4_1, "
                "Q5_0, Q5_1, Q4_K, Q5_K and Q6_K) ---> HINT: use --weights dequantized, or requantize the file "
                "with llama.cpp's llama-quantize (e.g. to Q4_K_M or Q8_0)", what.c_str(), gguf_type_name(type));
  SMEZO_REQUIRE(cols > 0 && cols % traits->block_size == 0,
                "%s has type %s, whose blocks hold %lld values, but its rows have %lld values (not a multiple "
                "of the block) ---> HINT: use --weights dequantized", what.c_str(), traits->name,
                (long long)traits->block_size, (long long)cols);
  return cols / traits->block_size * traits->block_bytes;
}

int64_t packed_block_size(const Tensor& t) {
  SMEZO_REQUIRE(t.packed(), "packed_block_size of a tensor that is not packed");
  return gguf_type_traits(t.packed_type)->block_size;
}

void dequantize_packed(const Tensor& t, int64_t start, int64_t count, float* dst, const GgufScaleOverride& o) {
  const int64_t first_block = t.packed() && start >= 0 ? start / packed_block_size(t) : 0;
  GgufScaleOverride local = o;  // from global block indices to the range's
  if (local.d) local.d += first_block;
  if (local.m) local.m += first_block;
  dequantize_packed_range(t, start, count, dst, local);
}

void dequantize_packed_range(const Tensor& t, int64_t start, int64_t count, float* dst, const GgufScaleOverride& o) {
  const GgufTypeTraits* traits = gguf_type_traits(t.packed_type);
  SMEZO_REQUIRE(t.packed() && traits, "dequantize_packed of a tensor that is not packed");
  const int64_t bs = traits->block_size;
  SMEZO_REQUIRE(start >= 0 && count >= 0 && start % bs == 0 && count % bs == 0 && start + count <= t.numel(),
                "packed %s read of [%lld, %lld) is not whole blocks of %lld inside the tensor's %lld values",
                traits->name, (long long)start, (long long)(start + count), (long long)bs, (long long)t.numel());
  const int64_t first_block = start / bs;
  gguf_dequantize_scaled(t.packed_type, static_cast<const char*>(t.data) + first_block * traits->block_bytes, count,
                         dst, o);
}

int64_t packed_block_count(const Tensor& t) { return t.numel() / packed_block_size(t); }

bool packed_type_has_m(uint32_t type) { return gguf_scale_offsets(type).m >= 0; }

void read_packed_scales(const Tensor& t, int64_t rows, const std::string& what, float* out) {
  const GgufTypeTraits* traits = t.packed() ? gguf_type_traits(t.packed_type) : nullptr;
  SMEZO_REQUIRE(traits && gguf_block_quantized(t.packed_type), "%s is not kept in GGUF blocks: --tune scales has no "
                "block scales to tune in it", what.c_str());
  const int64_t d_at = gguf_scale_offsets(t.packed_type).d;  // m, when read, is the f16 after it
  SMEZO_REQUIRE(rows == 1 || (rows == 2 && packed_type_has_m(t.packed_type)), "%s: %lld rows of scales for type %s",
                what.c_str(), (long long)rows, traits->name);
  const int64_t n = packed_block_count(t);
  const uint8_t* b = static_cast<const uint8_t*>(t.data);
  for (int64_t i = 0; i < n; i++, b += traits->block_bytes) {
    uint16_t h[2];
    std::memcpy(h, b + d_at, rows == 2 ? 4 : 2);
    out[i] = f16_to_float(h[0]);
    if (rows == 2) out[n + i] = f16_to_float(h[1]);
  }
}

int64_t first_non_finite_packed(const Tensor& t) {
  const int64_t rows_at_once = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(t.cols, 1));
  std::vector<float> buf(static_cast<size_t>(std::min(rows_at_once, t.rows) * t.cols));
  for (int64_t r0 = 0; r0 < t.rows; r0 += rows_at_once) {
    const int64_t n = std::min(rows_at_once, t.rows - r0) * t.cols;
    dequantize_packed(t, r0 * t.cols, n, buf.data());
    for (int64_t i = 0; i < n; i++)
      if (!std::isfinite(buf[i])) return r0 * t.cols + i;
  }
  return -1;
}

}  // namespace smezo
