// Row-independent products through OpenBLAS for the CPU linear: each output row of x · Wᵀ depends on
// its own input row and W alone, never on the other rows of the sgemm call (see cpu_gemm.cpp).
//   GemmPanel panel;
//   gemm_pack_rows(scheme, x, M, K, &panel);              // once per linear call
//   gemm_rows(scheme, panel, chunk, w, nb, tile, y, N, b); // per (weight block, row chunk)
#pragma once

#include <cstdint>
#include <vector>

namespace smezo {

// How input rows are grouped into sgemm calls: [guard zeros][r <= max_rows real rows][zeros up to a
// multiple of row_multiple][guard zeros] times a block of weight rows; zero rows' outputs dropped.
struct GemmRowScheme {
  const char* name;
  int64_t guard;
  int64_t max_rows;
  int64_t row_multiple;

  int64_t call_rows(int64_t real_rows) const;  // rows of the call that holds real_rows rows
};

// The schemes, in the order the linear tries them (fastest first).
const std::vector<const GemmRowScheme*>& gemm_schemes();

// The rows of x(M, K) laid out chunk by chunk as a scheme's calls want them.
struct GemmPanel {
  struct Chunk {
    int64_t first_row;  // row of x that is the chunk's first real row
    int64_t real_rows;
    int64_t offset;     // row of data where the chunk's call starts (its first guard row)
    int64_t call_rows;
  };
  int64_t K = 0;
  std::vector<Chunk> chunks;
  std::vector<float> data;  // (sum of call_rows, K) row-major
};

// Lays out x(M, K) for scheme; reuses panel's memory.
void gemm_pack_rows(const GemmRowScheme& scheme, const float* x, int64_t M, int64_t K,
                    GemmPanel* panel);

// y[i * ldy + j] = (x row first_row + i) · (w row j) (+ bias[j]), j < nb; tile: call_rows * nb floats.
void gemm_rows(const GemmRowScheme& scheme, const GemmPanel& panel, int64_t chunk,
               const float* w, int64_t ldw, int64_t nb, float* tile, float* y, int64_t ldy,
               const float* bias);

// Whether scheme keeps rows independent for (nb, K) blocks on this OpenBLAS (measured once). Thread-safe.
bool gemm_scheme_rows_independent(const GemmRowScheme& scheme, int64_t nb, int64_t K);

// The first scheme keeping rows independent for every block size in nbs, or nullptr (plain loops).
const GemmRowScheme* gemm_scheme_for(const std::vector<int64_t>& nbs, int64_t K);

// OpenBLAS's name for the kernels it picked on this CPU (e.g. "Zen", "Haswell").
const char* gemm_blas_core();

}  // namespace smezo
