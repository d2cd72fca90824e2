// The Backend interface's default streaming upload (see backend.h).
#include "model/backend.h"

#include <vector>

#include "model/weight_source.h"

namespace smezo {

int64_t Backend::upload_stored(const Tensor& dst, const void* src, DType src_dtype) {
  std::vector<float> host(static_cast<size_t>(dst.numel()));
  const int64_t bad = convert_to_f32_checked(src, src_dtype, dst.numel(), host.data());
  if (bad < 0) upload(dst, host.data());
  return bad;
}

}  // namespace smezo
