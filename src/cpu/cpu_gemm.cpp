// Row-independent sgemm calls for the CPU linear (see cpu_gemm.h).
// Why plain sgemm is not enough: a token row's output must not depend on the other rows of its call
// (packed batches, shared-prefix scoring and data-parallel ranks are checked bit for bit). OpenBLAS's
// kernels (0.3.21, sgemm_kernel_8x4_haswell) keep two accumulators (even and odd k) in some 8-row
// tiles and one elsewhere, and which tile a row lands in depends on its place and the row count.
// The schemes put token rows on sgemm's M side (the weight block on N):
// - "guarded": calls of at most 8 + 304 + 8 = 320 rows (OpenBLAS's GEMM_P on Zen and Haswell: one
//   pass), real rows zero-padded to a multiple of 8 and framed by 8 zero rows on each side, so the
//   special first and last 8-row tiles hold only zeros. About plain sgemm speed.
// - "fixed16": every call exactly 16 rows, zero-padded; W re-packed every 16 rows: ~2x slower.
// OpenBLAS promises neither, so gemm_scheme_rows_independent measures each shape here first.
// Every sgemm call runs on one thread (an OpenBLAS split changes the tiles).
#include "cpu/cpu_gemm.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <random>

namespace smezo {

namespace {

const GemmRowScheme kGuarded{"guarded", 8, 304, 8};
const GemmRowScheme kFixed16{"fixed16", 0, 16, 16};

int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// The outputs (r, nb) of rows [first, first + r) of x(R, K) times w(nb, K), through scheme.
std::vector<float> rows_times_block(const GemmRowScheme& s, const float* x, int64_t first, int64_t r,
                                    const float* w, int64_t nb, int64_t K) {
  GemmPanel panel;
  gemm_pack_rows(s, x + first * K, r, K, &panel);
  std::vector<float> tile(static_cast<size_t>(s.call_rows(s.max_rows) * nb));
  std::vector<float> y(static_cast<size_t>(r * nb));
  for (int64_t c = 0; c < (int64_t)panel.chunks.size(); c++)
    gemm_rows(s, panel, c, w, K, nb, tile.data(), y.data() + panel.chunks[c].first_row * nb, nb,
              nullptr);
  return y;
}

bool measure_rows_independent(const GemmRowScheme& s, int64_t nb, int64_t K) {
  const int64_t R = s.max_rows;
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(R * K)), w(static_cast<size_t>(nb * K));
  for (float& v : x) v = dist(rng);
  for (float& v : w) v = dist(rng);
  const std::vector<float> full = rows_times_block(s, x.data(), 0, R, w.data(), nb, K);
  auto agrees = [&](int64_t first, int64_t r) {
    if (first < 0 || r < 1 || first + r > R) return true;
    std::vector<float> part = rows_times_block(s, x.data(), first, r, w.data(), nb, K);
    return std::memcmp(part.data(), full.data() + first * nb, part.size() * sizeof(float)) == 0;
  };
  // each row alone, near both ends and in the middle
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{8}, R / 2, R - 9, R - 8, R - 1})
    if (!agrees(i, 1)) return false;
  // calls of several sizes (residues of 4, 8, 12 and 16) at several places
  const int64_t sizes[][2] = {{1, 2}, {3, 3}, {2, 5}, {5, 9}, {R - 13, 13}, {4, 37}, {9, R - 20},
                              {1, R - 1}, {0, R - 7}};
  for (const auto& fr : sizes)
    if (!agrees(fr[0], fr[1])) return false;
  return true;
}

}  // namespace

int64_t GemmRowScheme::call_rows(int64_t real_rows) const {
  return 2 * guard + round_up(real_rows, row_multiple);
}

const std::vector<const GemmRowScheme*>& gemm_schemes() {
  static const std::vector<const GemmRowScheme*> schemes = {&kGuarded, &kFixed16};
  return schemes;
}

const char* gemm_blas_core() { return openblas_get_corename(); }

void gemm_pack_rows(const GemmRowScheme& s, const float* x, int64_t M, int64_t K, GemmPanel* panel) {
  panel->K = K;
  panel->chunks.clear();
  int64_t offset = 0;
  for (int64_t first = 0; first < M; first += s.max_rows) {
    const int64_t r = std::min(s.max_rows, M - first);
    panel->chunks.push_back(GemmPanel::Chunk{first, r, offset, s.call_rows(r)});
    offset += s.call_rows(r);
  }
  panel->data.resize(static_cast<size_t>(offset * K));
  for (const GemmPanel::Chunk& c : panel->chunks) {
    float* dst = panel->data.data() + c.offset * K;
    const int64_t before = s.guard, after = c.call_rows - s.guard - c.real_rows;
    std::memset(dst, 0, static_cast<size_t>(before * K) * sizeof(float));
    std::memcpy(dst + before * K, x + c.first_row * K, static_cast<size_t>(c.real_rows * K) * sizeof(float));
    std::memset(dst + (before + c.real_rows) * K, 0, static_cast<size_t>(after * K) * sizeof(float));
  }
}

void gemm_rows(const GemmRowScheme& s, const GemmPanel& panel, int64_t chunk, const float* w,
               int64_t ldw, int64_t nb, float* tile, float* y, int64_t ldy, const float* bias) {
  const GemmPanel::Chunk& c = panel.chunks[chunk];
  const int64_t K = panel.K, m = c.call_rows;
  // tile(m, nb) column-major = panel rows (m, K) · w(nb, K)ᵀ; one thread, or OpenBLAS splits the call.
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  cblas_sgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)m, (int)nb, (int)K, 1.0f,
              panel.data.data() + c.offset * K, (int)K, w, (int)ldw, 0.0f, tile, (int)m);
  omp_set_num_threads(threads);
  // transpose the real rows into y, 8 rows at a time so the writes stay in cache
  const float* real = tile + s.guard;
  for (int64_t i0 = 0; i0 < c.real_rows; i0 += 8) {
    const int64_t i1 = std::min(c.real_rows, i0 + 8);
    for (int64_t j = 0; j < nb; j++) {
      const float* col = real + j * m;
      if (bias) {
        for (int64_t i = i0; i < i1; i++) y[i * ldy + j] = col[i] + bias[j];
      } else {
        for (int64_t i = i0; i < i1; i++) y[i * ldy + j] = col[i];
      }
    }
  }
}

bool gemm_scheme_rows_independent(const GemmRowScheme& s, int64_t nb, int64_t K) {
  static std::mutex mutex;
  static std::map<std::array<int64_t, 3>, bool> known;
  std::lock_guard<std::mutex> lock(mutex);
  const std::array<int64_t, 3> key{s.guard * 1000000 + s.max_rows * 100 + s.row_multiple, nb, K};
  auto it = known.find(key);
  if (it != known.end()) return it->second;
  const bool ok = measure_rows_independent(s, nb, K);
  known[key] = ok;
  return ok;
}

const GemmRowScheme* gemm_scheme_for(const std::vector<int64_t>& nbs, int64_t K) {
  for (const GemmRowScheme* s : gemm_schemes()) {
    bool ok = true;
    for (int64_t nb : nbs) ok = ok && gemm_scheme_rows_independent(*s, nb, K);
    if (ok) return s;
  }
  static std::mutex mutex;
  static std::map<std::pair<int64_t, int64_t>, bool> told;
  std::lock_guard<std::mutex> lock(mutex);
  if (!told[{nbs.front(), K}]) {
    told[{nbs.front(), K}] = true;
    std::fprintf(stderr,
                 "smezo: note: OpenBLAS (%s kernels) does not keep token rows independent for "
                 "%lld-row weight blocks of %lld inputs; the CPU linear uses its reference loops "
                 "for that shape (slower)\n",
                 gemm_blas_core(), (long long)nbs.front(), (long long)K);
  }
  return nullptr;
}

}  // namespace smezo
