// Host values for the op cases (bench/op_case.h) and the tests: seeded random inputs, integer
// inputs, rounding to a storage dtype, and a host fp32 parameter viewing a vector (for
// cpu_read_param, the reference's view of a parameter under a probe).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "backend/tensor.h"

namespace smezo {

// n floats uniform in [lo, hi), from a seeded generator (never all zeros).
std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);
// n integers uniform in [lo, hi] as floats (exact in every storage type for |v| <= 256).
std::vector<float> small_ints(int64_t n, uint32_t seed, int lo, int hi);

// n indices uniform in [lo, hi] (tokens, positions, rows of a case), from a seeded generator.
template <typename T>
std::vector<T> random_indices(int64_t n, uint32_t seed, int64_t lo, int64_t hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = static_cast<T>(dist(rng));
  return v;
}

// v rounded to nearest even in dt (f16, bf16); v itself for f32.
float round_to(DType dt, float v);
// Every element of v rounded to dt by round_to.
std::vector<float> rounded(DType dt, std::vector<float> v);

// A host-memory fp32 parameter viewing `values` (for the CPU backend and cpu_read_param).
Param host_param(std::vector<float>& values, int64_t rows, int64_t cols, const ParamInfo& info);

}  // namespace smezo
