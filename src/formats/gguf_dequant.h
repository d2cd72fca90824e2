// Dequantising GGUF tensor data to fp32; block layouts at the top of gguf_dequant.cpp.
#pragma once

#include <cstdint>

namespace smezo {

// n must be a multiple of the type's block size.
using GgufDecodeFn = void (*)(const void* src, int64_t n, float* dst);

// The converter for a GGUF tensor type, or nullptr for a type smezo does not read.
GgufDecodeFn gguf_decode_fn(uint32_t type);

// Whether the type is block-quantised (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K): what
// --weights packed keeps in its blocks (formats/packed_weights.h).
bool gguf_block_quantized(uint32_t type);

// Where a block of `type` keeps its f16 scales: the byte of d, and of m (Q4_1/Q5_1) or dmin (Q4_K/Q5_K);
// -1 for a field the type has none of, {-1, -1} for a type that is not block-quantised.
struct GgufScaleOffsets {
  int d = -1;
  int m = -1;
};
GgufScaleOffsets gguf_scale_offsets(uint32_t type);

// Throws smezo::Error for an unsupported type or partial block.
void gguf_dequantize(uint32_t type, const void* src, int64_t n, float* dst);

// fp32 values that replace the stored f16 scales, one per block of the range decoded (null: the
// stored one). d: the block's d (K-quants: the super-block d; the 6-bit sub-scales stay); m: Q4_1/Q5_1's
// m, Q4_K/Q5_K's dmin (ignored by the types without one). The hook of --tune scales (issue 43): its f32
// master scales are read in place of the file's. With no override this is gguf_dequantize, bit for bit.
struct GgufScaleOverride {
  const float* d = nullptr;
  const float* m = nullptr;
};
void gguf_dequantize_scaled(uint32_t type, const void* src, int64_t n, float* dst, const GgufScaleOverride& o);

}  // namespace smezo
