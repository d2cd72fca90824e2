// The op cases: one list per backend op (op, shapes, storage dtype, probe), in the spirit of
// ggml's test-backend-ops, that serves both correctness and speed:
//   - the backend conformance test (tests/test_backend_ops.cu) runs every case on the CUDA
//     backend and on the CPU reference, with fresh random inputs, poisoned outputs and the
//     tolerances written down there;
//   - the op benchmark (bench/op_bench.cpp, build/op_bench) times every case on one backend.
// A case added here is checked and timed. Cases are plain data; the order of a list is part of
// the test's seeds (case index), so add new cases at the end.
//
// This slice holds the embedding, norm, RoPE and elementwise ops. Still in their own tables:
// linear (tests/test_backend_ops.cu, bench/linear_bench.cu), attention
// (tests/test_attention.cu), update and abs_quantile (tests/test_backend_ops.cu).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "backend/backend.h"

namespace smezo {

// n indices uniform in [lo, hi] (tokens, positions, rows of a case), from a seeded generator.
template <typename T>
std::vector<T> random_indices(int64_t n, uint32_t seed, int64_t lo, int64_t hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(dist(rng));
  return v;
}

// Backend::embedding: M token rows of a (vocab, dim) table.
struct EmbeddingCase {
  int64_t vocab, dim, M;
  DType dt;         // the table's storage dtype
  float scale;      // probe scale; 0 = unperturbed
  MaskKind mask;
  bool trainable;   // false: never perturbed
};
inline std::vector<EmbeddingCase> embedding_cases() {
  return {
      {37, 8, 1, DTYPE_F32, 0.0f, MASK_DENSE, true},
      {37, 8, 5, DTYPE_F32, 1e-3f, MASK_DENSE, true},
      {100, 257, 13, DTYPE_F16, -1e-3f, MASK_DENSE, true},
      {100, 257, 13, DTYPE_BF16, 1e-3f, MASK_DENSE, true},
      {1000, 288, 64, DTYPE_F32, 0.25f, MASK_MAGNITUDE, true},
      {513, 33, 7, DTYPE_BF16, -0.25f, MASK_RANDOM, true},
      {50, 31, 9, DTYPE_F16, 0.0f, MASK_DENSE, true},
      {50, 31, 9, DTYPE_F32, 1e-3f, MASK_DENSE, false},
  };
}

// Backend::add_position_embedding: M rows at positions in [0, n_pos - 1 - offset], + offset.
struct PositionEmbeddingCase {
  int64_t n_pos, dim, M, offset;
  DType dt;
  float scale;
};
inline std::vector<PositionEmbeddingCase> position_embedding_cases() {
  return {
      {10, 8, 1, 2, DTYPE_F32, 0.0f},
      {66, 96, 17, 2, DTYPE_F32, 1e-3f},
      {130, 257, 40, 2, DTYPE_F16, -1e-3f},
      {130, 257, 40, 0, DTYPE_BF16, 0.5f},
  };
}

// Backend::norm: M rows of dim, RMSNorm or LayerNorm, weight (and bias) in dt.
struct NormCase {
  int64_t M, dim;
  NormKind kind;
  bool bias;
  DType dt;
  float scale;
  bool in_place;  // norm(x, x)
};
inline std::vector<NormCase> norm_cases() {
  return {
      {1, 8, NORM_RMS, false, DTYPE_F32, 0.0f, false},
      {7, 33, NORM_RMS, false, DTYPE_F32, 1e-3f, false},
      {64, 288, NORM_RMS, false, DTYPE_BF16, -1e-3f, false},
      {5, 4096, NORM_RMS, false, DTYPE_F16, 0.0f, false},
      {3, 1000, NORM_RMS, false, DTYPE_F32, 0.0f, true},
      {1, 8, NORM_LAYER, true, DTYPE_F32, 0.0f, false},
      {9, 257, NORM_LAYER, true, DTYPE_F32, 1e-3f, false},
      {33, 768, NORM_LAYER, true, DTYPE_F16, 1e-3f, false},
      {4, 5120, NORM_LAYER, true, DTYPE_BF16, -1e-3f, true},
      {6, 100, NORM_LAYER, false, DTYPE_F32, 0.0f, false},
  };
}

// Backend::rope: M rows of n_heads x head_dim at positions in [0, max_pos], each case in both
// styles (rotate-half, interleaved).
struct RopeCase {
  int64_t M, n_heads, head_dim;
  float theta;
  int32_t max_pos;
};
inline std::vector<RopeCase> rope_cases() {
  return {
      {1, 1, 2, 10000.0f, 0},     {7, 4, 8, 10000.0f, 50},        {5, 3, 6, 10000.0f, 9},
      {33, 6, 64, 10000.0f, 500}, {16, 32, 128, 500000.0f, 4000}, {20, 8, 128, 1e6f, 30000},
  };
}
constexpr RopeStyle kRopeStyles[] = {ROPE_ROTATE_HALF, ROPE_INTERLEAVED};

// A (rows, cols) fp32 activation shape: Backend::swiglu (each shape out of place and in place,
// as the model calls swiglu(up, gate, up)), relu and add.
struct ActivationCase {
  int64_t rows, cols;
};
inline std::vector<ActivationCase> swiglu_cases() { return {{1, 1}, {7, 33}, {64, 1000}, {3, 11008}}; }
inline std::vector<ActivationCase> relu_add_cases() { return {{1, 1}, {7, 33}, {64, 1000}, {5, 11008}}; }

// Backend::gather_rows: out_rows rows picked (with repeats) from in_rows.
struct GatherRowsCase {
  int64_t in_rows, cols, out_rows;
};
inline std::vector<GatherRowsCase> gather_rows_cases() {
  return {{1, 1, 1}, {10, 7, 3}, {64, 288, 64}, {513, 1000, 100}};
}

// Backend::copy_rows: src_rows rows into dst at dst_row.
struct CopyRowsCase {
  int64_t dst_rows, src_rows, cols, dst_row;
};
inline std::vector<CopyRowsCase> copy_rows_cases() {
  return {{1, 1, 1, 0}, {10, 3, 7, 0}, {10, 3, 7, 7}, {200, 1, 96, 123}, {64, 17, 1000, 20}};
}

}  // namespace smezo
