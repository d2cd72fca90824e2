// The storage dtypes as fp32 on the host, and the checks a load makes of what it stores.
#pragma once

#include <cstdint>

#include "backend/tensor.h"

namespace smezo {

// Convert n elements of src (stored as dtype) to fp32.
void convert_to_f32(const void* src, DType dtype, int64_t n, float* dst);
// The same, returning the first NaN/Inf index in src (all-ones exponent) or -1; src may be dst (F32).
int64_t convert_to_f32_checked(const void* src, DType dtype, int64_t n, float* dst);
// The largest finite value of a storage dtype: FLT_MAX, 65504 (F16), 3.3895e38 (BF16).
float dtype_max_finite(DType dtype);
// The index of the first of n fp32 values that is not finite once rounded (nearest even) to
// `storage`, or -1: NaN, Inf, and values out of range (F16 stores 65519 as 65504, 65520 as Inf).
int64_t first_non_finite_in(const float* values, int64_t n, DType storage);

}  // namespace smezo
