// HostTensorView helpers and dtype conversion to fp32.
#include "model/weight_source.h"

#include <cstring>

#include "common/half.h"

namespace smezo {

int64_t HostTensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void HostTensorView::read_f32(float* dst) const {
  if (decode) {
    decode(data, numel(), dst);
  } else {
    convert_to_f32(data, dtype, numel(), dst);
  }
}

const char* HostTensorView::storage_name() const { return decode ? quant_name : dtype_name(dtype); }

void convert_to_f32(const void* src, DType dtype, int64_t n, float* dst) {
  switch (dtype) {
    case DTYPE_F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DTYPE_F16: {
      const uint16_t* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; i++) dst[i] = f16_to_float(h[i]);
      return;
    }
    case DTYPE_BF16: {
      const uint16_t* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; i++) dst[i] = bf16_to_float(h[i]);
      return;
    }
  }
}

const HostTensorView* WeightSource::find(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

}  // namespace smezo
