// GGUF block formats -> fp32. Little-endian; "f16" is an IEEE binary16 scale. A block covers
// consecutive elements along the innermost axis (dims[0]).
// Plain types (block of 1): F32 (4 bytes), F16 (2), BF16 (2, the top half of an fp32).
// 32-element blocks. Unsigned codes; element j < 16 takes the low nibble of qs[j], j + 16 the high.
//   Q8_0  34 bytes: f16 d | i8 q[32]                    w[j] = d * q[j]
//   Q4_0  18 bytes: f16 d | u8 qs[16]                   w = d * (nibble - 8)
//   Q4_1  20 bytes: f16 d | f16 m | u8 qs[16]           w = d * nibble + m
//   Q5_0  22 bytes: f16 d | u32 qh | u8 qs[16]          q = nibble | (bit j of qh) << 4,
//                   where j is the element index 0..31   w = d * (q - 16)
//   Q5_1  24 bytes: f16 d | f16 m | u32 qh | u8 qs[16]  q as Q5_0;  w = d * q + m
// 256-element "K" super-blocks, split into sub-blocks that each have their own scale.
//   Q4_K  144 bytes: f16 d | f16 dmin | u8 scales[12] | u8 qs[128]
//         8 sub-blocks of 32, each with a 6-bit scale sc[s] and min mn[s] in scales[12]:
//         s < 4: sc = scales[s] & 63, mn = scales[s+4] & 63; s >= 4: sc = (scales[s+4] & 15) |
//         (scales[s-4] >> 6) << 4, mn = (scales[s+4] >> 4) | (scales[s] >> 6) << 4.
//         Sub-block s reads qs[32*(s/2) + l] (l = 0..31), low nibble for even s, high for odd.
//         w = d * sc[s] * q - dmin * mn[s].
//   Q5_K  176 bytes: f16 d | f16 dmin | u8 scales[12] | u8 qh[32] | u8 qs[128]
//         as Q4_K, plus a fifth bit: element l of sub-block s adds 16 * (bit s of qh[l]).
//   Q6_K  210 bytes: u8 ql[128] | u8 qh[64] | i8 scales[16] | f16 d
//         16 sub-blocks of 16, signed 8-bit scales. The block is two halves of 128; in half
//         h, element 32*g + l (group g = 0..3, l = 0..31) has
//           low 4 bits:  ql[64*h + l + 32*(g & 1)], low nibble for g < 2, high for g >= 2
//           high 2 bits: (qh[32*h + l] >> 2*g) & 3
//           scale:       scales[8*h + 2*g + l/16]
//         w = d * scale * (q - 32).
#include "formats/gguf_dequant.h"

#include <cstring>

#include "common/check.h"
#include "common/half.h"
#include "formats/gguf.h"

namespace smezo {

namespace {

inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_float(h);
}

void decode_f32(const void* src, int64_t n, float* dst) {
  std::memcpy(dst, src, static_cast<size_t>(n) * 4);
}

void decode_f16(const void* src, int64_t n, float* dst) {
  const uint8_t* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; i++) dst[i] = f16_at(p + 2 * i);
}

void decode_bf16(const void* src, int64_t n, float* dst) {
  const uint8_t* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; i++) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    dst[i] = bf16_to_float(h);
  }
}

// --- 32-element blocks

void decode_q8_0(const void* src, int64_t n, float* dst, const GgufScaleOverride& o) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  for (int64_t blk = 0; blk < n / 32; blk++, b += 34, dst += 32) {
    const float d = o.d ? o.d[blk] : f16_at(b);
    const int8_t* q = reinterpret_cast<const int8_t*>(b + 2);
    for (int j = 0; j < 32; j++) dst[j] = d * static_cast<float>(q[j]);
  }
}

void decode_q4_0(const void* src, int64_t n, float* dst, const GgufScaleOverride& o) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  for (int64_t blk = 0; blk < n / 32; blk++, b += 18, dst += 32) {
    const float d = o.d ? o.d[blk] : f16_at(b);
    const uint8_t* qs = b + 2;
    for (int j = 0; j < 16; j++) {
      dst[j] = d * static_cast<float>((qs[j] & 15) - 8);
      dst[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
    }
  }
}

void decode_q4_1(const void* src, int64_t n, float* dst, const GgufScaleOverride& o) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  for (int64_t blk = 0; blk < n / 32; blk++, b += 20, dst += 32) {
    const float d = o.d ? o.d[blk] : f16_at(b), m = o.m ? o.m[blk] : f16_at(b + 2);
    const uint8_t* qs = b + 4;
    for (int j = 0; j < 16; j++) {
      dst[j] = d * static_cast<float>(qs[j] & 15) + m;
      dst[j + 16] = d * static_cast<float>(qs[j] >> 4) + m;
    }
  }
}

// The 5-bit codes of one Q5_0/Q5_1 block.
inline void q5_codes(const uint8_t* qh_bytes, const uint8_t* qs, int q[32]) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int j = 0; j < 16; j++) {
    q[j] = (qs[j] & 15) | static_cast<int>(((qh >> j) & 1u) << 4);
    q[j + 16] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
  }
}

void decode_q5_0(const void* src, int64_t n, float* dst, const GgufScaleOverride& o) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  int q[32];
  for (int64_t blk = 0; blk < n / 32; blk++, b += 22, dst += 32) {
    const float d = o.d ? o.d[blk] : f16_at(b);
    q5_codes(b + 2, b + 6, q);
    for (int j = 0; j < 32; j++) dst[j] = d * static_cast<float>(q[j] - 16);
  }
}

void decode_q5_1(const void* src, int64_t n, float* dst, const GgufScaleOverride& o) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  int q[32];
  for (int64_t blk = 0; blk < n / 32; blk++, b += 24, dst += 32) {
    const float d = o.d ? o.d[blk] : f16_at(b), m = o.m ? o.m[blk] : f16_at(b + 2);
    q5_codes(b + 4, b + 8, q);
    for (int j = 0; j < 32; j++) dst[j] = d * static_cast<float>(q[j]) + m;
  }
}

// --- 256-element K super-blocks

// The 6-bit scale and min of sub-block s (0..7) of a Q4_K/Q5_K block.
inline void k_scale_min(const uint8_t* scales, int s, int* sc, int* mn) {
  if (s < 4) {
    *sc = scales[s] & 63;
    *mn = scales[s + 4] & 63;
  } else {
    *sc = (scales[s + 4] & 15) | ((scales[s - 4] >> 6) << 4);
    *mn = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4);
  }
}

// Shared by Q4_K (qh == nullptr) and Q5_K.
void decode_k4_k5(const uint8_t* b, const uint8_t* qh, const uint8_t* qs, float* dst, const GgufScaleOverride& o,
                  int64_t blk) {
  const float d = o.d ? o.d[blk] : f16_at(b), dmin = o.m ? o.m[blk] : f16_at(b + 2);
  const uint8_t* scales = b + 4;
  for (int s = 0; s < 8; s++) {
    int sc, mn;
    k_scale_min(scales, s, &sc, &mn);
    const float scale = d * static_cast<float>(sc), offset = dmin * static_cast<float>(mn);
    const uint8_t* q = qs + 32 * (s / 2);
    const int shift = 4 * (s % 2);
    for (int l = 0; l < 32; l++) {
      int code = (q[l] >> shift) & 15;
      if (qh) code += 16 * ((qh[l] >> s) & 1);
      dst[32 * s + l] = scale * static_cast<float>(code) - offset;
    }
  }
}

void decode_q4_k(const void* src, int64_t n, float* dst, const GgufScaleOverride& o) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  for (int64_t blk = 0; blk < n / 256; blk++, b += 144, dst += 256)
    decode_k4_k5(b, nullptr, b + 16, dst, o, blk);
}

void decode_q5_k(const void* src, int64_t n, float* dst, const GgufScaleOverride& o) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  for (int64_t blk = 0; blk < n / 256; blk++, b += 176, dst += 256)
    decode_k4_k5(b, b + 16, b + 48, dst, o, blk);
}

void decode_q6_k(const void* src, int64_t n, float* dst, const GgufScaleOverride& o) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  for (int64_t blk = 0; blk < n / 256; blk++, b += 210, dst += 256) {
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
    const float d = o.d ? o.d[blk] : f16_at(b + 208);
    for (int h = 0; h < 2; h++) {
      for (int g = 0; g < 4; g++) {
        const uint8_t* lo = ql + 64 * h + 32 * (g & 1);
        const int lo_shift = g < 2 ? 0 : 4;
        for (int l = 0; l < 32; l++) {
          const int code = ((lo[l] >> lo_shift) & 15) | (((qh[32 * h + l] >> (2 * g)) & 3) << 4);
          const float scale = d * static_cast<float>(scales[8 * h + 2 * g + l / 16]);
          dst[128 * h + 32 * g + l] = scale * static_cast<float>(code - 32);
        }
      }
    }
  }
}

using ScaledDecodeFn = void (*)(const void* src, int64_t n, float* dst, const GgufScaleOverride& o);

// The stored scales: what the plain GgufDecodeFn of a block type runs.
template <ScaledDecodeFn F>
void decode_stored(const void* src, int64_t n, float* dst) {
  F(src, n, dst, GgufScaleOverride{});
}

ScaledDecodeFn scaled_decode_fn(uint32_t type) {
  switch (type) {
    case GGUF_TYPE_Q8_0: return decode_q8_0;
    case GGUF_TYPE_Q4_0: return decode_q4_0;
    case GGUF_TYPE_Q4_1: return decode_q4_1;
    case GGUF_TYPE_Q5_0: return decode_q5_0;
    case GGUF_TYPE_Q5_1: return decode_q5_1;
    case GGUF_TYPE_Q4_K: return decode_q4_k;
    case GGUF_TYPE_Q5_K: return decode_q5_k;
    case GGUF_TYPE_Q6_K: return decode_q6_k;
    default: return nullptr;
  }
}

}  // namespace

GgufDecodeFn gguf_decode_fn(uint32_t type) {
  switch (type) {
    case GGUF_TYPE_F32: return decode_f32;
    case GGUF_TYPE_F16: return decode_f16;
    case GGUF_TYPE_BF16: return decode_bf16;
    case GGUF_TYPE_Q8_0: return decode_stored<decode_q8_0>;
    case GGUF_TYPE_Q4_0: return decode_stored<decode_q4_0>;
    case GGUF_TYPE_Q4_1: return decode_stored<decode_q4_1>;
    case GGUF_TYPE_Q5_0: return decode_stored<decode_q5_0>;
    case GGUF_TYPE_Q5_1: return decode_stored<decode_q5_1>;
    case GGUF_TYPE_Q4_K: return decode_stored<decode_q4_k>;
    case GGUF_TYPE_Q5_K: return decode_stored<decode_q5_k>;
    case GGUF_TYPE_Q6_K: return decode_stored<decode_q6_k>;
    default: return nullptr;
  }
}

bool gguf_block_quantized(uint32_t type) { return scaled_decode_fn(type) != nullptr; }

GgufScaleOffsets gguf_scale_offsets(uint32_t type) {
  switch (type) {
    case GGUF_TYPE_Q8_0: case GGUF_TYPE_Q4_0: case GGUF_TYPE_Q5_0: return {0, -1};
    case GGUF_TYPE_Q4_1: case GGUF_TYPE_Q5_1: case GGUF_TYPE_Q4_K: case GGUF_TYPE_Q5_K: return {0, 2};
    case GGUF_TYPE_Q6_K: return {208, -1};
    default: return {};
  }
}

void gguf_dequantize(uint32_t type, const void* src, int64_t n, float* dst) {
  GgufDecodeFn fn = gguf_decode_fn(type);
  const GgufTypeTraits* traits = gguf_type_traits(type);
  SMEZO_REQUIRE(fn && traits, "GGUF tensor type %s (%u) cannot be dequantised (smezo reads %s)",
                gguf_type_name(type), type, gguf_supported_types().c_str());
  SMEZO_REQUIRE(n >= 0 && n % traits->block_size == 0,
                "cannot dequantise %lld elements of %s: not a whole number of %lld-element blocks",
                (long long)n, traits->name, (long long)traits->block_size);
  fn(src, n, dst);
}

void gguf_dequantize_scaled(uint32_t type, const void* src, int64_t n, float* dst, const GgufScaleOverride& o) {
  ScaledDecodeFn fn = scaled_decode_fn(type);
  SMEZO_REQUIRE(fn, "GGUF tensor type %s (%u) has no block scales (block-quantised types: Q8_0, Q4_0, Q4_1, Q5_0, "
                "Q5_1, Q4_K, Q5_K, Q6_K)", gguf_type_name(type), type);
  const int64_t block = gguf_type_traits(type)->block_size;
  SMEZO_REQUIRE(n >= 0 && n % block == 0, "cannot dequantise %lld elements of %s: not a whole number of "
                "%lld-element blocks", (long long)n, gguf_type_name(type), (long long)block);
  fn(src, n, dst, o);
}

}  // namespace smezo
