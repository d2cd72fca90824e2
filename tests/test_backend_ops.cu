// Backend conformance: every case of the op lists (bench/op_cases.h, made into OpCases by the
// harness bench/op_case.h, the same cases the op benchmark times) run on the CUDA backend and
// on the CPU reference, in the spirit of ggml's test-backend-ops: embeddings, norms, RoPE, the
// elementwise ops, the linear, the update, abs_quantile and attention. Plus the linear's probe
// pair, abs_quantile on ~50M weights, and the stories260K model end to end on both backends.
// Every test skips with "no CUDA device: skipped" where no GPU is present.
//
// Method. Inputs are fresh random values (never zeros), from seeds derived from
// SMEZO_TEST_SEED (default 20250101; set it to vary the inputs, it is printed with every
// failure). Activations are allocated with one guard row above and one below (rows + 2, the op
// sees the middle), guard rows are random and must come back bit-identical, outputs are
// poisoned with NaN before the run (in-place operands start from their input instead), and
// inputs and parameters must come back unchanged. The CPU backend stores fp32 only, so for
// fp16/bf16 storage the host values are first rounded to the storage type (round_to,
// bench/host_values.h) and the SAME rounded values are given to both backends.
//
// Tolerance policy (|cuda - cpu| <= bound, element by element; NaN never passes): the op
// lists' in bench/op_case_ops.cpp (and op_case_params.cpp, op_case_attention.cpp); here:
//   linear, probe pair                  kTolGemm, against the CPU linear on each half's
//   (LinearProbePair)                   effective operands, as the linear's cases.
//   linear, probe pair vs two single-   kTolGemm, the same bound, between the two CUDA results:
//   probe calls on its halves           W+ and W- are the single probes' W' bit for bit, but
//   (LinearProbePairMatchesSeparate-    the pair multiplies them in one strided-batched GEMM per
//   Probes)                             row block (blocks half as tall) and the single probes in
//                                       one GEMM each; cuBLAS may pick another kernel or split-K
//                                       for another shape, so the same exact products are summed
//                                       in another fp32 order. Bit-identical on the CPU only.
//   abs_quantile, ~50M weights          exact: selection returns an element of |W|.
//   model logits (stories260K, fp32)    1e-4 x max|logit| (kTolModelLogits); greedy text exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../cuda/cuda_backend.h"
#include "../cuda/cuda_check.h"
#include "bench/op_cases.h"
#include "common/assets.h"
#include "common/half.h"
#include "cpu/cpu_backend.h"
#include "model/model.h"
#include "model/model_loader.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "train/generate.h"
#include "train/spsa.h"

using namespace smezo;
using smezo_test::download;
using smezo_test::download_checked;
using smezo_test::GuardedTensor;
using smezo_test::make_guarded;
using smezo_test::make_param;
using smezo_test::seed_note;

namespace {

constexpr double kTolModelLogits = 1e-4;

// The seeds of (test, case index), as the op lists derive theirs (OpSeeds).
OpSeeds seeds(uint64_t test, uint64_t case_index) { return OpSeeds{smezo_test::base_seed(), test, case_index}; }

// ---- comparison

// |got[i] - ref[i]| <= bound(i) for every i (NaN fails), or the same bits (bit_exact), except
// where unwritten(i): there both must still be NaN. Reports the failure count, the first few
// failures and the worst error/bound ratio.
void expect_near_all(const std::vector<float>& got, const std::vector<float>& ref,
                     const std::function<double(size_t)>& bound, const std::function<bool(size_t)>& unwritten = nullptr,
                     bool bit_exact = false) {
  ASSERT_EQ(got.size(), ref.size());
  int64_t bad = 0;
  double worst = 0.0;
  std::ostringstream first;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool keep = unwritten && unwritten(i);
    const double b = keep || bit_exact ? 0.0 : bound(i);
    const double err = std::fabs(static_cast<double>(got[i]) - static_cast<double>(ref[i]));
    const bool ok = keep        ? std::isnan(got[i]) && std::isnan(ref[i])
                    : bit_exact ? float_bits(got[i]) == float_bits(ref[i])
                                : err <= b;
    if (!ok) {
      if (bad < 5)
        first << "\n  [" << i << "] cuda " << got[i] << " cpu " << ref[i] << " |diff| " << err
              << (keep ? " (an element the op must not write)" : " bound " + std::to_string(b));
      ++bad;
    }
    if (b > 0.0 && err / b > worst) worst = err / b;
  }
  EXPECT_EQ(bad, 0) << bad << " of " << got.size() << " elements out of tolerance (worst "
                    << "error/bound " << worst << ")" << first.str();
}

void expect_exact(const std::vector<float>& got, const std::vector<float>& ref) {
  expect_near_all(got, ref, [](size_t) { return 0.0; });
}

// ---- the op lists

// A case's tensors for the test: activations guarded (a random row above and below that must
// come back bit-identical), outputs NaN-poisoned, parameters plain. results() downloads the
// outputs (in the order made) and checks every input and parameter came back unchanged.
class CheckedTensors : public OpTensors {
 public:
  CheckedTensors(Backend& backend, bool reference) : OpTensors(backend, reference) {}
  Tensor input(int64_t rows, int64_t cols, const std::vector<float>& values) override {
    inputs_.push_back({guarded(rows, cols, DTYPE_F32, values), &values});
    return inputs_.back().first.view;
  }
  Tensor output(int64_t rows, int64_t cols) override {
    results_.push_back(guarded(rows, cols, DTYPE_F32, {}));
    return results_.back().view;
  }
  Tensor inout(int64_t rows, int64_t cols, DType dt, const std::vector<float>& values) override {
    results_.push_back(guarded(rows, cols, storage(dt), values));
    return results_.back().view;
  }
  Param param(int64_t rows, int64_t cols, DType dt, const std::vector<float>& values, const ParamInfo& info) override {
    params_.push_back({make_param(be, rows, cols, storage(dt), values, info), &values});
    return params_.back().first;
  }
  std::vector<float> results() {
    std::vector<float> out;
    for (const GuardedTensor& g : results_) {
      const std::vector<float> v = download_checked(be, g);
      out.insert(out.end(), v.begin(), v.end());
    }
    SCOPED_TRACE("inputs and parameters are never written");
    for (const auto& in : inputs_) expect_exact(download_checked(be, in.first), *in.second);
    for (const auto& p : params_) expect_exact(download(be, p.first.w), *p.second);
    return out;
  }

 private:
  GuardedTensor guarded(int64_t rows, int64_t cols, DType dt, const std::vector<float>& contents) {
    guard_seed_ += 2;  // make_guarded takes seed and seed + 1
    return make_guarded(be, rows, cols, dt, contents, guard_seed_);
  }
  uint32_t guard_seed_ = static_cast<uint32_t>(smezo_test::mixed_seed(99));
  std::vector<std::pair<GuardedTensor, const std::vector<float>*>> inputs_;
  std::vector<GuardedTensor> results_;
  std::vector<std::pair<Param, const std::vector<float>*>> params_;
};

// The case's outputs on be: what the call returns, then its output tensors.
std::vector<float> run_case(const OpCase& c, Backend& be, bool reference) {
  CheckedTensors t(be, reference);
  std::vector<float> out = c.setup(t)();
  const std::vector<float> tensors = t.results();
  out.insert(out.end(), tensors.begin(), tensors.end());
  return out;
}

// Every case of the list on the CPU (the reference) and on the CUDA backend, compared.
void check_op_list(CpuBackend& cpu, CudaBackend& gpu, OpList list) {
  for_each_op_case(list, smezo_test::base_seed(), [&](const OpCase& c) {
    SCOPED_TRACE(c.op + " " + c.name + " " + seed_note());
    const std::vector<float> ref = rounded(c.ref_rounding, run_case(c, cpu, true));
    const std::vector<float> got = run_case(c, gpu, false);
    if (c.check_ref) {
      EXPECT_EQ(c.check_ref(ref), "");
    }
    expect_near_all(got, ref, [&](size_t i) { return c.bound(i, ref[i]); }, c.unwritten, c.bit_exact);
  });
}

// ---- the fixture: a CPU backend and a CUDA backend per test

class BackendOps : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
    gpu_ = std::make_unique<CudaBackend>();
  }
  void check(OpList list) { check_op_list(cpu_, *gpu_, list); }
  CpuBackend cpu_;
  std::unique_ptr<CudaBackend> gpu_;
};

}  // namespace

TEST_F(BackendOps, Embedding) { check(OPS_EMBEDDING); }
TEST_F(BackendOps, AddPositionEmbedding) { check(OPS_POSITION_EMBEDDING); }
TEST_F(BackendOps, Norm) { check(OPS_NORM); }
TEST_F(BackendOps, Rope) { check(OPS_ROPE); }
TEST_F(BackendOps, Swiglu) { check(OPS_SWIGLU); }
TEST_F(BackendOps, ReluAndAdd) {
  check(OPS_RELU);
  check(OPS_ADD);
}
TEST_F(BackendOps, GatherRows) { check(OPS_GATHER_ROWS); }
TEST_F(BackendOps, CopyRows) { check(OPS_COPY_ROWS); }
// The linear cases group by group: small integers (exact), random unperturbed operands,
// perturbed ones (every mask, scale sign, dtype and noise kind).
TEST_F(BackendOps, LinearSmallIntegersExact) { check(OPS_LINEAR_SMALL_INT); }
TEST_F(BackendOps, LinearRandom) { check(OPS_LINEAR_RANDOM); }
TEST_F(BackendOps, LinearPerturbed) { check(OPS_LINEAR_PERTURBED); }
TEST_F(BackendOps, UpdateBitExact) { check(OPS_UPDATE); }
TEST_F(BackendOps, AbsQuantileExact) { check(OPS_ABS_QUANTILE); }
TEST_F(BackendOps, Attention) { check(OPS_ATTENTION); }

// ---------------------------------------------------------------- the linear's probe pair

namespace {

struct PairCase {
  int64_t Mh, N, K;  // Mh token rows per probe: the call takes 2·Mh
  DType dt;
  MaskKind mask;
  bool trainable;
  NoiseKind noise;
};

std::string describe(const PairCase& c) {
  std::ostringstream s;
  s << "linear pair Mh " << c.Mh << " N " << c.N << " K " << c.K << " " << dtype_name(c.dt) << " "
    << mask_name(c.mask) << " " << noise_name(c.noise) << (c.trainable ? "" : " untrainable") << " "
    << seed_note();
  return s.str();
}

// One pair case's host inputs: x (2·Mh, K), W (N, K) and b (N) representable in dt, their
// ParamInfos, and the pair probe (2e-2: large enough that a wrong z or mask shows).
struct PairInputs {
  std::vector<float> x, w, b;
  ParamInfo wi, bi;
  Probe pair;
};

PairInputs pair_inputs(const PairCase& c, uint64_t test, uint64_t ci) {
  PairInputs in;
  in.x = random_floats(2 * c.Mh * c.K, seeds(test, ci).u32(0), -1, 1);
  in.w = rounded(c.dt, random_floats(c.N * c.K, seeds(test, ci).u32(1), -0.5f, 0.5f));
  in.b = rounded(c.dt, random_floats(c.N, seeds(test, ci).u32(2), -1, 1));
  in.wi = op_param_info("model.layers.0.mlp.up_proj.weight", 40 + ci, c.mask, in.w, c.trainable,
                        seeds(test, ci).u64(3), c.noise);
  in.bi = op_param_info("model.layers.0.mlp.up_proj.bias", 41 + ci, MASK_DENSE, in.b, c.trainable, 0, c.noise);
  in.pair = Probe{2e-2f, seeds(test, ci).u64(4), true};
  return in;
}

// The operands the GPU multiplies for half h (0: +, 1: -) of the pair: W' read through the
// half's probe and rounded to the storage type, that half's x rounded to it, b' in fp32.
struct HalfOperands {
  std::vector<float> x, w, b;
};

HalfOperands half_operands(const PairCase& c, PairInputs& in, int h) {
  const Probe probe = half_probe(in.pair, h == 0 ? +1 : -1);
  HalfOperands o;
  o.w.resize(in.w.size());
  o.b.resize(in.b.size());
  Param hw = host_param(in.w, c.N, c.K, in.wi), hb = host_param(in.b, 1, c.N, in.bi);
  cpu_read_param(hw, probe, 0, c.N * c.K, o.w.data());
  cpu_read_param(hb, probe, 0, c.N, o.b.data());
  o.w = rounded(c.dt, o.w);
  o.x = rounded(c.dt, std::vector<float>(in.x.begin() + h * c.Mh * c.K, in.x.begin() + (h + 1) * c.Mh * c.K));
  return o;
}

// kTolGemm (Σ_k |x_k w'_k| + |b'|) for each output of the half, in double.
std::vector<double> gemm_bounds(const PairCase& c, const HalfOperands& o) {
  std::vector<double> bound(static_cast<size_t>(c.Mh * c.N));
  for (int64_t m = 0; m < c.Mh; ++m)
    for (int64_t n = 0; n < c.N; ++n) {
      double acc = std::fabs(o.b[n]);
      const float* xr = o.x.data() + m * c.K;
      const float* wr = o.w.data() + n * c.K;
      for (int64_t k = 0; k < c.K; ++k) acc += std::fabs(static_cast<double>(xr[k]) * wr[k]);
      bound[m * c.N + n] = kTolGemm * acc;
    }
  return bound;
}

// One pair call on the CUDA backend (guarded, poisoned output): out (2·Mh, N).
std::vector<float> gpu_pair_call(CudaBackend& gpu, const PairCase& c, const PairInputs& in, uint64_t test,
                                 uint64_t ci) {
  Param gw = make_param(gpu, c.N, c.K, c.dt, in.w, in.wi);
  Param gb = make_param(gpu, 1, c.N, c.dt, in.b, in.bi);
  GuardedTensor gx = make_guarded(gpu, 2 * c.Mh, c.K, DTYPE_F32, in.x, seeds(test, ci).u32(5));
  GuardedTensor gout = make_guarded(gpu, 2 * c.Mh, c.N, DTYPE_F32, {}, seeds(test, ci).u32(6));
  gpu.linear(gout.view, gx.view, gw, &gb, in.pair);
  std::vector<float> got = download_checked(gpu, gout);
  SCOPED_TRACE("the input and the stored weights are never written");
  expect_exact(download_checked(gpu, gx), in.x);
  expect_exact(download(gpu, gw.w), in.w);
  expect_exact(download(gpu, gb.w), in.b);
  return got;
}

// The pair on the CUDA backend, each half against the CPU linear on that half's effective
// operands, with the linear cases' bound.
void check_linear_pair(CpuBackend& cpu, CudaBackend& gpu, const PairCase& c, uint64_t ci) {
  SCOPED_TRACE(describe(c));
  PairInputs in = pair_inputs(c, 7, ci);
  const std::vector<float> got = gpu_pair_call(gpu, c, in, 7, ci);
  for (int h = 0; h < 2; h++) {
    SCOPED_TRACE(h == 0 ? "+ half" : "- half");
    const HalfOperands o = half_operands(c, in, h);
    ParamInfo w_plain = in.wi, b_plain = in.bi;
    w_plain.trainable = b_plain.trainable = false;
    Param cw = make_param(cpu, c.N, c.K, DTYPE_F32, o.w, w_plain);
    Param cb = make_param(cpu, 1, c.N, DTYPE_F32, o.b, b_plain);
    GuardedTensor cx = make_guarded(cpu, c.Mh, c.K, DTYPE_F32, o.x, seeds(7, ci).u32(7));
    GuardedTensor cpu_out = make_guarded(cpu, c.Mh, c.N, DTYPE_F32, {}, seeds(7, ci).u32(8));
    cpu.linear(cpu_out.view, cx.view, cw, &cb, Probe{});
    const std::vector<float> ref = download_checked(cpu, cpu_out);
    const std::vector<double> bound = gemm_bounds(c, o);
    const std::vector<float> got_h(got.begin() + h * c.Mh * c.N, got.begin() + (h + 1) * c.Mh * c.N);
    expect_near_all(got_h, ref, [&](size_t i) { return bound[i]; });
  }
}

}  // namespace

// The probe pair: one call on 2·Mh rows, the first half at +scale and the second at -scale
// (W+ and W- from one noise generation, one strided-batched GEMM per row block of W'); each
// half against the CPU linear on that half's effective operands, with the linear cases' bound.
TEST_F(BackendOps, LinearProbePair) {
  const int64_t shapes[][3] = {{1, 67, 45}, {13, 129, 257}, {128, 1024, 512}};
  uint64_t ci = 700;
  for (const auto& s : shapes)
    for (DType dt : kAllDtypes)
      for (MaskKind mask : {MASK_DENSE, MASK_MAGNITUDE, MASK_RANDOM})
        for (bool trainable : {true, false}) {
          check_linear_pair(cpu_, *gpu_, {s[0], s[1], s[2], dt, mask, trainable, noise_of_case(ci)}, ci);
          ci++;
        }
  // More than one row block of W' (kCudaWeightChunkBytes, 64 MiB, holds W+ and W- together,
  // linear_scratch_plan): bf16 rows of 4096 take blocks of 4096 rows, so N 4101 is 2 blocks
  // (4096 + 5); f32 rows take 2048, so N 4101 is 3 blocks (2048 + 2048 + 5). The last block
  // is short and starts mid-tensor: its noise groups, mask words and output columns continue
  // from the tensor's own indices. Production block size (no test knob): 16.8 M weights each.
  check_linear_pair(cpu_, *gpu_, {2, 4101, 4096, DTYPE_BF16, MASK_MAGNITUDE, true, NOISE_GAUSSIAN}, ci++);
  check_linear_pair(cpu_, *gpu_, {3, 4101, 4096, DTYPE_F32, MASK_RANDOM, true, NOISE_RADEMACHER}, ci++);
  // The sign kind's W' kernel (cuda/sign_noise.cu) on a block that starts inside a Philox call: f32
  // rows of 4100 take pair blocks of 2040 rows, so the second block starts at element 8,364,000, which
  // is 96 elements into a call of 128.
  check_linear_pair(cpu_, *gpu_, {2, 2045, 4100, DTYPE_F32, MASK_MAGNITUDE, true, NOISE_SIGN}, ci++);
}

// A pair call against two single-probe calls (+ half, - half) on the CUDA backend. The CPU
// gives the same bits both ways (tests/test_probe_pair.cpp); on CUDA the W' values are the
// same (one perturbed_value per element either way) but the GEMMs are not: the pair runs one
// strided-batched GEMM per row block (batch 2, blocks half as tall, since W+ and W- share the
// 64 MiB), the single probes one GEMM each, and cuBLAS may choose another kernel or split-K
// for another shape, i.e. another fp32 summation order of the same exact products. So the
// two agree within the GEMM tolerance (kTolGemm of Σ|x·w'| + |b'|, the table at the top),
// not bit for bit; the test prints how many outputs differ at all. (Emulated, both run
// through OpenBLAS sgemm and may well agree exactly: only a GPU run shows cuBLAS's choices.)
TEST_F(BackendOps, LinearProbePairMatchesSeparateProbes) {
  const PairCase cases[] = {
      {13, 129, 257, DTYPE_BF16, MASK_MAGNITUDE, true, NOISE_GAUSSIAN},
      {128, 1024, 512, DTYPE_F16, MASK_RANDOM, true, NOISE_RADEMACHER},
      {5, 1000, 288, DTYPE_F32, MASK_DENSE, true, NOISE_GAUSSIAN_V1},
      {33, 1000, 288, DTYPE_BF16, MASK_RANDOM, true, NOISE_SIGN},
      {64, 576, 1536, DTYPE_BF16, MASK_DENSE, true, NOISE_GAUSSIAN},  // SmolLM2's down_proj
      // the pair takes 2 blocks of 4096 rows, a single probe all 4101 rows in one
      {2, 4101, 4096, DTYPE_BF16, MASK_MAGNITUDE, true, NOISE_GAUSSIAN},
      {7, 300, 77, DTYPE_BF16, MASK_DENSE, false, NOISE_GAUSSIAN},  // untrainable: one GEMM
  };
  uint64_t ci = 800;
  for (const PairCase& c : cases) {
    SCOPED_TRACE(describe(c));
    PairInputs in = pair_inputs(c, 13, ci);
    const std::vector<float> pair = gpu_pair_call(*gpu_, c, in, 13, ci);
    Param gw = make_param(*gpu_, c.N, c.K, c.dt, in.w, in.wi);
    Param gb = make_param(*gpu_, 1, c.N, c.dt, in.b, in.bi);
    int64_t differ = 0;
    for (int h = 0; h < 2; h++) {
      SCOPED_TRACE(h == 0 ? "+ half" : "- half");
      const std::vector<float> xh(in.x.begin() + h * c.Mh * c.K, in.x.begin() + (h + 1) * c.Mh * c.K);
      GuardedTensor gx = make_guarded(*gpu_, c.Mh, c.K, DTYPE_F32, xh, seeds(13, ci).u32(7 + h));
      GuardedTensor gout = make_guarded(*gpu_, c.Mh, c.N, DTYPE_F32, {}, seeds(13, ci).u32(9 + h));
      gpu_->linear(gout.view, gx.view, gw, &gb, half_probe(in.pair, h == 0 ? +1 : -1));
      const std::vector<float> single = download_checked(*gpu_, gout);
      const std::vector<float> pair_h(pair.begin() + h * c.Mh * c.N, pair.begin() + (h + 1) * c.Mh * c.N);
      for (size_t i = 0; i < single.size(); i++) differ += float_bits(single[i]) != float_bits(pair_h[i]);
      const std::vector<double> bound = gemm_bounds(c, half_operands(c, in, h));
      expect_near_all(pair_h, single, [&](size_t i) { return bound[i]; });
    }
    std::printf("pair vs separate probes, %s: %lld of %lld outputs differ in any bit%s\n", describe(c).c_str(),
                static_cast<long long>(differ), static_cast<long long>(2 * c.Mh * c.N),
                cuda_running_emulated() ? " (emulated)" : "");
    ci++;
  }
}

TEST_F(BackendOps, AbsQuantileLarge) {
  // ~50M elements (7001 x 7142 = 50,001,142: not a multiple of any tile), fp32 and bf16 (bf16
  // has only 2^15 distinct |w|, so huge runs of ties), against std::nth_element on the host.
  // Emulated (cuda_running_emulated()), 1001 x 1427 = 1,428,427: the size is for throughput;
  // still every one of the 1,056 blocks grid-strides, and no dimension is a tile multiple.
  const bool small = cuda_running_emulated();
  const int64_t rows = small ? 1001 : 7001, cols = small ? 1427 : 7142, n = rows * cols;
  for (DType dt : {DTYPE_F32, DTYPE_BF16}) {
    SCOPED_TRACE(testing::Message() << "abs_quantile large " << dtype_name(dt) << " " << seed_note());
    const std::vector<float> w = rounded(dt, random_floats(n, seeds(12, dt).u32(0), -1, 1));
    Param p =
        make_param(*gpu_, rows, cols, dt, w, op_param_info("big", 9, MASK_DENSE, {0.0f}, true, 0));
    std::vector<float> a(w.size());
    for (double q : {0.8, 0.3, 1.0}) {
      for (size_t i = 0; i < w.size(); ++i) a[i] = std::fabs(w[i]);
      const int64_t k = static_cast<int64_t>(std::floor(q * static_cast<double>(n - 1)));
      std::nth_element(a.begin(), a.begin() + k, a.end());
      const float got = gpu_->abs_quantile(p, q);
      EXPECT_EQ(float_bits(got), float_bits(a[k]))
          << "q " << q << ": cuda " << got << " host " << a[k];
    }
  }
}

// ---------------------------------------------------------------- the model end to end

namespace {

std::vector<float> model_logits(Model& m, const ForwardBatch& batch, const Probe& probe) {
  std::vector<float> out;
  m.forward(batch, probe, &out);
  return out;
}

void expect_logits_close(const std::vector<float>& got, const std::vector<float>& ref) {
  float max_abs = 0.0f;
  for (float v : ref) max_abs = std::max(max_abs, std::fabs(v));
  const double bound = kTolModelLogits * std::max(1.0f, max_abs);
  expect_near_all(got, ref, [&](size_t) { return bound; });
}

}  // namespace

TEST_F(BackendOps, Stories260KLogitsMatchCpu) {
  const WeightSource source = load_weights(asset_path("models/stories260K.bin"));
  Model mc(source, cpu_, DTYPE_F32, 64, 64);
  Model mg(source, *gpu_, DTYPE_F32, 64, 64);
  ForwardBatch batch;  // two packed sequences
  batch.tokens = {1, 34, 300, 12, 511, 87, 200, 5, 9, 450, 33, 101, 1, 403, 7, 260, 66};
  batch.seq_lens = {12, 5};
  for (int64_t i = 0; i < 17; ++i) batch.logit_rows.push_back(i);
  {
    SCOPED_TRACE("unperturbed");
    expect_logits_close(model_logits(mg, batch, Probe{}), model_logits(mc, batch, Probe{}));
  }
  {
    SCOPED_TRACE("MeZO probe, sigma = -1");
    const Probe probe{-1e-3f, 0x5eed5eed12345678ull};
    expect_logits_close(model_logits(mg, batch, probe), model_logits(mc, batch, probe));
  }
  {
    SCOPED_TRACE("S-MeZO probe (magnitude masks at the 0.8 quantile), sigma = +1");
    for (size_t i = 0; i < mc.params().size(); ++i) {
      Param& pc = *mc.params()[i];
      Param& pg = *mg.params()[i];
      ASSERT_EQ(pc.info.tensor_id, pg.info.tensor_id);
      if (!pc.info.is_linear) continue;
      pc.info.mask = pg.info.mask = MASK_MAGNITUDE;
      pc.info.threshold = cpu_.abs_quantile(pc, 0.8);
      pg.info.threshold = gpu_->abs_quantile(pg, 0.8);
      EXPECT_EQ(pg.info.threshold, pc.info.threshold) << pc.info.name;
    }
    const Probe probe{1e-3f, 0xfeedface00c0ffeeull};
    expect_logits_close(model_logits(mg, batch, probe), model_logits(mc, batch, probe));
  }
}

// llama2.c's run.c with -t 0 -n 200 prints exactly this text; so must the CUDA backend (fp32).
TEST_F(BackendOps, Stories260KGreedyGolden) {
  const WeightSource source = load_weights(asset_path("models/stories260K.bin"));
  std::unique_ptr<Tokenizer> tok =
      load_sentencepiece_tokenizer(asset_path("tokenizers/tinystories-512.model"));
  Model m(source, *gpu_, DTYPE_F32, 200, 1);
  GenerateOptions opts;
  opts.steps = 200;
  opts.temperature = 0.0f;
  std::string text;
  generate(m, *tok, opts, [&](const std::string& piece) { text += piece; });
  text += "\n";  // as `smezo generate` ends its output
  EXPECT_EQ(text, smezo_test::read_file(asset_path("models/stories260K.greedy200.txt")));
}
