// The GPU linear's path choice (see linear_dispatch.h).
#include "model/linear_dispatch.h"

namespace smezo {

LinearPath linear_path_choose(const LinearCall& c, const LinearThresholds& t) {
  if (!c.perturbed) return LINEAR_GEMM;
  const int64_t elems = c.n * c.k;
  const bool half_storage = c.storage == DTYPE_BF16 || c.storage == DTYPE_F16;
  if (!c.pair && half_storage && c.rows_per_probe <= t.fused_max_rows && elems >= t.fused_min_weight_elems)
    return LINEAR_FUSED;
  if (c.pair && 2 * elems * dtype_size(c.storage) <= t.pair_scratch_max_bytes) return LINEAR_MATERIALISE_PAIR;
  return LINEAR_MATERIALISE;
}

const char* linear_path_name(LinearPath path) {
  switch (path) {
    case LINEAR_GEMM: return "gemm";
    case LINEAR_MATERIALISE: return "materialise";
    case LINEAR_MATERIALISE_PAIR: return "materialise-pair";
    case LINEAR_FUSED: return "fused";
  }
  return "?";
}

}  // namespace smezo
