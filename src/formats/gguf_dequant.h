// Dequantising GGUF tensor data to fp32; block layouts at the top of gguf_dequant.cpp.
#pragma once

#include <cstdint>

namespace smezo {

// n must be a multiple of the type's block size.
using GgufDecodeFn = void (*)(const void* src, int64_t n, float* dst);

// The converter for a GGUF tensor type, or nullptr for a type smezo does not read.
GgufDecodeFn gguf_decode_fn(uint32_t type);

// Throws smezo::Error for an unsupported type or partial block.
void gguf_dequantize(uint32_t type, const void* src, int64_t n, float* dst);

}  // namespace smezo
