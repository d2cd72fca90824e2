// Dequantising GGUF tensor data to fp32, block by block (one tensor at a time; nothing is
// kept). The block layouts are written down at the top of gguf_dequant.cpp.
#pragma once

#include <cstdint>

namespace smezo {

// Converts n elements stored as `src` in one block layout to fp32. n must be a multiple of
// the type's block size (gguf_type_traits(type)->block_size).
using GgufDecodeFn = void (*)(const void* src, int64_t n, float* dst);

// The converter for a GGUF tensor type, or nullptr for a type smezo does not read.
GgufDecodeFn gguf_decode_fn(uint32_t type);

// gguf_decode_fn(type)(src, n, dst); throws smezo::Error for an unsupported type or an n
// that is not a whole number of blocks.
void gguf_dequantize(uint32_t type, const void* src, int64_t n, float* dst);

}  // namespace smezo
