// Names and sizes of the storage dtypes; names of the parameter roles.
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

const char* param_role_name(ParamRole role) {
  switch (role) {
    case ROLE_OTHER: return "other";
    case ROLE_TOKEN_EMBEDDING: return "embedding";
    case ROLE_POSITION_EMBEDDING: return "position-embedding";
    case ROLE_NORM: return "norm";
    case ROLE_ATTN_Q: return "q";
    case ROLE_ATTN_K: return "k";
    case ROLE_ATTN_V: return "v";
    case ROLE_ATTN_O: return "o";
    case ROLE_MLP_GATE: return "gate";
    case ROLE_MLP_UP: return "up";
    case ROLE_MLP_DOWN: return "down";
    case ROLE_LM_HEAD: return "head";
  }
  return "?";
}

Tensor tensor_rows(const Tensor& t, int64_t row0, int64_t n) {
  Tensor v = t;
  v.data = static_cast<char*>(t.data) + row0 * (t.packed() ? t.packed_row_bytes : t.cols * dtype_size(t.dtype));
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
