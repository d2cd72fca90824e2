// HostTensorView helpers (the dtype conversions they use are backend/dtype_convert.h).
#include "formats/host_tensor_view.h"

#include <cmath>

#include "common/check.h"
#include "common/checked_int.h"
#include "common/mapped_file.h"

namespace smezo {

int64_t HostTensorView::numel() const { return checked_numel(shape.data(), shape.size()); }

void HostTensorView::read_f32(float* dst) const {
  if (decode) {
    decode(data, numel(), dst);
  } else {
    convert_to_f32(data, dtype, numel(), dst);
  }
}

void HostTensorView::read_f32_finite(float* dst) const {
  read_f32(dst);
  const int64_t n = numel();
  const int64_t bad = first_non_finite_in(dst, n, DTYPE_F32);
  if (bad < 0) return;
  const int64_t cols = shape.empty() ? 1 : shape.back();
  throw_error("tensor %s in %s holds %s at index %lld (row %lld, column %lld); the file is corrupt (or was saved "
              "from a diverged run)", printable(name).c_str(), printable(file).c_str(),
              std::isnan(dst[bad]) ? "NaN" : dst[bad] > 0 ? "+Inf" : "-Inf", static_cast<long long>(bad),
              static_cast<long long>(cols > 0 ? bad / cols : 0), static_cast<long long>(cols > 0 ? bad % cols : 0));
}

const char* HostTensorView::storage_name() const { return decode ? quant_name : dtype_name(dtype); }

void HostTensorView::release_pages() const {
  if (mapping != nullptr) mapping->release_pages(data, nbytes);
}

}  // namespace smezo
