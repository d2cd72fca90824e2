// The op cases: one list per backend op (op, shapes, storage dtype, probe), in the spirit of
// ggml's test-backend-ops, that serves both correctness and speed. Each list's cases are made
// into OpCases (bench/op_case.h: inputs, the op call, outputs and tolerance) by the make_*_case
// beside it (bench/op_case_*.cpp), and run by
//   - the backend conformance test (tests/test_backend_ops.cu): every case on the CUDA backend
//     and on the CPU reference, with fresh random inputs, poisoned outputs and the tolerances
//     written down in bench/op_case_ops.cpp;
//   - the op benchmark (bench/op_bench.cpp, build/op_bench): every case timed on one backend.
// A case added here is checked and timed. The order of a list is part of the test's seeds
// (case index), so add new cases at the end.
//
// Still in their own tests: the linear's probe pair (tests/test_backend_ops.cu) and
// attention's preconditions (tests/test_attention.cu). bench/linear_bench.cu (smezo bench
// --kernel linear) times the linear at model shapes against cuBLAS, as the op benchmark does not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "bench/op_case.h"

namespace smezo {

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
OpCase make_embedding_case(const EmbeddingCase& c, const OpSeeds& s);

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
OpCase make_position_embedding_case(const PositionEmbeddingCase& c, const OpSeeds& s);

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
OpCase make_norm_case(const NormCase& c, const OpSeeds& s);

// Backend::rope: M rows of n_heads x head_dim at positions in [0, max_pos], each case in both
// styles (rotate-half, interleaved); the inverse frequencies from rope_inverse_frequencies (theta,
// and with llama3 Llama 3.1's scaling: factor 8, low 1, high 4, original 8192 positions).
struct RopeCase {
  int64_t M, n_heads, head_dim;
  float theta;
  int32_t max_pos;
  bool llama3 = false;
};
inline std::vector<RopeCase> rope_cases() {
  return {
      {1, 1, 2, 10000.0f, 0},     {7, 4, 8, 10000.0f, 50},        {5, 3, 6, 10000.0f, 9},
      {33, 6, 64, 10000.0f, 500}, {16, 32, 128, 500000.0f, 4000}, {20, 8, 128, 1e6f, 30000},
      {9, 4, 64, 500000.0f, 20000, true}, {3, 2, 128, 500000.0f, 100000, true},
  };
}
constexpr RopeStyle kRopeStyles[] = {ROPE_ROTATE_HALF, ROPE_INTERLEAVED};
OpCase make_rope_case(const RopeCase& c, RopeStyle style, const OpSeeds& s);

// A (rows, cols) fp32 activation shape: Backend::swiglu (each shape out of place and in place,
// as the model calls swiglu(up, gate, up)), relu and add.
struct ActivationCase {
  int64_t rows, cols;
};
inline std::vector<ActivationCase> swiglu_cases() { return {{1, 1}, {7, 33}, {64, 1000}, {3, 11008}}; }
inline std::vector<ActivationCase> relu_add_cases() { return {{1, 1}, {7, 33}, {64, 1000}, {5, 11008}}; }
OpCase make_swiglu_case(const ActivationCase& c, bool in_place, const OpSeeds& s);
OpCase make_relu_case(const ActivationCase& c, const OpSeeds& s);
OpCase make_add_case(const ActivationCase& c, const OpSeeds& s);

// Backend::gather_rows: out_rows rows picked (with repeats) from in_rows.
struct GatherRowsCase {
  int64_t in_rows, cols, out_rows;
};
inline std::vector<GatherRowsCase> gather_rows_cases() {
  return {{1, 1, 1}, {10, 7, 3}, {64, 288, 64}, {513, 1000, 100}};
}
OpCase make_gather_rows_case(const GatherRowsCase& c, const OpSeeds& s);

// Backend::copy_rows: src_rows rows into dst at dst_row.
struct CopyRowsCase {
  int64_t dst_rows, src_rows, cols, dst_row;
};
inline std::vector<CopyRowsCase> copy_rows_cases() {
  return {{1, 1, 1, 0}, {10, 3, 7, 0}, {10, 3, 7, 7}, {200, 1, 96, 123}, {64, 17, 1000, 20}};
}
OpCase make_copy_rows_case(const CopyRowsCase& c, const OpSeeds& s);

// Backend::linear: out(M, N) = in(M, K) · W'(N, K)ᵀ (+ bias). Three groups: small integer
// inputs (the result must be exact), random unperturbed operands (odd shapes, M = 1, model-like
// ones), and perturbed ones (every mask and storage dtype, the noise kinds in turn, an
// untrainable weight, W' larger than one 64 MiB block). seed_index seeds the case's inputs.
enum LinearGroup { LINEAR_SMALL_INT, LINEAR_RANDOM, LINEAR_PERTURBED };
struct LinearCase {
  int64_t M, N, K;
  DType dt;
  bool bias;
  float scale;  // sigma * eps; 0 = unperturbed
  MaskKind mask;
  bool trainable;
  LinearGroup group;
  NoiseKind noise;
  uint64_t seed_index;
};
inline std::vector<LinearCase> linear_cases() {
  constexpr DType dts[] = {DTYPE_F32, DTYPE_F16, DTYPE_BF16};
  constexpr NoiseKind noises[] = {NOISE_GAUSSIAN, NOISE_GAUSSIAN_V1, NOISE_RADEMACHER, NOISE_SIGN};
  std::vector<LinearCase> out;
  uint64_t i = 0;
  const int64_t exact[][3] = {{1, 1, 1}, {1, 7, 5}, {7, 13, 17}, {64, 96, 128}, {33, 255, 513}, {130, 64, 1000}};
  for (const auto& s : exact)
    for (DType dt : dts)
      for (bool bias : {false, true})
        out.push_back({s[0], s[1], s[2], dt, bias, 0.0f, MASK_DENSE, true, LINEAR_SMALL_INT, NOISE_GAUSSIAN, i++});
  i = 100;
  const int64_t random[][3] = {{1, 1, 1},       {1, 300, 77},    {5, 1000, 288}, {17, 129, 1001},
                               {128, 512, 256}, {300, 37, 4096}, {64, 768, 768}, {1, 32000, 64}};
  for (const auto& s : random)
    for (DType dt : dts)
      for (bool bias : {false, true})
        out.push_back({s[0], s[1], s[2], dt, bias, 0.0f, MASK_DENSE, true, LINEAR_RANDOM, NOISE_GAUSSIAN, i++});
  // sigma = +1, -1 (scale = sigma * eps) and 0, every mask kind: large scales make a wrong z or
  // mask obvious; eps = 1e-3 is the training value.
  i = 300;
  const int64_t perturbed[][3] = {{1, 67, 45}, {13, 129, 257}, {40, 255, 1001}};
  for (const auto& s : perturbed)
    for (DType dt : dts)
      for (MaskKind mask : {MASK_DENSE, MASK_MAGNITUDE, MASK_RANDOM})
        for (float scale : {1e-3f, -1e-3f, 0.0f, 0.25f}) {
          out.push_back({s[0], s[1], s[2], dt, i % 2 == 0, scale, mask, true, LINEAR_PERTURBED, noises[i % 4], i});
          i++;
        }
  // a training-sized tile count (many CTAs, the vectorised perturb path), bf16 as on the GPU
  for (MaskKind mask : {MASK_DENSE, MASK_MAGNITUDE, MASK_RANDOM})
    for (NoiseKind noise : noises)
      out.push_back({256, 1024, 512, DTYPE_BF16, true, -1e-3f, mask, true, LINEAR_PERTURBED, noise, i++});
  // an untrainable weight and bias are read as stored even under a probe
  out.push_back({9, 70, 33, DTYPE_BF16, true, 0.25f, MASK_DENSE, false, LINEAR_PERTURBED, NOISE_GAUSSIAN, i++});
  // W' bigger than one 64 MiB block (kCudaWeightChunkBytes): the last block is short and the
  // noise groups continue across blocks
  out.push_back({3, 8205, 4096, DTYPE_BF16, true, 1e-3f, MASK_MAGNITUDE, true, LINEAR_PERTURBED, NOISE_GAUSSIAN, i++});
  out.push_back({2, 4101, 4096, DTYPE_F32, false, -0.25f, MASK_RANDOM, true, LINEAR_PERTURBED, NOISE_RADEMACHER, i++});
  return out;
}
// The case's seeds are those of index seed_index.
OpCase make_linear_case(const LinearCase& c, const OpSeeds& s);

// Backend::update: W <- W - coef·m(W)⊙z - decay·m(W)⊙W on a (rows, cols) parameter, each case
// in every storage dtype and noise kind.
struct UpdateCase {
  int64_t rows, cols;
  MaskKind mask;
  float coef, decay;
  bool trainable;
};
inline std::vector<UpdateCase> update_cases() {
  return {
      {1, 1, MASK_DENSE, 1e-3f, 0.0f, true},           {7, 13, MASK_DENSE, -2.5e-3f, 0.0f, true},
      {7, 13, MASK_MAGNITUDE, 0.05f, 0.0f, true},      {333, 517, MASK_RANDOM, 0.05f, 0.0f, true},
      {333, 517, MASK_MAGNITUDE, -0.01f, 1e-2f, true}, {1024, 1024, MASK_DENSE, 0.02f, 1e-3f, true},
      {1, 4097, MASK_RANDOM, 1e-3f, 5e-3f, true},      {31, 33, MASK_DENSE, 0.05f, 0.0f, false},
  };
}
OpCase make_update_case(const UpdateCase& c, DType dt, NoiseKind noise, const OpSeeds& s);

// Backend::abs_quantile over a (rows, cols) weight, in every storage dtype, at each of
// abs_quantile_levels().
struct AbsQuantileCase {
  int64_t rows, cols;
  bool ties;  // values from a handful of levels, both signs: many equal |w|
};
inline std::vector<AbsQuantileCase> abs_quantile_cases() {
  return {{1, 1, false},    {1, 2, false},       {1, 3, true},
          {1, 7, false},    {10, 100, true},     {1, 4097, false},
          {257, 255, true}, {1031, 1017, false}, {1, 65537, true}};
}
inline std::vector<double> abs_quantile_levels() { return {0.0, 0.25, 1.0 / 3.0, 0.5, 0.7, 0.8, 0.999, 1.0}; }
OpCase make_abs_quantile_case(const AbsQuantileCase& c, DType dt, const OpSeeds& s);

// Backend::attention: q and out (q_rows, n_heads·head_dim), k and v (kv_rows,
// n_kv_heads·head_dim), the sequences' spans in them; rows no sequence covers are left alone.
// q, k and v come from seed, seed + 1 and seed + 2 (fixed seeds, not SMEZO_TEST_SEED).
struct AttentionCase {
  std::string name;
  int64_t n_heads, n_kv_heads, head_dim, window;  // window: sliding window, 0 = none
  std::vector<AttentionSeq> seqs;
  int64_t q_rows, kv_rows;  // may exceed what the sequences cover / read
  float q_range;            // q uniform in [-q_range, q_range)
  uint32_t seed;
};
std::vector<AttentionCase> attention_cases();  // bench/op_case_attention.cpp
OpCase make_attention_case(const AttentionCase& c);

}  // namespace smezo
