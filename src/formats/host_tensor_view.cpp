// HostTensorView helpers (the dtype conversions they use are backend/dtype_convert.h).
#include "formats/host_tensor_view.h"

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

const char* HostTensorView::storage_name() const { return decode ? quant_name : dtype_name(dtype); }

void HostTensorView::release_pages() const {
  if (mapping != nullptr) mapping->release_pages(data, nbytes);
}

}  // namespace smezo
