// Names and sizes of the storage dtypes.
#include "backend/tensor.h"

namespace smezo {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DTYPE_F32: return "F32";
    case DTYPE_F16: return "F16";
    case DTYPE_BF16: return "BF16";
  }
  return "?";
}

Tensor tensor_rows(const Tensor& t, int64_t row0, int64_t n) {
  Tensor v = t;
  v.data = static_cast<char*>(t.data) + row0 * t.cols * dtype_size(t.dtype);
  v.rows = n;
  return v;
}

int64_t dtype_size(DType dtype) {
  switch (dtype) {
    case DTYPE_F32: return 4;
    case DTYPE_F16: return 2;
    case DTYPE_BF16: return 2;
  }
  return 0;
}

}  // namespace smezo
