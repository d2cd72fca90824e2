// The CPU noise loops (range reads under a probe or pair, the update), built three times, chosen once:
//   scalar   noise_range_scalar.cpp   the portable loops (any CPU; FMA when the CPU has it)
//   avx2     noise_range_avx2.cpp     8 lanes: 2 Philox calls per register   (x86-64 AVX2+FMA)
//   avx512   noise_range_avx512.cpp   16 lanes: 4 Philox calls per register  (x86-64 AVX-512F)
// Every path gives the spec's bits (tests/test_noise_simd.cpp). SMEZO_NOISE_PATH=scalar|avx2|avx512
// picks one (an error if this CPU cannot run it); otherwise the fastest the CPU runs is used.
#pragma once

#include <cstdint>

#include "backend/tensor.h"  // ParamInfo

namespace smezo {

enum NoisePath { NOISE_PATH_SCALAR, NOISE_PATH_AVX2, NOISE_PATH_AVX512 };
constexpr int NOISE_PATH_COUNT = 3;

// One path's three range workers. Element i of [start, start + count) of the parameter:
//   read:      out[i - start] = perturbed_value(w[i], z, scale, keep)
//   read_pair: out_plus[i - start] at +scale and out_minus[i - start] at -scale (one z)
//   update:    w[i] = keep ? fma(-decay, w[i], updated_value(w[i], z, coef, keep)) : w[i]
// with z = noise_z(info.noise, seed, info.tensor_id, i) and keep = mask_keep(info's mask, w[i]).
// They run on the calling thread (the caller spreads ranges over the cores).
struct NoiseRangeFns {
  void (*read)(const ParamInfo& info, const float* w, float scale, uint64_t seed, int64_t start,
               int64_t count, float* out);
  void (*read_pair)(const ParamInfo& info, const float* w, float scale, uint64_t seed, int64_t start,
                    int64_t count, float* out_plus, float* out_minus);
  void (*update)(const ParamInfo& info, float* w, float coef, float decay, uint64_t seed, int64_t start,
                 int64_t count);
  // For tests: z of n_calls (a multiple of 8) Philox outputs words[4k..4k+3], as noise_z8 makes them
  // (4 elements per call for gaussian-v1, 8 for gaussian and rademacher, 128 for sign).
  void (*z_of_words)(NoiseKind kind, const uint32_t* words, int64_t n_calls, float* z);
};

const char* noise_path_name(NoisePath path);  // "scalar", "avx2", "avx512"

// The path's workers, or nullptr when this build lacks it (not x86-64) or this CPU cannot run it.
const NoiseRangeFns* noise_path_fns(NoisePath path);

// The path in use: noise_path_set's, else SMEZO_NOISE_PATH (read once), else the fastest.
NoisePath noise_path_active();

// Makes `path` the active one (tests and benchmarks); an error if noise_path_fns(path) is null.
void noise_path_set(NoisePath path);

// The three paths' workers as compiled, without the CPU check (nullptr where not compiled in).
const NoiseRangeFns* noise_range_scalar();
const NoiseRangeFns* noise_range_avx2();
const NoiseRangeFns* noise_range_avx512();

}  // namespace smezo
