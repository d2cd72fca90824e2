// CudaBackend::attention's preconditions: what the conformance cases (the attention list of
// bench/op_cases.h, made in bench/op_case_attention.cpp and run against the CPU reference by
// BackendOps.Attention, tests/test_backend_ops.cu) cannot show, as each of them is valid: a
// head_dim over the kernel's limit, more queries than keys, rows past the end of q/out or k/v,
// and heads that are not a multiple of the kv heads are refused with one-line errors. Skips
// with "no CUDA device: skipped" where no GPU is present.
#include <gtest/gtest.h>

#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "test_util.h"

using namespace smezo;

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
