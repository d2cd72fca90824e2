// The GPU linear's path choice and scratch plan (see linear_dispatch.h).
#include "model/linear_dispatch.h"

#include <algorithm>

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

namespace {

int64_t align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

LinearScratch linear_scratch_plan(const LinearCall& c, LinearPath path, int64_t chunk_bytes) {
  LinearScratch s;
  if (path == LINEAR_FUSED) return s;
  const int64_t sz = dtype_size(c.storage);
  const bool halves_alone = path == LINEAR_MATERIALISE && c.pair;  // two single-probe calls
  const int64_t rows = c.pair && !halves_alone ? 2 * c.rows_per_probe : c.rows_per_probe;
  if (c.storage != DTYPE_F32) s.x_bytes = align256(rows * c.k * sz);
  if (path == LINEAR_GEMM) return s;
  s.copies = path == LINEAR_MATERIALISE_PAIR ? 2 : 1;
  const int64_t row_bytes = c.k * sz;
  s.block_rows = std::min(c.n, std::max<int64_t>(8, chunk_bytes / (row_bytes * s.copies) / 8 * 8));
  s.w_bytes = align256(s.block_rows * row_bytes);
  return s;
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
