// The Backend interface's defaults: the streaming upload, and the update without the fold (see backend.h).
#include "backend/backend.h"

#include <vector>

#include "backend/dtype_convert.h"
#include "common/check.h"

namespace smezo {

int64_t Backend::upload_stored(const Tensor& dst, const void* src, DType src_dtype) {
  std::vector<float> host(static_cast<size_t>(dst.numel()));
  convert_to_f32(src, src_dtype, dst.numel(), host.data());
  // the values as dst stores them: a NaN/Inf of the file, or a finite value out of dst's range
  const int64_t bad = first_non_finite_in(host.data(), dst.numel(), dst.dtype);
  if (bad < 0) upload(dst, host.data());
  return bad;
}

Tensor Backend::alloc_packed(int64_t, int64_t, uint32_t, int64_t, const void*) {
  throw_error("the %s backend cannot keep quantized weights packed yet ---> HINT: use --weights dequantized",
              name());
}

void Backend::linear_group(const std::vector<LinearItem>& items, const Tensor& in, const Probe& probe) {
  for (const LinearItem& item : items) linear(item.out, in, *item.weight, item.bias, probe);
}

void Backend::defer_updates(Param& p, const std::vector<UpdateArgs>& updates) {
  for (const UpdateArgs& u : updates) update(p, u.coef, u.decay, u.seed);
}

}  // namespace smezo
