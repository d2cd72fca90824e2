// The CPU backend's precondition checks, each triggered by a call that breaks it and checked by its
// message (tools/checks/untested_errors.py lists the sites no test reaches): the model never makes
// these calls, so only a direct call shows that a broken caller is stopped before it writes memory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backend/backend.h"
#include "setup/model_setup.h"
#include "test_util.h"

using namespace smezo;
using smezo_test::error_of;
using testing::HasSubstr;

namespace {

Param param_of(Backend& be, int64_t rows, int64_t cols, const char* name) {
  Param p;
  p.w = be.alloc(rows, cols, DTYPE_F32);
  p.info.name = name;
  return p;
}

}  // namespace

TEST(BackendErrorSites, CpuPreconditions) {
  auto be = make_backend(DEVICE_CPU);
  EXPECT_THAT(error_of([&] { be->alloc(2, 2, DTYPE_BF16); }),
              HasSubstr("the CPU backend stores fp32 only (asked for BF16)"));
  EXPECT_THAT(error_of([&] { be->alloc(-1, 2, DTYPE_F32); }), HasSubstr("bad tensor shape [-1, 2]"));
  const Tensor a = be->alloc(2, 3, DTYPE_F32), b = be->alloc(3, 2, DTYPE_F32), row = be->alloc(1, 3, DTYPE_F32);
  EXPECT_THAT(error_of([&] { be->add(a, row); }), HasSubstr("add: shape mismatch"));
  EXPECT_THAT(error_of([&] { be->add_scaled(a, row, 2.0f); }),
              HasSubstr("add_scaled: shape mismatch ([2, 3] += [1, 3])"));
  EXPECT_THAT(error_of([&] { be->gather_rows(row, b, {0}); }), HasSubstr("gather_rows: shape mismatch"));
  EXPECT_THAT(error_of([&] { be->gather_rows(row, a, {5}); }), HasSubstr("gather_rows: row 5 out of range"));
  EXPECT_THAT(error_of([&] { be->copy_rows(a, 2, row); }), HasSubstr("copy_rows: out of range"));
  Tensor bf = a;
  bf.dtype = DTYPE_BF16;
  const float v[6] = {1, 2, 3, 4, 5, 6};
  EXPECT_THAT(error_of([&] { be->upload_stored(bf, v, DTYPE_F32); }), HasSubstr("the CPU backend stores fp32 only"));

  const Param table = param_of(*be, 4, 3, "embed");
  EXPECT_THAT(error_of([&] { be->embedding(b, table, {0, 1}, Probe{}); }), HasSubstr("embedding: shape mismatch"));
  EXPECT_THAT(error_of([&] { be->add_position_embedding(a, table, {1, 9}, 0, Probe{}); }),
              HasSubstr("position 9 past the learned position table"));
  const Param w = param_of(*be, 2, 4, "w");
  EXPECT_THAT(error_of([&] { be->linear(a, a, w, nullptr, Probe{}); }), HasSubstr("features, weight expects"));
  const Param w3 = param_of(*be, 2, 3, "w3");
  EXPECT_THAT(error_of([&] { be->linear(b, a, w3, nullptr, Probe{}); }), HasSubstr("linear w3: output shape mismatch"));
  EXPECT_THAT(error_of([&] { be->rope(a, {0, 1}, 1, {1.0f, 0.1f}, ROPE_ROTATE_HALF); }),
              HasSubstr("rope: bad shape (x has 3 columns, 1 heads of 4)"));
  EXPECT_THAT(error_of([&] { be->abs_quantile(w, 1.5); }), HasSubstr("quantile 1.5 outside [0, 1]"));
  const Param none = param_of(*be, 0, 0, "none");
  EXPECT_THAT(error_of([&] { be->abs_quantile(none, 0.5); }), HasSubstr("quantile of empty tensor none"));
  AttentionParams ap;
  ap.out = ap.q = be->alloc(3, 2, DTYPE_F32);
  ap.k = ap.v = be->alloc(2, 2, DTYPE_F32);
  ap.n_heads = ap.n_kv_heads = 1;
  ap.head_dim = 2;
  ap.seqs = {AttentionSeq{0, 3, 0, 2}};
  EXPECT_THAT(error_of([&] { be->attention(ap); }), HasSubstr("attention: more queries than keys"));
}
