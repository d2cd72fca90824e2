// Weights kept in their GGUF blocks (--weights packed): the representation and its reads.
// A packed Tensor (backend/tensor.h) holds a GGUF tensor's blocks as the file has them: rows * cols
// values, each row a whole number of blocks, so element i lies in block i / block_size of the whole
// tensor, at byte (i / block_size) * block_bytes. Ops read values by dequantising whole blocks into an
// fp32 buffer (the CPU's W' rows, CUDA's W' block), the same fp32 values the load-time dequantisation
// gives. The scales mode's hook: a GgufScaleOverride indexed by that same global block index.
#pragma once

#include <cstdint>
#include <string>

#include "backend/tensor.h"
#include "formats/gguf_dequant.h"

namespace smezo {

// Bytes of one packed row of `cols` values of GGUF type `type`. Throws (naming `what`, e.g. "tensor X in
// FILE") for a type that is not block-quantised and for cols not a multiple of the block.
int64_t packed_row_bytes(uint32_t type, int64_t cols, const std::string& what);

// The element count of one block of a packed tensor's type.
int64_t packed_block_size(const Tensor& t);

// Values [start, start + count) of packed t as fp32 into dst; start and count whole blocks. o's arrays,
// when set, are indexed by global block index (block 0 = the tensor's first).
void dequantize_packed(const Tensor& t, int64_t start, int64_t count, float* dst,
                       const GgufScaleOverride& o = GgufScaleOverride{});

// Values [start, start + count) as dequantize_packed, but o's arrays indexed from the range's first block.
void dequantize_packed_range(const Tensor& t, int64_t start, int64_t count, float* dst, const GgufScaleOverride& o);

// --tune scales: the number of blocks (K-quants: super-blocks) of packed t.
int64_t packed_block_count(const Tensor& t);
// Whether the type's blocks hold a second f16 scale at byte 2 (Q4_1/Q5_1 m, Q4_K/Q5_K dmin).
bool packed_type_has_m(uint32_t type);
// The file's f16 scales of packed t as fp32, (rows, n_blocks) row-major: row 0 d, row 1 (rows == 2, a type
// with m) m/dmin. Throws, naming `what`, for a type whose scale layout this build does not know.
void read_packed_scales(const Tensor& t, int64_t rows, const std::string& what, float* out);

// The first index in [0, t.numel()) whose value is NaN or Inf, or -1 (dequantised a row block at a time).
int64_t first_non_finite_packed(const Tensor& t);

}  // namespace smezo
