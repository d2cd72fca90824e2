// The attention cases (bench/op_case.h): CudaBackend::attention (cuda/attention.cu) against the
// CPU reference (src/cpu/attention.cpp). head_dim 8/64/128 (plus 4, 6, 12, 80, 96, 256),
// grouped-query 8/2 and multi-head 4/4, single sequences of 1..300 tokens, packed sequences
// with gaps between them, cached generation and chunks after a prefix (q_len < kv_len, the
// kv tensor longer than kv_len), sliding windows, 2000-token sequences and zero-length ones.
// q, k and v are uniform in [-1, 1) (q sometimes in [-4, 4) for sharper softmaxes) from each
// case's fixed seed.
//
// Tolerance (fp32 path): |cuda - cpu| <= 1e-5 * max(1, |cpu|) per element (kTolAttention).
// Every output is a convex combination of value rows in [-1, 1), so 1 is the data's scale; the
// two sides differ only in summation order, FMA contraction and the online-softmax rescaling
// (a few ulps per operation, ~1e-6 at most for these sizes). Rows no sequence covers must
// keep their poison on both sides.
#include <algorithm>
#include <cmath>
#include <memory>

#include "bench/host_values.h"
#include "bench/op_cases.h"
#include "common/check.h"

namespace smezo {

namespace {

struct HeadShape {
  int64_t n_heads, n_kv_heads;
};
constexpr HeadShape kHeadShapes[] = {{8, 2}, {4, 4}};  // grouped-query 8/2, multi-head 4/4
constexpr int64_t kHeadDims[] = {8, 64, 128};

// One sequence of len tokens (prefill/training).
AttentionCase single(int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, int64_t len, int64_t window,
                     uint32_t seed, const std::string& name = "") {
  return {name.empty() ? "single len " + std::to_string(len) : name, n_heads, n_kv_heads, head_dim, window,
          {AttentionSeq{0, len, 0, len}}, len, len, 1.0f, seed};
}

void add_packed_and_cached(std::vector<AttentionCase>* out) {
  uint32_t seed = 200;
  for (int64_t hd : kHeadDims)
    for (const HeadShape& hs : kHeadShapes) {
      // Query rows with gaps (rows 5-6, 40 and 170-171 belong to no sequence); key rows laid
      // out differently from the query rows; sequences not in row order.
      out->push_back({"packed 5/33/129", hs.n_heads, hs.n_kv_heads, hd, 0,
                      {{41, 129, 45, 129}, {0, 5, 2, 5}, {7, 33, 9, 33}}, 172, 180, 1.0f, seed++});
      // The same sequences with rows shared by q and k/v (as the model lays out a batch).
      out->push_back({"packed 5/33/129 contiguous", hs.n_heads, hs.n_kv_heads, hd, 0,
                      {{0, 5, 0, 5}, {5, 33, 5, 33}, {38, 129, 38, 129}}, 167, 167, 1.0f, seed++});
    }
  seed = 300;
  for (int64_t hd : kHeadDims)
    for (const HeadShape& hs : kHeadShapes)
      for (int64_t q_len : {1, 4, 40})  // cache capacity 600: rows 517..599 hold junk never read
        out->push_back({"cache q_len " + std::to_string(q_len) + " kv_len 517", hs.n_heads, hs.n_kv_heads, hd, 0,
                        {{0, q_len, 0, 517}}, q_len, 600, 1.0f, seed++});
  // Prefill, a chunk after a 43-token prefix, and generation in one call.
  out->push_back({"mixed prefill/chunk/generation", 8, 2, 64, 0, {{0, 5, 0, 5}, {5, 7, 5, 50}, {12, 1, 55, 517}},
                  13, 600, 1.0f, seed++});
}

void add_windows(std::vector<AttentionCase>* out) {
  uint32_t seed = 400;
  for (int64_t hd : kHeadDims)
    for (const HeadShape& hs : kHeadShapes) out->push_back(single(hs.n_heads, hs.n_kv_heads, hd, 100, 16, seed++));
  // Only the token itself, a window not a multiple of the tile, a window longer than the
  // sequence (no effect), a long sequence, and generation with a window.
  for (int64_t window : {1, 33, 500}) out->push_back(single(8, 2, 64, 100, window, seed++));
  out->push_back(single(4, 4, 128, 300, 16, seed++));
  out->push_back({"window 16, packed and cached", 8, 2, 64, 16, {{0, 5, 0, 5}, {5, 33, 5, 33}, {38, 1, 38, 517}},
                  39, 560, 1.0f, seed++});
}

}  // namespace

std::vector<AttentionCase> attention_cases() {
  std::vector<AttentionCase> out;
  uint32_t seed = 100;
  for (int64_t hd : kHeadDims)
    for (const HeadShape& hs : kHeadShapes)
      for (int64_t len : {1, 2, 3, 4, 5, 7, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 300})
        out.push_back(single(hs.n_heads, hs.n_kv_heads, hd, len, 0, seed++));
  add_packed_and_cached(&out);
  add_windows(&out);
  seed = 500;
  for (int64_t hd : {4, 6, 12, 80, 96, 256}) {
    out.push_back(single(4, 2, hd, 70, 0, seed++));
    out.push_back(single(2, 1, hd, 1, 0, seed++));
  }
  out.push_back(single(2, 1, 256, 300, 40, seed++));
  seed = 600;
  for (int64_t hd : kHeadDims) {  // larger scores: the running max changes often and matters
    out.push_back(single(8, 2, hd, 257, 0, seed++, "sharp scores, len 257"));
    out.back().q_range = 4.0f;
  }
  out.push_back(single(2, 1, 64, 2000, 0, 700));
  out.push_back(single(2, 1, 128, 2000, 256, 701));
  out.push_back({"zero-length sequences", 4, 2, 8, 0, {{0, 0, 0, 0}, {1, 3, 0, 3}, {4, 0, 0, 10}}, 6, 10, 1.0f, 800});
  return out;
}

OpCase make_attention_case(const AttentionCase& c) {
  const int64_t qw = c.n_heads * c.head_dim, kvw = c.n_kv_heads * c.head_dim;
  struct In {
    std::vector<float> q, k, v;
    std::vector<bool> covered;  // per q row: some sequence writes it
  };
  auto in = std::make_shared<In>();
  in->q = random_floats(c.q_rows * qw, c.seed, -c.q_range, c.q_range);
  in->k = random_floats(c.kv_rows * kvw, c.seed + 1);
  in->v = random_floats(c.kv_rows * kvw, c.seed + 2);
  in->covered.assign(static_cast<size_t>(c.q_rows), false);
  for (const AttentionSeq& s : c.seqs) std::fill_n(in->covered.begin() + s.q_row, s.q_len, true);
  OpCase oc;
  oc.op = "attention";
  oc.name = format_string("%s (heads %lld/%lld, head_dim %lld, window %lld, seqs", c.name.c_str(),
                          (long long)c.n_heads, (long long)c.n_kv_heads, (long long)c.head_dim, (long long)c.window);
  for (const AttentionSeq& s : c.seqs)
    oc.name += format_string(" {q_row %lld q_len %lld kv_row %lld kv_len %lld}", (long long)s.q_row,
                             (long long)s.q_len, (long long)s.kv_row, (long long)s.kv_len);
  oc.name += ")";
  oc.setup = [c, qw, kvw, in](OpTensors& t) {
    AttentionParams ap{t.output(c.q_rows, qw), t.input(c.q_rows, qw, in->q), t.input(c.kv_rows, kvw, in->k),
                       t.input(c.kv_rows, kvw, in->v), c.seqs, c.n_heads, c.n_kv_heads, c.head_dim, c.window};
    return void_call([&be = t.be, ap] { be.attention(ap); });
  };
  oc.bound = [](size_t, float ref) { return kTolAttention * std::max(1.0, std::fabs(static_cast<double>(ref))); };
  oc.unwritten = [in, qw](size_t i) { return !in->covered[i / qw]; };
  oc.check_ref = [in](const std::vector<float>&) -> std::string {
    return std::count(in->covered.begin(), in->covered.end(), true) > 0 ? "" : "no row is covered: nothing tested";
  };
  return oc;
}

}  // namespace smezo
