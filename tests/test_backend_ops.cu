// Backend conformance: every op of src/backend/backend.h (attention aside: see
// tests/test_attention.cu) run on the CUDA backend and on the CPU reference, from tables of
// cases (op, shapes, storage dtype, probe), in the spirit of ggml's test-backend-ops: the
// cases come from bench/op_cases.h, the list the op benchmark (bench/op_bench.cpp) times (the
// linear's probe-pair cases are still here). Plus the stories260K model end to end on both backends. Every test skips with
// "no CUDA device: skipped" where no GPU is present.
//
// Method. Inputs are fresh random values (never zeros), from seeds derived from
// SMEZO_TEST_SEED (default 20250101; set it to vary the inputs, it is printed with every
// failure). Outputs are allocated with one guard row above and one below (rows + 2, the op
// sees the middle), guard rows are random and must come back bit-identical, and the middle is
// poisoned with NaN before the run (in-place ops start from their input instead). The CPU
// backend stores fp32 only, so for fp16/bf16 storage the host values are first rounded to the
// storage type (float_to_f16 / float_to_bf16, src/common/half.h) and the SAME rounded values
// are given to both backends.
//
// Tolerance policy (|cuda - cpu| <= bound, element by element; NaN never passes):
//   embedding, add_position_embedding,  exact (0): the same spec arithmetic (perturbed_value is
//   relu, add, gather_rows, copy_rows   one fma) or plain copies/adds on identical inputs.
//   update (fp32 storage)               bit-exact: both run the spec's correctly rounded fp32
//                                       ops (noise_spec.h section 5) on identical w, for every
//                                       noise kind (ParamInfo::noise; the ops cycle through
//                                       the kinds case by case, update and the big linear
//                                       case run each).
//   update (fp16/bf16 storage)          bit-exact vs round_nearest_even(CPU fp32 update of the
//                                       rounded w): the GPU reads float(w16) (exact), does the
//                                       same fp32 ops, and rounds once to the storage type, so
//                                       the two differ in nothing (no double rounding: the
//                                       CPU's fp32 result IS the GPU's pre-rounding value).
//   abs_quantile                        exact: selection returns an element of |W|.
//   swiglu                              1e-6 relative (kTolElementwise): expf vs std::exp and
//                                       the division, a few ulps.
//   norm (RMS, Layer)                   1e-5 x (|w|·(|x̂|+1) + |b|) (kTolNorm): the row
//                                       reductions are summed in a different order.
//   rope                                (|v0|+|v1|) x (1e-6 + 8·pos·2^-23) (kRopeAngleUlps): the
//                                       angle pos·θ^(-2j/d) carries a few ulps of pow/multiply
//                                       error on each side, which grows with the position.
//   linear, small-integer inputs        exact (CUTLASS basic_gemm's trick): every product and
//                                       partial sum is an integer below 2^24, for fp32, fp16
//                                       and bf16 alike.
//   linear, random inputs               1e-5 x (Σ_k |x_k·w'_k| + |b'|) (kTolGemm). The reference
//                                       is the CPU linear on the SAME operands the GPU
//                                       multiplies: W' = cpu_read_param(W) rounded to the
//                                       storage type, x rounded to it, b' = cpu_read_param(b)
//                                       in fp32. Products are exact in fp32 (11x11 or 8x8
//                                       significand bits), so only the fp32 summation order
//                                       differs (~sqrt(K)·2^-24 typical, tensor cores included).
//   linear, probe pair vs two single-   kTolGemm, the same bound, between the two CUDA results:
//   probe calls on its halves           W+ and W- are the single probes' W' bit for bit, but
//   (LinearProbePairMatchesSeparate-    the pair multiplies them in one strided-batched GEMM per
//   Probes)                             row block (blocks half as tall) and the single probes in
//                                       one GEMM each; cuBLAS may pick another kernel or split-K
//                                       for another shape, so the same exact products are summed
//                                       in another fp32 order. Bit-identical on the CPU only.
//   model logits (stories260K, fp32)    1e-4 x max|logit| (kTolModelLogits); greedy text exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <memory>
#include <random>
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

using namespace smezo;
using smezo_test::download;
using smezo_test::download_checked;
using smezo_test::GuardedTensor;
using smezo_test::host_param;
using smezo_test::make_guarded;
using smezo_test::make_param;
using smezo_test::mixed_seed;
using smezo_test::rounded;
using smezo_test::seed_note;

namespace {

// ---- tolerances (the table above)
constexpr double kTolElementwise = 1e-6;
constexpr double kTolNorm = 1e-5;
constexpr double kTolGemm = 1e-5;
constexpr double kRopeAngleUlps = 8.0;
constexpr double kTolModelLogits = 1e-4;

// ---- seeds

// A well-mixed seed for (test, case, part) of SMEZO_TEST_SEED.
uint64_t mix_seed(uint64_t test, uint64_t case_index, uint64_t part) {
  return mixed_seed(1 + test * 1000003ull + case_index * 101ull + part);
}
uint32_t seed32(uint64_t test, uint64_t case_index, uint64_t part) {
  return static_cast<uint32_t>(mix_seed(test, case_index, part));
}

// ---- host values

std::vector<float> uniform(int64_t n, uint32_t seed, float lo, float hi) {
  return smezo_test::random_floats(n, seed, lo, hi);
}

// Integers in [lo, hi] as floats (exact in every storage type for |v| <= 256).
std::vector<float> small_ints(int64_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(dist(rng));
  return v;
}

const char* dt_str(DType dt) { return dtype_name(dt); }

// ---- parameters

double median_abs(const std::vector<float>& v) {
  std::vector<float> a(v.size());
  for (size_t i = 0; i < v.size(); ++i) a[i] = std::fabs(v[i]);
  std::nth_element(a.begin(), a.begin() + a.size() / 2, a.end());
  return a[a.size() / 2];
}

// Every noise kind of the spec (z of perturbed reads and updates); cases cycle through them.
constexpr NoiseKind kNoiseKinds[] = {NOISE_GAUSSIAN, NOISE_GAUSSIAN_V1, NOISE_RADEMACHER};
NoiseKind noise_of_case(uint64_t ci) { return kNoiseKinds[ci % 3]; }
const char* noise_str(NoiseKind k) {
  return k == NOISE_GAUSSIAN ? "gaussian" : k == NOISE_GAUSSIAN_V1 ? "gaussian-v1" : "rademacher";
}

// ParamInfo for a mask kind: MAGNITUDE keeps |w| <= median |w|, RANDOM keeps 30 %.
ParamInfo make_info(const std::string& name, uint32_t tensor_id, MaskKind mask,
                    const std::vector<float>& values, bool trainable, uint64_t mask_seed,
                    NoiseKind noise = NOISE_GAUSSIAN) {
  ParamInfo info;
  info.name = name;
  info.tensor_id = tensor_id;
  info.trainable = trainable;
  info.noise = noise;
  info.mask = mask;
  if (mask == MASK_MAGNITUDE) info.threshold = static_cast<float>(median_abs(values));
  if (mask == MASK_RANDOM) {
    info.keep_prob = 0.3f;
    info.mask_seed = mask_seed;
  }
  return info;
}

const char* mask_str(MaskKind m) {
  return m == MASK_DENSE ? "dense" : m == MASK_MAGNITUDE ? "magnitude" : "random";
}

// ---- comparison

// |got[i] - ref[i]| <= bound(i) for every i (NaN fails). Reports the failure count, the first
// few failures and the worst error/bound ratio.
template <typename Bound>
void expect_near_all(const std::vector<float>& got, const std::vector<float>& ref, Bound bound) {
  ASSERT_EQ(got.size(), ref.size());
  int64_t bad = 0;
  double worst = 0.0;
  std::ostringstream first;
  for (size_t i = 0; i < got.size(); ++i) {
    const double b = bound(i);
    const double err = std::fabs(static_cast<double>(got[i]) - static_cast<double>(ref[i]));
    if (!(err <= b)) {
      if (bad < 5)
        first << "\n  [" << i << "] cuda " << got[i] << " cpu " << ref[i] << " |diff| " << err
              << " bound " << b;
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

// ---- the fixture: a CPU backend and a CUDA backend per test

class BackendOps : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
    gpu_ = std::make_unique<CudaBackend>();
  }
  CpuBackend cpu_;
  std::unique_ptr<CudaBackend> gpu_;
};

constexpr DType kAllDtypes[] = {DTYPE_F32, DTYPE_F16, DTYPE_BF16};

}  // namespace

// ---------------------------------------------------------------- embedding

TEST_F(BackendOps, Embedding) {
  const std::vector<EmbeddingCase> cases = embedding_cases();
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const EmbeddingCase& c = cases[ci];
    SCOPED_TRACE(testing::Message() << "embedding case " << ci << ": vocab " << c.vocab << " dim "
                                    << c.dim << " M " << c.M << " " << dt_str(c.dt) << " scale "
                                    << c.scale << " " << mask_str(c.mask) << " "
                                    << noise_str(noise_of_case(ci)) << " " << seed_note());
    const std::vector<float> table =
        rounded(c.dt, uniform(c.vocab * c.dim, seed32(1, ci, 0), -1, 1));
    const ParamInfo info = make_info("model.embed_tokens.weight", 3 + ci, c.mask, table,
                                     c.trainable, mix_seed(1, ci, 1), noise_of_case(ci));
    const std::vector<int32_t> tokens =
        random_indices<int32_t>(c.M, seed32(1, ci, 2), 0, c.vocab - 1);
    const Probe probe{c.scale, mix_seed(1, ci, 3)};
    auto run = [&](Backend& be, DType dt) {
      Param p = make_param(be, c.vocab, c.dim, dt, table, info);
      GuardedTensor out = make_guarded(be, c.M, c.dim, DTYPE_F32, {}, seed32(1, ci, 4));
      be.embedding(out.view, p, tokens, probe);
      return download_checked(be, out);
    };
    expect_exact(run(*gpu_, c.dt), run(cpu_, DTYPE_F32));
  }
}

TEST_F(BackendOps, AddPositionEmbedding) {
  const std::vector<PositionEmbeddingCase> cases = position_embedding_cases();
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const PositionEmbeddingCase& c = cases[ci];
    SCOPED_TRACE(testing::Message()
                 << "position case " << ci << ": " << dt_str(c.dt) << " dim " << c.dim << " M "
                 << c.M << " scale " << c.scale << " " << noise_str(noise_of_case(ci)) << " "
                 << seed_note());
    const std::vector<float> table =
        rounded(c.dt, uniform(c.n_pos * c.dim, seed32(2, ci, 0), -1, 1));
    const ParamInfo info = make_info("model.decoder.embed_positions.weight", 1, MASK_DENSE, table,
                                     true, 0, noise_of_case(ci));
    const std::vector<int32_t> positions =
        random_indices<int32_t>(c.M, seed32(2, ci, 1), 0, c.n_pos - 1 - c.offset);
    const std::vector<float> x0 = uniform(c.M * c.dim, seed32(2, ci, 2), -1, 1);
    const Probe probe{c.scale, mix_seed(2, ci, 3)};
    auto run = [&](Backend& be, DType dt) {
      Param p = make_param(be, c.n_pos, c.dim, dt, table, info);
      GuardedTensor out = make_guarded(be, c.M, c.dim, DTYPE_F32, x0, seed32(2, ci, 4));
      be.add_position_embedding(out.view, p, positions, c.offset, probe);
      return download_checked(be, out);
    };
    expect_exact(run(*gpu_, c.dt), run(cpu_, DTYPE_F32));
  }
}

// ---------------------------------------------------------------- norm

TEST_F(BackendOps, Norm) {
  const std::vector<NormCase> cases = norm_cases();
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const NormCase& c = cases[ci];
    SCOPED_TRACE(testing::Message()
                 << "norm case " << ci << ": " << (c.kind == NORM_RMS ? "rms" : "layer") << " M "
                 << c.M << " dim " << c.dim << " bias " << c.bias << " " << dt_str(c.dt)
                 << " scale " << c.scale << " in_place " << c.in_place << " "
                 << noise_str(noise_of_case(ci)) << " " << seed_note());
    std::vector<float> x = uniform(c.M * c.dim, seed32(3, ci, 0), -2, 2);
    if (c.kind == NORM_LAYER)
      for (float& v : x) v += 0.75f;  // a nonzero mean
    std::vector<float> w = rounded(c.dt, uniform(c.dim, seed32(3, ci, 1), 0.5f, 1.5f));
    std::vector<float> b = rounded(c.dt, uniform(c.dim, seed32(3, ci, 2), -0.5f, 0.5f));
    const ParamInfo wi = make_info("norm.weight", 11, MASK_DENSE, w, true, 0, noise_of_case(ci));
    const ParamInfo bi = make_info("norm.bias", 12, MASK_DENSE, b, true, 0, noise_of_case(ci));
    const Probe probe{c.scale, mix_seed(3, ci, 3)};
    const float eps = c.kind == NORM_RMS ? 1e-5f : 1e-6f;
    auto run = [&](Backend& be, DType dt) {
      Param pw = make_param(be, 1, c.dim, dt, w, wi);
      Param pb = make_param(be, 1, c.dim, dt, b, bi);
      GuardedTensor in = make_guarded(be, c.M, c.dim, DTYPE_F32, x, seed32(3, ci, 4));
      GuardedTensor out = c.in_place ? in : make_guarded(be, c.M, c.dim, DTYPE_F32, {}, seed32(3, ci, 5));
      be.norm(out.view, in.view, pw, c.bias ? &pb : nullptr, c.kind, eps, probe);
      if (!c.in_place) {
        SCOPED_TRACE("input of norm");
        expect_exact(download_checked(be, in), x);
      }
      return download_checked(be, out);
    };
    const std::vector<float> ref = run(cpu_, DTYPE_F32), got = run(*gpu_, c.dt);
    // bound_d = kTolNorm (|w_d| (|x̂_d| + 1) + |b_d|), x̂ the normalised input in double.
    std::vector<float> w_eff(c.dim), b_eff(c.dim, 0.0f);
    Param hw = host_param(w, 1, c.dim, wi), hb = host_param(b, 1, c.dim, bi);
    cpu_read_param(hw, probe, 0, c.dim, w_eff.data());
    if (c.bias) cpu_read_param(hb, probe, 0, c.dim, b_eff.data());
    std::vector<double> bound(ref.size());
    for (int64_t m = 0; m < c.M; ++m) {
      const float* xm = x.data() + m * c.dim;
      double mean = 0.0, var = 0.0;
      if (c.kind == NORM_LAYER) {
        for (int64_t d = 0; d < c.dim; ++d) mean += xm[d];
        mean /= c.dim;
      }
      for (int64_t d = 0; d < c.dim; ++d) var += (xm[d] - mean) * (xm[d] - mean);
      const double inv = 1.0 / std::sqrt(var / c.dim + eps);
      for (int64_t d = 0; d < c.dim; ++d)
        bound[m * c.dim + d] =
            kTolNorm *
            (std::fabs(w_eff[d]) * (std::fabs((xm[d] - mean) * inv) + 1.0) + std::fabs(b_eff[d]));
    }
    expect_near_all(got, ref, [&](size_t i) { return bound[i]; });
  }
}

// ---------------------------------------------------------------- linear

namespace {

std::string describe(const LinearCase& c) {
  std::ostringstream s;
  s << "linear M " << c.M << " N " << c.N << " K " << c.K << " " << dt_str(c.dt)
    << (c.bias ? " +bias" : "") << " scale " << c.scale << " " << mask_str(c.mask)
    << (c.trainable ? "" : " untrainable") << (c.group == LINEAR_SMALL_INT ? " small-int" : "") << " "
    << noise_str(c.noise) << " " << seed_note();
  return s.str();
}

// Runs one case on the CUDA backend and checks it against the CPU linear on the same operands.
void check_linear(CpuBackend& cpu, CudaBackend& gpu, const LinearCase& c, uint64_t ci) {
  SCOPED_TRACE(describe(c));
  const int64_t M = c.M, N = c.N, K = c.K;
  std::vector<float> x, w, b;
  const bool small_int = c.group == LINEAR_SMALL_INT;
  if (small_int) {
    x = small_ints(M * K, seed32(4, ci, 0), -4, 4);
    w = small_ints(N * K, seed32(4, ci, 1), -4, 4);
    b = small_ints(N, seed32(4, ci, 2), -8, 8);
  } else {
    x = uniform(M * K, seed32(4, ci, 0), -1, 1);
    w = rounded(c.dt, uniform(N * K, seed32(4, ci, 1), -0.5f, 0.5f));
    b = rounded(c.dt, uniform(N, seed32(4, ci, 2), -1, 1));
  }
  const ParamInfo wi = make_info("model.layers.0.mlp.up_proj.weight", 40 + ci, c.mask, w,
                                 c.trainable, mix_seed(4, ci, 3), c.noise);
  const ParamInfo bi = make_info("model.layers.0.mlp.up_proj.bias", 41 + ci, MASK_DENSE, b,
                                 c.trainable, 0, c.noise);
  const Probe probe{c.scale, mix_seed(4, ci, 4)};

  // The reference operands: W' (rounded to the storage type), x rounded to it, b' in fp32.
  std::vector<float> w_eff(w.size()), b_eff(b.size());
  Param hw = host_param(w, N, K, wi), hb = host_param(b, 1, N, bi);
  cpu_read_param(hw, probe, 0, N * K, w_eff.data());
  cpu_read_param(hb, probe, 0, N, b_eff.data());
  w_eff = rounded(c.dt, w_eff);
  const std::vector<float> x_eff = rounded(c.dt, x);
  if (c.trainable && c.scale != 0.0f) {
    int64_t changed = 0;
    for (size_t i = 0; i < w.size(); ++i) changed += w_eff[i] != w[i];
    EXPECT_GT(changed, 0) << "the probe perturbed nothing: the case tests nothing";
  }

  // The CPU runs unperturbed on the effective operands (W', b' already applied).
  ParamInfo w_plain = wi, b_plain = bi;
  w_plain.trainable = b_plain.trainable = false;
  Param cw = make_param(cpu, N, K, DTYPE_F32, w_eff, w_plain);
  Param cb = make_param(cpu, 1, N, DTYPE_F32, b_eff, b_plain);
  GuardedTensor cx = make_guarded(cpu, M, K, DTYPE_F32, x_eff, seed32(4, ci, 5));
  GuardedTensor cpu_out = make_guarded(cpu, M, N, DTYPE_F32, {}, seed32(4, ci, 6));
  cpu.linear(cpu_out.view, cx.view, cw, c.bias ? &cb : nullptr, Probe{});
  const std::vector<float> ref = download_checked(cpu, cpu_out);

  Param gw = make_param(gpu, N, K, c.dt, w, wi);
  Param gb = make_param(gpu, 1, N, c.dt, b, bi);
  GuardedTensor gx = make_guarded(gpu, M, K, DTYPE_F32, x, seed32(4, ci, 5));
  GuardedTensor gout = make_guarded(gpu, M, N, DTYPE_F32, {}, seed32(4, ci, 6));
  gpu.linear(gout.view, gx.view, gw, c.bias ? &gb : nullptr, probe);
  const std::vector<float> got = download_checked(gpu, gout);
  {
    SCOPED_TRACE("the input and the stored weights are never written");
    expect_exact(download_checked(gpu, gx), x);
    expect_exact(download(gpu, gw.w), w);
    expect_exact(download(gpu, gb.w), b);
  }

  if (small_int) {
    expect_exact(got, ref);
    return;
  }
  // bound = kTolGemm (Σ_k |x_k w'_k| + |b'|), in double.
  std::vector<double> bound(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = c.bias ? std::fabs(b_eff[n]) : 0.0;
      for (int64_t k = 0; k < K; ++k)
        s += std::fabs(static_cast<double>(x_eff[m * K + k]) * w_eff[n * K + k]);
      bound[m * N + n] = kTolGemm * s;
    }
  expect_near_all(got, ref, [&](size_t i) { return bound[i]; });
}

}  // namespace

// The linear cases of bench/op_cases.h, group by group: small integers (exact), random
// unperturbed operands, perturbed ones (every mask, scale sign, dtype and noise kind).
TEST_F(BackendOps, LinearSmallIntegersExact) {
  for (const LinearCase& c : linear_cases())
    if (c.group == LINEAR_SMALL_INT) check_linear(cpu_, *gpu_, c, c.seed_index);
}

TEST_F(BackendOps, LinearRandom) {
  for (const LinearCase& c : linear_cases())
    if (c.group == LINEAR_RANDOM) check_linear(cpu_, *gpu_, c, c.seed_index);
}

TEST_F(BackendOps, LinearPerturbed) {
  for (const LinearCase& c : linear_cases())
    if (c.group == LINEAR_PERTURBED) check_linear(cpu_, *gpu_, c, c.seed_index);
}

// ---- the probe pair (Probe::pair)

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
  s << "linear pair Mh " << c.Mh << " N " << c.N << " K " << c.K << " " << dt_str(c.dt) << " "
    << mask_str(c.mask) << " " << noise_str(c.noise) << (c.trainable ? "" : " untrainable") << " "
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
  in.x = uniform(2 * c.Mh * c.K, seed32(test, ci, 0), -1, 1);
  in.w = rounded(c.dt, uniform(c.N * c.K, seed32(test, ci, 1), -0.5f, 0.5f));
  in.b = rounded(c.dt, uniform(c.N, seed32(test, ci, 2), -1, 1));
  in.wi = make_info("model.layers.0.mlp.up_proj.weight", 40 + ci, c.mask, in.w, c.trainable,
                    mix_seed(test, ci, 3), c.noise);
  in.bi = make_info("model.layers.0.mlp.up_proj.bias", 41 + ci, MASK_DENSE, in.b, c.trainable, 0,
                    c.noise);
  in.pair = Probe{2e-2f, mix_seed(test, ci, 4), true};
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
  GuardedTensor gx = make_guarded(gpu, 2 * c.Mh, c.K, DTYPE_F32, in.x, seed32(test, ci, 5));
  GuardedTensor gout = make_guarded(gpu, 2 * c.Mh, c.N, DTYPE_F32, {}, seed32(test, ci, 6));
  gpu.linear(gout.view, gx.view, gw, &gb, in.pair);
  std::vector<float> got = download_checked(gpu, gout);
  SCOPED_TRACE("the input and the stored weights are never written");
  expect_exact(download_checked(gpu, gx), in.x);
  expect_exact(download(gpu, gw.w), in.w);
  expect_exact(download(gpu, gb.w), in.b);
  return got;
}

// The pair on the CUDA backend, each half against the CPU linear on that half's effective
// operands, with check_linear's bound.
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
    GuardedTensor cx = make_guarded(cpu, c.Mh, c.K, DTYPE_F32, o.x, seed32(7, ci, 7));
    GuardedTensor cpu_out = make_guarded(cpu, c.Mh, c.N, DTYPE_F32, {}, seed32(7, ci, 8));
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
// half against the CPU linear on that half's effective operands, with check_linear's bound.
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
      GuardedTensor gx = make_guarded(*gpu_, c.Mh, c.K, DTYPE_F32, xh, seed32(13, ci, 7 + h));
      GuardedTensor gout = make_guarded(*gpu_, c.Mh, c.N, DTYPE_F32, {}, seed32(13, ci, 9 + h));
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

// ---------------------------------------------------------------- rope

TEST_F(BackendOps, Rope) {
  uint64_t ci = 0;
  for (const RopeCase& c : rope_cases())
    for (RopeStyle style : kRopeStyles) {
      SCOPED_TRACE(testing::Message()
                   << "rope M " << c.M << " heads " << c.n_heads << " head_dim " << c.head_dim
                   << " theta " << c.theta << " max_pos " << c.max_pos << " style "
                   << (style == ROPE_ROTATE_HALF ? "half" : "interleaved") << " " << seed_note());
      const int64_t cols = c.n_heads * c.head_dim;
      const std::vector<float> x = uniform(c.M * cols, seed32(5, ci, 0), -1, 1);
      const std::vector<int32_t> pos = random_indices<int32_t>(c.M, seed32(5, ci, 1), 0, c.max_pos);
      auto run = [&](Backend& be) {
        GuardedTensor t = make_guarded(be, c.M, cols, DTYPE_F32, x, seed32(5, ci, 2));
        be.rope(t.view, pos, c.n_heads, c.head_dim, c.theta, style);
        return download_checked(be, t);
      };
      const std::vector<float> ref = run(cpu_), got = run(*gpu_);
      // Each rotated pair (a, b) shares the bound (|v_a| + |v_b|) (1e-6 + 8 pos 2^-23).
      std::vector<double> bound(ref.size());
      const int64_t half = c.head_dim / 2;
      for (int64_t m = 0; m < c.M; ++m)
        for (int64_t h = 0; h < c.n_heads; ++h)
          for (int64_t j = 0; j < half; ++j) {
            const int64_t base = m * cols + h * c.head_dim;
            const int64_t a = base + (style == ROPE_INTERLEAVED ? 2 * j : j);
            const int64_t b = base + (style == ROPE_INTERLEAVED ? 2 * j + 1 : j + half);
            const double bnd = (std::fabs(x[a]) + std::fabs(x[b])) *
                               (kTolElementwise + kRopeAngleUlps * pos[m] * std::ldexp(1.0, -23));
            bound[a] = bound[b] = bnd;
          }
      expect_near_all(got, ref, [&](size_t i) { return bound[i]; });
      ++ci;
    }
}

// ---------------------------------------------------------------- elementwise

TEST_F(BackendOps, Swiglu) {
  uint64_t ci = 0;
  for (const ActivationCase& s : swiglu_cases())
    for (bool in_place : {false, true}) {  // the model calls swiglu(h_up, h_gate, h_up)
      SCOPED_TRACE(testing::Message() << "swiglu M " << s.rows << " H " << s.cols << " in_place "
                                      << in_place << " " << seed_note());
      const std::vector<float> gate = uniform(s.rows * s.cols, seed32(6, ci, 0), -8, 8);
      const std::vector<float> up = uniform(s.rows * s.cols, seed32(6, ci, 1), -2, 2);
      auto run = [&](Backend& be) {
        GuardedTensor g = make_guarded(be, s.rows, s.cols, DTYPE_F32, gate, seed32(6, ci, 2));
        GuardedTensor u = make_guarded(be, s.rows, s.cols, DTYPE_F32, up, seed32(6, ci, 3));
        GuardedTensor out =
            in_place ? u : make_guarded(be, s.rows, s.cols, DTYPE_F32, {}, seed32(6, ci, 4));
        be.swiglu(out.view, g.view, u.view);
        expect_exact(download_checked(be, g), gate);
        return download_checked(be, out);
      };
      const std::vector<float> ref = run(cpu_), got = run(*gpu_);
      expect_near_all(got, ref, [&](size_t i) { return kTolElementwise * std::fabs(ref[i]); });
      ++ci;
    }
}

TEST_F(BackendOps, ReluAndAdd) {
  uint64_t ci = 0;
  for (const ActivationCase& s : relu_add_cases()) {
    SCOPED_TRACE(testing::Message()
                 << "relu/add M " << s.rows << " cols " << s.cols << " " << seed_note());
    const std::vector<float> x = uniform(s.rows * s.cols, seed32(7, ci, 0), -1, 1);
    const std::vector<float> y = uniform(s.rows * s.cols, seed32(7, ci, 1), -1, 1);
    auto run_relu = [&](Backend& be) {
      GuardedTensor t = make_guarded(be, s.rows, s.cols, DTYPE_F32, x, seed32(7, ci, 2));
      be.relu(t.view);
      return download_checked(be, t);
    };
    auto run_add = [&](Backend& be) {
      GuardedTensor tx = make_guarded(be, s.rows, s.cols, DTYPE_F32, x, seed32(7, ci, 3));
      GuardedTensor ty = make_guarded(be, s.rows, s.cols, DTYPE_F32, y, seed32(7, ci, 4));
      be.add(tx.view, ty.view);
      expect_exact(download_checked(be, ty), y);
      return download_checked(be, tx);
    };
    expect_exact(run_relu(*gpu_), run_relu(cpu_));
    expect_exact(run_add(*gpu_), run_add(cpu_));
    ++ci;
  }
}

TEST_F(BackendOps, GatherRows) {
  uint64_t ci = 0;
  for (const GatherRowsCase& c : gather_rows_cases()) {
    SCOPED_TRACE(testing::Message() << "gather_rows " << c.in_rows << "x" << c.cols << " -> "
                                    << c.out_rows << " " << seed_note());
    const std::vector<float> x = uniform(c.in_rows * c.cols, seed32(8, ci, 0), -1, 1);
    std::vector<int64_t> rows =
        random_indices<int64_t>(c.out_rows, seed32(8, ci, 1), 0, c.in_rows - 1);
    rows.front() = c.in_rows - 1;  // the last row, and (with repeats) the first
    if (rows.size() > 1) rows.back() = 0;
    auto run = [&](Backend& be) {
      GuardedTensor in = make_guarded(be, c.in_rows, c.cols, DTYPE_F32, x, seed32(8, ci, 2));
      GuardedTensor out = make_guarded(be, c.out_rows, c.cols, DTYPE_F32, {}, seed32(8, ci, 3));
      be.gather_rows(out.view, in.view, rows);
      return download_checked(be, out);
    };
    expect_exact(run(*gpu_), run(cpu_));
    ++ci;
  }
}

TEST_F(BackendOps, CopyRows) {
  uint64_t ci = 0;
  for (const CopyRowsCase& c : copy_rows_cases()) {
    SCOPED_TRACE(testing::Message()
                 << "copy_rows " << c.src_rows << " rows into " << c.dst_rows << " at " << c.dst_row
                 << ", cols " << c.cols << " " << seed_note());
    const std::vector<float> dst0 = uniform(c.dst_rows * c.cols, seed32(9, ci, 0), -1, 1);
    const std::vector<float> src = uniform(c.src_rows * c.cols, seed32(9, ci, 1), -1, 1);
    auto run = [&](Backend& be) {
      GuardedTensor dst = make_guarded(be, c.dst_rows, c.cols, DTYPE_F32, dst0, seed32(9, ci, 2));
      GuardedTensor s = make_guarded(be, c.src_rows, c.cols, DTYPE_F32, src, seed32(9, ci, 3));
      be.copy_rows(dst.view, c.dst_row, s.view);
      return download_checked(be, dst);
    };
    expect_exact(run(*gpu_), run(cpu_));
    ++ci;
  }
}

// ---------------------------------------------------------------- optimiser

TEST_F(BackendOps, UpdateBitExact) {
  uint64_t ci = 0;
  for (const UpdateCase& c : update_cases())
    for (DType dt : kAllDtypes)
    for (NoiseKind noise : kNoiseKinds) {
      SCOPED_TRACE(testing::Message()
                   << "update " << c.rows << "x" << c.cols << " " << dt_str(dt) << " "
                   << mask_str(c.mask) << " coef " << c.coef << " decay " << c.decay
                   << " trainable " << c.trainable << " " << noise_str(noise) << " " << seed_note());
      const std::vector<float> w0 = rounded(dt, uniform(c.rows * c.cols, seed32(10, ci, 0), -1, 1));
      const ParamInfo info = make_info("model.layers.1.self_attn.o_proj.weight", 77 + ci, c.mask,
                                       w0, c.trainable, mix_seed(10, ci, 1), noise);
      const uint64_t seed = mix_seed(10, ci, 2);
      auto run = [&](Backend& be, DType storage) {
        GuardedTensor g = make_guarded(be, c.rows, c.cols, storage, w0, seed32(10, ci, 3));
        Param p;
        p.w = g.view;
        p.info = info;
        be.update(p, c.coef, c.decay, seed);
        return download_checked(be, g);
      };
      const std::vector<float> ref = rounded(dt, run(cpu_, DTYPE_F32));
      const std::vector<float> got = run(*gpu_, dt);
      ASSERT_EQ(got.size(), ref.size());
      int64_t bad = 0, changed = 0;
      for (size_t i = 0; i < ref.size(); ++i) {
        if (float_bits(got[i]) != float_bits(ref[i]) && bad++ < 5)
          ADD_FAILURE() << "element " << i << ": cuda " << got[i] << " cpu " << ref[i];
        changed += float_bits(ref[i]) != float_bits(w0[i]);
      }
      EXPECT_EQ(bad, 0) << "elements differing from the CPU update";
      if (c.trainable && c.rows * c.cols > 64) {
        EXPECT_GT(changed, 0) << "the update changed nothing: the case tests nothing";
      }
      if (!c.trainable) {
        EXPECT_EQ(changed, 0) << "an untrainable parameter was updated";
      }
      ++ci;
    }
}

TEST_F(BackendOps, AbsQuantileExact) {
  const std::vector<double> qs = abs_quantile_levels();
  uint64_t ci = 0;
  for (const AbsQuantileCase& c : abs_quantile_cases())
    for (DType dt : kAllDtypes) {
      SCOPED_TRACE(testing::Message()
                   << "abs_quantile " << c.rows << "x" << c.cols << " " << dt_str(dt)
                   << (c.ties ? " ties" : "") << " " << seed_note());
      std::vector<float> w = c.ties ? small_ints(c.rows * c.cols, seed32(11, ci, 0), -6, 6)
                                    : uniform(c.rows * c.cols, seed32(11, ci, 0), -1, 1);
      if (c.ties)
        for (float& v : w) v = v == 0.0f ? 0.375f : 0.25f * v;  // never zero
      w = rounded(dt, w);
      const ParamInfo info = make_info("w", 5, MASK_DENSE, w, true, 0);
      Param pc = make_param(cpu_, c.rows, c.cols, DTYPE_F32, w, info);
      Param pg = make_param(*gpu_, c.rows, c.cols, dt, w, info);
      for (double q : qs) {
        const float ref = cpu_.abs_quantile(pc, q), got = gpu_->abs_quantile(pg, q);
        EXPECT_EQ(float_bits(got), float_bits(ref))
            << "q " << q << ": cuda " << got << " cpu " << ref;
      }
      expect_exact(download(*gpu_, pg.w), w);  // selection never writes the weights
      ++ci;
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
    SCOPED_TRACE(testing::Message() << "abs_quantile large " << dt_str(dt) << " " << seed_note());
    const std::vector<float> w = rounded(dt, uniform(n, seed32(12, dt, 0), -1, 1));
    Param p =
        make_param(*gpu_, rows, cols, dt, w, make_info("big", 9, MASK_DENSE, {0.0f}, true, 0));
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
