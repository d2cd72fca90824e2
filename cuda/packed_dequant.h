// --weights packed on the GPU: a packed weight's rows dequantised into a W' block (cuda/packed_dequant.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/tensor.h"

namespace smezo {

// Rows of the packed weight w.w (row0 + r, or ids[r] when ids, a device array of n_rows ids, is set)
// dequantised into dst, (n_rows, cols) of dtype, rounded once from the fp32 value the CPU's decoder
// (gguf_dequantize_scaled) gives. With w.scales set each block's d (and m/dmin when the scales Param has
// two rows) is that Param's element read under `probe` (a single probe: a pair's halves call once each),
// as any Param is read (scale 0: as stored), in place of the file's f16 scale: linear's W' blocks and the
// embedding's gathered rows alike.
void launch_dequant_packed(DType dtype, void* dst, const Param& w, const int32_t* ids, int64_t row0,
                           int64_t n_rows, const Probe& probe, cudaStream_t stream);

}  // namespace smezo
