// CudaBackend::attention (cuda/attention.cu) against the CPU reference
// (src/cpu/attention.cpp), case by case: head_dim 8/64/128 (plus 4, 6, 12, 80, 96, 256),
// grouped-query 8/2 and multi-head 4/4, single sequences of 1..300 tokens, packed sequences
// with gaps between them, cached generation (q_len < kv_len, kv tensor longer than kv_len),
// sliding windows, a 2000-token sequence, and the preconditions. Every GPU test skips with
// "no CUDA device: skipped" where no GPU is present.
//
// Inputs are fresh uniform random numbers in [-1, 1) (q sometimes in [-4, 4) for sharper
// softmaxes), never zeros. Both backends get the same inputs; their output tensors carry
// kGuardRows extra rows after the M rows the op sees. Before the run the M rows are poisoned
// with NaN and the guard rows hold kGuard. After it:
//   * rows covered by a sequence must be finite and match the CPU within the tolerance;
//   * rows no sequence covers must still be NaN (on both backends);
//   * guard rows must still hold kGuard exactly (no out-of-bounds writes).
//
// Tolerance (fp32 path): |cuda - cpu| <= 1e-5 * max(1, |cpu|) per element. Every output is
// a convex combination of value rows in [-1, 1), so 1 is the data's scale; the two sides
// differ only in summation order, FMA contraction and the online-softmax rescaling
// (a few ulps per operation, ~1e-6 at most for these sizes).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/check.h"
#include "cpu/cpu_backend.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "test_util.h"

using namespace smezo;

namespace {

constexpr float kTolerance = 1e-5f;
constexpr int64_t kGuardRows = 3;
constexpr float kGuard = -12345.5f;

struct AttnCase {
  std::string name;
  int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0, window = 0;
  std::vector<AttentionSeq> seqs;
  int64_t q_rows = 0;   // rows of q/out seen by the op (may include rows no sequence covers)
  int64_t kv_rows = 0;  // rows of k/v (may exceed what the sequences read)
  float q_range = 1.0f;  // q uniform in [-q_range, q_range)
};

// One sequence of n tokens (prefill/training).
AttnCase single(int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, int64_t len,
                int64_t window = 0) {
  AttnCase c;
  c.name = "single len " + std::to_string(len);
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv_heads;
  c.head_dim = head_dim;
  c.window = window;
  c.seqs = {AttentionSeq{0, len, 0, len}};
  c.q_rows = len;
  c.kv_rows = len;
  return c;
}

std::string describe(const AttnCase& c) {
  std::string s = c.name + " (heads " + std::to_string(c.n_heads) + "/" +
                  std::to_string(c.n_kv_heads) + ", head_dim " + std::to_string(c.head_dim) +
                  ", window " + std::to_string(c.window) + ", seqs";
  for (const AttentionSeq& q : c.seqs)
    s += " {q_row " + std::to_string(q.q_row) + " q_len " + std::to_string(q.q_len) +
         " kv_row " + std::to_string(q.kv_row) + " kv_len " + std::to_string(q.kv_len) + "}";
  return s + ")";
}

// Runs the case on one backend; returns the whole output tensor (q_rows + kGuardRows rows).
std::vector<float> run_on(Backend& be, const AttnCase& c, const std::vector<float>& q,
                          const std::vector<float>& k, const std::vector<float>& v) {
  const int64_t qw = c.n_heads * c.head_dim, kvw = c.n_kv_heads * c.head_dim;
  AttentionParams ap;
  ap.q = be.alloc(c.q_rows, qw, DTYPE_F32);
  ap.k = be.alloc(c.kv_rows, kvw, DTYPE_F32);
  ap.v = be.alloc(c.kv_rows, kvw, DTYPE_F32);
  const Tensor out_full = be.alloc(c.q_rows + kGuardRows, qw, DTYPE_F32);
  be.upload(ap.q, q.data());
  be.upload(ap.k, k.data());
  be.upload(ap.v, v.data());
  std::vector<float> init(static_cast<size_t>(out_full.numel()),
                          std::numeric_limits<float>::quiet_NaN());
  std::fill(init.begin() + c.q_rows * qw, init.end(), kGuard);
  be.upload(out_full, init.data());
  ap.out = out_full;
  ap.out.rows = c.q_rows;  // the op sees M rows; the guard rows follow them
  ap.seqs = c.seqs;
  ap.n_heads = c.n_heads;
  ap.n_kv_heads = c.n_kv_heads;
  ap.head_dim = c.head_dim;
  ap.sliding_window = c.window;
  be.attention(ap);
  if (auto* cuda = dynamic_cast<CudaBackend*>(&be))
    CUDA_CHECK(cudaStreamSynchronize(cuda->stream()));
  std::vector<float> out(static_cast<size_t>(out_full.numel()));
  be.download(out_full, out.data());
  return out;
}

// Runs the case on both backends and checks outputs, untouched rows and guard rows.
void check_case(CpuBackend& cpu, CudaBackend& gpu, const AttnCase& c, uint32_t seed) {
  SCOPED_TRACE(describe(c));
  const int64_t qw = c.n_heads * c.head_dim, kvw = c.n_kv_heads * c.head_dim;
  const std::vector<float> q =
      smezo_test::random_floats(c.q_rows * qw, seed, -c.q_range, c.q_range);
  const std::vector<float> k = smezo_test::random_floats(c.kv_rows * kvw, seed + 1);
  const std::vector<float> v = smezo_test::random_floats(c.kv_rows * kvw, seed + 2);
  const std::vector<float> want = run_on(cpu, c, q, k, v);
  const std::vector<float> got = run_on(gpu, c, q, k, v);

  std::vector<bool> covered(static_cast<size_t>(c.q_rows), false);
  for (const AttentionSeq& s : c.seqs)
    for (int64_t i = 0; i < s.q_len; ++i) covered[s.q_row + i] = true;

  int64_t n_bad = 0, n_checked = 0;
  double max_err = 0.0;
  std::string first_bad;
  for (int64_t r = 0; r < c.q_rows; ++r) {
    for (int64_t j = 0; j < qw; ++j) {
      const float g = got[r * qw + j], w = want[r * qw + j];
      bool ok;
      if (covered[r]) {
        const double err = std::fabs(double(g) - double(w));
        ok = std::isfinite(g) && err <= kTolerance * std::max(1.0, std::fabs(double(w)));
        if (std::isfinite(g)) max_err = std::max(max_err, err);
        ++n_checked;
      } else {
        ok = std::isnan(g) && std::isnan(w);  // nobody writes rows no sequence covers
      }
      if (!ok && n_bad++ == 0)
        first_bad = "row " + std::to_string(r) + " col " + std::to_string(j) + " (head " +
                    std::to_string(j / c.head_dim) + "): cuda " + std::to_string(g) + " cpu " +
                    std::to_string(w) + (covered[r] ? "" : " (row covered by no sequence)");
    }
  }
  EXPECT_EQ(n_bad, 0) << n_bad << " bad elements of " << c.q_rows * qw
                      << "; first: " << first_bad << "; max |err| " << max_err;
  for (int64_t i = c.q_rows * qw; i < static_cast<int64_t>(got.size()); ++i)
    ASSERT_EQ(got[i], kGuard) << "guard element " << i - c.q_rows * qw << " overwritten";
  EXPECT_GT(n_checked, 0);
}

struct HeadShape {
  int64_t n_heads, n_kv_heads;
};
const HeadShape kHeadShapes[] = {{8, 2}, {4, 4}};  // grouped-query 8/2, multi-head 4/4
const int64_t kHeadDims[] = {8, 64, 128};

}  // namespace

TEST(AttentionCuda, SingleSequenceOf1To300Tokens) {
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CpuBackend cpu;
  CudaBackend gpu;
  const int64_t lens[] = {1,   2,   3,   4,   5,   7,   31,  32,  33,  63,
                          64,  65,  100, 127, 128, 129, 255, 256, 257, 300};
  uint32_t seed = 100;
  for (int64_t hd : kHeadDims)
    for (const HeadShape& hs : kHeadShapes)
      for (int64_t len : lens)
        check_case(cpu, gpu, single(hs.n_heads, hs.n_kv_heads, hd, len), seed++);
}

TEST(AttentionCuda, PackedSequences5_33_129) {
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CpuBackend cpu;
  CudaBackend gpu;
  uint32_t seed = 200;
  for (int64_t hd : kHeadDims) {
    for (const HeadShape& hs : kHeadShapes) {
      AttnCase c;
      c.name = "packed 5/33/129";
      c.n_heads = hs.n_heads;
      c.n_kv_heads = hs.n_kv_heads;
      c.head_dim = hd;
      // Query rows with gaps (rows 5-6, 40 and 170-171 belong to no sequence); key rows laid
      // out differently from the query rows; sequences not in row order.
      c.seqs = {AttentionSeq{41, 129, 45, 129}, AttentionSeq{0, 5, 2, 5},
                AttentionSeq{7, 33, 9, 33}};
      c.q_rows = 172;
      c.kv_rows = 180;
      check_case(cpu, gpu, c, seed++);
      // The same sequences as one packed batch with rows shared by q and k/v (as the model
      // lays out a training batch).
      c.name = "packed 5/33/129 contiguous";
      c.seqs = {AttentionSeq{0, 5, 0, 5}, AttentionSeq{5, 33, 5, 33},
                AttentionSeq{38, 129, 38, 129}};
      c.q_rows = c.kv_rows = 167;
      check_case(cpu, gpu, c, seed++);
    }
  }
}

TEST(AttentionCuda, CachedGenerationKv517) {
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CpuBackend cpu;
  CudaBackend gpu;
  uint32_t seed = 300;
  for (int64_t hd : kHeadDims) {
    for (const HeadShape& hs : kHeadShapes) {
      for (int64_t q_len : {1, 4, 40}) {
        AttnCase c;
        c.name = "cache q_len " + std::to_string(q_len) + " kv_len 517";
        c.n_heads = hs.n_heads;
        c.n_kv_heads = hs.n_kv_heads;
        c.head_dim = hd;
        c.seqs = {AttentionSeq{0, q_len, 0, 517}};
        c.q_rows = q_len;
        c.kv_rows = 600;  // cache capacity: rows 517..599 hold junk the op must not read
        check_case(cpu, gpu, c, seed++);
      }
    }
  }
  // Several sequences mixing prefill, a chunk after a prefix, and generation in one call.
  AttnCase c;
  c.name = "mixed prefill/chunk/generation";
  c.n_heads = 8;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.seqs = {AttentionSeq{0, 5, 0, 5}, AttentionSeq{5, 7, 5, 50}, AttentionSeq{12, 1, 55, 517}};
  c.q_rows = 13;
  c.kv_rows = 600;
  check_case(cpu, gpu, c, seed++);
}

TEST(AttentionCuda, SlidingWindow16Length100) {
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CpuBackend cpu;
  CudaBackend gpu;
  uint32_t seed = 400;
  for (int64_t hd : kHeadDims)
    for (const HeadShape& hs : kHeadShapes)
      check_case(cpu, gpu, single(hs.n_heads, hs.n_kv_heads, hd, 100, 16), seed++);
  // Window edge cases: only the token itself, a window not a multiple of the tile, a window
  // longer than the sequence (no effect), a long sequence, and generation with a window.
  for (int64_t window : {1, 33, 500}) check_case(cpu, gpu, single(8, 2, 64, 100, window), seed++);
  check_case(cpu, gpu, single(4, 4, 128, 300, 16), seed++);
  AttnCase c;
  c.name = "window 16, packed and cached";
  c.n_heads = 8;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.window = 16;
  c.seqs = {AttentionSeq{0, 5, 0, 5}, AttentionSeq{5, 33, 5, 33}, AttentionSeq{38, 1, 38, 517}};
  c.q_rows = 39;
  c.kv_rows = 560;
  check_case(cpu, gpu, c, seed++);
}

TEST(AttentionCuda, OtherHeadDims) {
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CpuBackend cpu;
  CudaBackend gpu;
  uint32_t seed = 500;
  for (int64_t hd : {4, 6, 12, 80, 96, 256}) {
    check_case(cpu, gpu, single(4, 2, hd, 70), seed++);
    check_case(cpu, gpu, single(2, 1, hd, 1), seed++);
  }
  check_case(cpu, gpu, single(2, 1, 256, 300, 40), seed++);
}

TEST(AttentionCuda, SharpScoresRescaleOnline) {
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CpuBackend cpu;
  CudaBackend gpu;
  uint32_t seed = 600;
  for (int64_t hd : kHeadDims) {
    AttnCase c = single(8, 2, hd, 257);
    c.name = "sharp scores, len 257";
    c.q_range = 4.0f;  // larger scores: the running max changes often and matters
    check_case(cpu, gpu, c, seed++);
  }
}

TEST(AttentionCuda, LongSequence2000) {
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CpuBackend cpu;
  CudaBackend gpu;
  check_case(cpu, gpu, single(2, 1, 64, 2000), 700);
  check_case(cpu, gpu, single(2, 1, 128, 2000, 256), 701);
}

TEST(AttentionCuda, EmptyAndZeroLengthSequencesWriteNothing) {
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CpuBackend cpu;
  CudaBackend gpu;
  AttnCase c;
  c.name = "zero-length sequences";
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;
  c.seqs = {AttentionSeq{0, 0, 0, 0}, AttentionSeq{1, 3, 0, 3}, AttentionSeq{4, 0, 0, 10}};
  c.q_rows = 6;
  c.kv_rows = 10;
  check_case(cpu, gpu, c, 800);
}

TEST(AttentionCuda, RejectsBadShapes) {
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CudaBackend gpu;
  AttentionParams ap;
  ap.n_heads = 2;
  ap.n_kv_heads = 1;
  ap.head_dim = 264;  // over the kernel's 256
  ap.q = ap.out = gpu.alloc(4, 2 * 264, DTYPE_F32);
  ap.k = ap.v = gpu.alloc(4, 264, DTYPE_F32);
  ap.seqs = {AttentionSeq{0, 4, 0, 4}};
  EXPECT_THROW_MSG(gpu.attention(ap), "head_dim 264");
  ap.head_dim = 8;
  ap.q = ap.out = gpu.alloc(4, 16, DTYPE_F32);
  ap.k = ap.v = gpu.alloc(4, 8, DTYPE_F32);
  ap.seqs = {AttentionSeq{0, 4, 0, 3}};  // more queries than keys
  EXPECT_THROW_MSG(gpu.attention(ap), "attention: sequence 0 has q_len 4 and kv_len 3");
  ap.seqs = {AttentionSeq{0, 4, 1, 4}};  // keys past the end of k/v
  EXPECT_THROW_MSG(gpu.attention(ap), "attention: sequence 0 key rows [1, 5) exceed k/v (4, 4 rows)");
  ap.seqs = {AttentionSeq{2, 4, 0, 4}};  // queries past the end of q/out
  EXPECT_THROW_MSG(gpu.attention(ap), "attention: sequence 0 query rows [2, 6) exceed q/out (4, 4 rows)");
  ap.n_kv_heads = 3;  // 2 heads are not a multiple of 3 kv heads
  ap.seqs = {AttentionSeq{0, 4, 0, 4}};
  EXPECT_THROW_MSG(gpu.attention(ap), "attention: n_heads 2 must be a positive multiple of n_kv_heads 3");
}
