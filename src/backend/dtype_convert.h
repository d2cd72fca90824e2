// The storage dtypes (backend/tensor.h) as fp32 on the host, and the checks a load makes of
// what it stores: shared by the backends' uploads (Backend::upload_stored, the CPU backend's
// own) and the checkpoint readers (model/weight_source.h's HostTensorView::read_f32).
#pragma once

#include <cstdint>

#include "backend/tensor.h"

namespace smezo {

// Convert n elements of src (stored as dtype) to fp32.
void convert_to_f32(const void* src, DType dtype, int64_t n, float* dst);
// The same, in the same pass checking every value: returns the index of the first NaN or
// infinity in src, or -1 when all n are finite. Checked on the stored bits (an all-ones
// exponent), so a GPU upload kernel can apply the same test per element. src may equal dst
// for F32: that checks values another decoder produced, in place.
int64_t convert_to_f32_checked(const void* src, DType dtype, int64_t n, float* dst);
// The largest finite value of a storage dtype: FLT_MAX, 65504 (F16), 3.3895e38 (BF16).
float dtype_max_finite(DType dtype);
// The index of the first of n fp32 values that is not finite once rounded (nearest even) to
// `storage`, or -1: NaN and Inf, and finite values out of the dtype's range (an F16 stores
// 65519 as 65504 but 65520 as +Inf). A load into a 16-bit storage dtype checks the values it
// stores with this rule, not only their source bits (Backend::upload_stored).
int64_t first_non_finite_in(const float* values, int64_t n, DType storage);

}  // namespace smezo
