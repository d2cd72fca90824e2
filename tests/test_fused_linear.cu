// The fused perturbed linear (cuda/fused_linear.cu, --linear-path fused) against the CPU
// reference and against the W' path (--linear-path wprime), through CudaBackend::linear, in the
// manner of tests/test_backend_ops.cu: fresh random inputs (never zeros) from SMEZO_TEST_SEED,
// outputs poisoned with NaN and guarded by a row above and below, the input and the stored
// weights checked unwritten. Cases: probe pairs and single probes (+ and -), bf16 / f16 / f32,
// gaussian, gaussian-v1, rademacher and sign z, S-MeZO's magnitude mask, MeZO (dense) and R-MeZO's
// random mask, a bias (OPT), shapes that are not multiples of the tiles (37 x 70 x 200, K = 203
// where noise groups of 8 straddle weight rows and K chunks) and larger ones (several row
// chunks and column blocks).
//
// Tolerances (|fused - ref| <= bound, element by element; NaN never passes):
//   small-integer cases        EXACT, against the CPU and the W' path: integer x and W, the
//   (rademacher or sign,       z is ±1, so every w' = w ± 1 is an integer, every
//   scale 1)                   product and partial sum an integer below 2^24, and any order of
//                              summation gives the same bits. A wrong noise index, sign, mask
//                              or row/probe mapping changes a value by at least 1.
//   random cases               kTolGemm = 1e-5 x (Σ_k |x_k·w'_k| + |b'|), test_backend_ops'
//                              GEMM bound: the operands are the same bits on every path (W'
//                              rounded to the storage dtype once, x rounded to it; products
//                              exact in fp32), so only the fp32 summation order differs —
//                              wmma's 16-wide k steps or the FMA loop against the CPU's k order
//                              and cuBLAS's own (~sqrt(K)·2^-24 of Σ|x·w'| typically, K·2^-24
//                              at worst: 1.2e-5 at K = 203, hence the same 1e-5 with the
//                              typical case far below). Relative to Σ|x·w'|, not to |out|, as
//                              cancellation makes |out| small where the rounding is not.
//                              Fused vs W' uses the same bound (each is far inside it).
// Scales (2e-2, 0.25, 1) are large enough that a wrong z or mask moves outputs far beyond the
// bound; each random case also checks that the probe perturbed some weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../src/common/device_names.h"
#include "../cuda/cuda_backend.h"
#include "../cuda/cuda_check.h"
#include "../cuda/fused_linear.h"
#include "common/check.h"
#include "cpu/cpu_backend.h"
#include "test_util.h"

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

constexpr double kTolGemm = 1e-5;

struct FusedCase {
  int64_t Mh, N, K;  // Mh rows per probe: a pair's call takes 2·Mh rows, a single probe's Mh
  DType dt;
  MaskKind mask;
  NoiseKind noise;
  bool pair;
  float scale;      // the probe's scale (a pair: its + half's); negative: the - probe alone
  bool bias;
  bool small_int;   // integer x and W, rademacher or sign z, |scale| = 1: results exact
};

std::string describe(const FusedCase& c) {
  std::ostringstream s;
  s << (c.pair ? "pair" : "single") << " Mh " << c.Mh << " N " << c.N << " K " << c.K << " " << dtype_name(c.dt)
    << " mask " << (c.mask == MASK_DENSE ? "dense" : c.mask == MASK_MAGNITUDE ? "magnitude" : "random")
    << " noise " << static_cast<int>(c.noise) << " scale " << c.scale << (c.bias ? " +bias" : "")
    << (c.small_int ? " small-int" : "") << " " << seed_note();
  return s.str();
}

std::vector<FusedCase> fused_cases() {
  std::vector<FusedCase> out;
  // an odd shape: every dtype, both noise kinds, masked and unmasked, pair and both
  // single-probe signs
  for (DType dt : {DTYPE_BF16, DTYPE_F32, DTYPE_F16})
    for (NoiseKind noise : {NOISE_GAUSSIAN, NOISE_RADEMACHER})
      for (MaskKind mask : {MASK_MAGNITUDE, MASK_DENSE}) {
        out.push_back({37, 70, 200, dt, mask, noise, true, 2e-2f, false, false});
        out.push_back({37, 70, 200, dt, mask, noise, false, dt == DTYPE_F16 ? -2e-2f : 2e-2f, false, false});
      }
  out.push_back({37, 70, 200, DTYPE_BF16, MASK_MAGNITUDE, NOISE_GAUSSIAN, false, -2e-2f, true, false});
  // K = 203: groups of 8 straddle rows and K chunks; R-MeZO's mask and gaussian-v1; a bias
  out.push_back({5, 33, 203, DTYPE_BF16, MASK_RANDOM, NOISE_GAUSSIAN_V1, true, 0.25f, true, false});
  out.push_back({9, 41, 203, DTYPE_F32, MASK_MAGNITUDE, NOISE_RADEMACHER, true, -0.25f, true, false});
  out.push_back({1, 7, 13, DTYPE_BF16, MASK_DENSE, NOISE_GAUSSIAN, true, 2e-2f, false, false});
  // larger: several row chunks (64 rows per probe per block for a pair, 128 single) and
  // column blocks (32)
  out.push_back({130, 200, 520, DTYPE_BF16, MASK_MAGNITUDE, NOISE_GAUSSIAN, true, 2e-2f, true, false});
  out.push_back({300, 96, 256, DTYPE_BF16, MASK_DENSE, NOISE_RADEMACHER, false, 2e-2f, false, false});
  out.push_back({70, 65, 129, DTYPE_F32, MASK_MAGNITUDE, NOISE_GAUSSIAN, true, 2e-2f, false, false});
  // exact: small integers with rademacher z and |scale| = 1
  for (DType dt : {DTYPE_BF16, DTYPE_F32, DTYPE_F16}) {
    out.push_back({37, 70, 200, dt, MASK_MAGNITUDE, NOISE_RADEMACHER, true, 1.0f, true, true});
    out.push_back({70, 45, 203, dt, MASK_DENSE, NOISE_RADEMACHER, false, -1.0f, false, true});
  }
  out.push_back({129, 100, 77, DTYPE_BF16, MASK_RANDOM, NOISE_RADEMACHER, true, 1.0f, false, true});
  // the sign kind (spec v3): W' through noise_z8, as perturb_weight_pair keys it; K = 203 straddles calls
  out.push_back({33, 70, 203, DTYPE_BF16, MASK_MAGNITUDE, NOISE_SIGN, true, 2e-2f, true, false});
  out.push_back({37, 45, 203, DTYPE_F32, MASK_DENSE, NOISE_SIGN, false, -1.0f, false, true});
  return out;
}

// ---- inputs

std::vector<float> small_ints(int64_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) {
    int i = dist(rng);
    x = static_cast<float>(i == 0 ? 1 : i);  // never zero
  }
  return v;
}

double median_abs(const std::vector<float>& v) {
  std::vector<float> a(v.size());
  for (size_t i = 0; i < v.size(); ++i) a[i] = std::fabs(v[i]);
  std::nth_element(a.begin(), a.begin() + a.size() / 2, a.end());
  return a[a.size() / 2];
}

struct Inputs {
  std::vector<float> x, w, b;  // x (rows, K), W (N, K) and b (N), representable in dt
  ParamInfo wi, bi;
  Probe probe;
  int64_t rows = 0;
};

Inputs make_inputs(const FusedCase& c, uint64_t ci) {
  Inputs in;
  in.rows = c.pair ? 2 * c.Mh : c.Mh;
  const uint32_t s = static_cast<uint32_t>(mixed_seed(9000 + 17 * ci));
  if (c.small_int) {
    in.x = small_ints(in.rows * c.K, s, -3, 3);
    in.w = small_ints(c.N * c.K, s + 1, -4, 4);
    in.b = small_ints(c.N, s + 2, -8, 8);
  } else {
    in.x = smezo_test::random_floats(in.rows * c.K, s, -1, 1);
    in.w = rounded(c.dt, smezo_test::random_floats(c.N * c.K, s + 1, -0.5f, 0.5f));
    in.b = rounded(c.dt, smezo_test::random_floats(c.N, s + 2, -1, 1));
  }
  in.wi = smezo_test::linear_weight_info(60 + static_cast<uint32_t>(ci));
  in.wi.noise = c.noise;
  in.wi.mask = c.mask;
  if (c.mask == MASK_MAGNITUDE) in.wi.threshold = static_cast<float>(median_abs(in.w));
  if (c.mask == MASK_RANDOM) {
    in.wi.keep_prob = 0.3f;
    in.wi.mask_seed = mixed_seed(9001 + 17 * ci);
  }
  in.bi = in.wi;
  in.bi.name = "test.bias";
  in.bi.tensor_id = in.wi.tensor_id + 1000;
  in.bi.mask = MASK_DENSE;
  in.probe = Probe{c.scale, mixed_seed(9002 + 17 * ci), c.pair};
  return in;
}

// ---- the reference: the CPU linear on each half's effective operands (W' read through the
// half's probe and rounded to dt, x rounded to dt, b' in fp32), as test_backend_ops does

struct Reference {
  std::vector<float> out;    // (rows, N)
  std::vector<double> bound; // kTolGemm (Σ|x·w'| + |b'|) per output
  int64_t perturbed = 0;     // weights the probe changed (over the halves)
};

Reference cpu_reference(CpuBackend& cpu, const FusedCase& c, Inputs& in) {
  Reference ref;
  const int halves = c.pair ? 2 : 1;
  const int64_t Mh = c.Mh, N = c.N, K = c.K;
  for (int h = 0; h < halves; ++h) {
    const Probe p = c.pair ? half_probe(in.probe, h == 0 ? +1 : -1) : in.probe;
    std::vector<float> w_eff(in.w.size()), b_eff(in.b.size());
    Param hw = host_param(in.w, N, K, in.wi), hb = host_param(in.b, 1, N, in.bi);
    cpu_read_param(hw, p, 0, N * K, w_eff.data());
    cpu_read_param(hb, p, 0, N, b_eff.data());
    w_eff = rounded(c.dt, w_eff);
    for (size_t i = 0; i < w_eff.size(); ++i) ref.perturbed += w_eff[i] != in.w[i];
    const std::vector<float> x_eff =
        rounded(c.dt, std::vector<float>(in.x.begin() + h * Mh * K, in.x.begin() + (h + 1) * Mh * K));
    ParamInfo wp = in.wi, bp = in.bi;
    wp.trainable = bp.trainable = false;  // W' and b' are already applied
    Param cw = make_param(cpu, N, K, DTYPE_F32, w_eff, wp);
    Param cb = make_param(cpu, 1, N, DTYPE_F32, b_eff, bp);
    GuardedTensor cx = make_guarded(cpu, Mh, K, DTYPE_F32, x_eff, 11);
    GuardedTensor co = make_guarded(cpu, Mh, N, DTYPE_F32, {}, 12);
    cpu.linear(co.view, cx.view, cw, c.bias ? &cb : nullptr, Probe{});
    const std::vector<float> o = download_checked(cpu, co);
    ref.out.insert(ref.out.end(), o.begin(), o.end());
    for (int64_t m = 0; m < Mh; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = c.bias ? std::fabs(b_eff[n]) : 0.0;
        for (int64_t k = 0; k < K; ++k) s += std::fabs(static_cast<double>(x_eff[m * K + k]) * w_eff[n * K + k]);
        ref.bound.push_back(kTolGemm * s);
      }
  }
  return ref;
}

// One CudaBackend::linear call of the case under `mode`, output poisoned and guarded.
std::vector<float> gpu_call(CudaBackend& gpu, const FusedCase& c, const Inputs& in, LinearPathMode mode) {
  gpu.set_linear_mode(mode);
  Param gw = make_param(gpu, c.N, c.K, c.dt, in.w, in.wi);
  Param gb = make_param(gpu, 1, c.N, c.dt, in.b, in.bi);
  GuardedTensor gx = make_guarded(gpu, in.rows, c.K, DTYPE_F32, in.x, 21);
  GuardedTensor go = make_guarded(gpu, in.rows, c.N, DTYPE_F32, {}, 22);
  gpu.linear(go.view, gx.view, gw, c.bias ? &gb : nullptr, in.probe);
  std::vector<float> got = download_checked(gpu, go, std::string("the ") + linear_mode_name(mode) + " linear");
  SCOPED_TRACE("the input and the stored weights are never written");
  EXPECT_TRUE(smezo_test::same_bits(download_checked(gpu, gx), in.x));
  EXPECT_TRUE(smezo_test::same_bits(download(gpu, gw.w), in.w));
  return got;
}

// |got - ref| <= bound (0 when exact) everywhere; NaN fails. Reports the count and the first few.
void expect_within(const std::vector<float>& got, const std::vector<float>& ref, const std::vector<double>& bound,
                   bool exact, const char* what) {
  ASSERT_EQ(got.size(), ref.size());
  int64_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - ref[i]);
    const double b = exact ? 0.0 : bound[i];
    if (!(err <= b)) {
      if (bad < 5) first << "\n  [" << i << "] got " << got[i] << " ref " << ref[i] << " bound " << b;
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " outputs out of tolerance" << first.str();
}

class FusedLinear : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
    gpu_ = std::make_unique<CudaBackend>();
  }
  void run_case(const FusedCase& c, uint64_t ci) {
    SCOPED_TRACE(describe(c));
    Inputs in = make_inputs(c, ci);
    const Reference ref = cpu_reference(cpu_, c, in);
    EXPECT_GT(ref.perturbed, 0) << "the probe perturbed nothing: the case tests nothing";
    const std::vector<float> fused = gpu_call(*gpu_, c, in, LINEAR_MODE_FUSED);
    const std::vector<float> wprime = gpu_call(*gpu_, c, in, LINEAR_MODE_WPRIME);
    expect_within(fused, ref.out, ref.bound, c.small_int, "fused vs the CPU reference");
    expect_within(fused, wprime, ref.bound, c.small_int, "fused vs the W' path");
  }
  CpuBackend cpu_;
  std::unique_ptr<CudaBackend> gpu_;
};

}  // namespace

TEST_F(FusedLinear, MatchesCpuReferenceAndWprimePath) {
  const std::vector<FusedCase> cases = fused_cases();
  for (size_t ci = 0; ci < cases.size(); ++ci) run_case(cases[ci], ci);
}

// The same bits on every run: each output is summed by one warp in a fixed order.
TEST_F(FusedLinear, Deterministic) {
  const FusedCase c{130, 200, 520, DTYPE_BF16, MASK_MAGNITUDE, NOISE_GAUSSIAN, true, 2e-2f, true, false};
  const Inputs in = make_inputs(c, 77);
  const std::vector<float> a = gpu_call(*gpu_, c, in, LINEAR_MODE_FUSED);
  const std::vector<float> b = gpu_call(*gpu_, c, in, LINEAR_MODE_FUSED);
  EXPECT_TRUE(smezo_test::same_bits(a, b));
}

// The mode's dispatch inside CudaBackend::linear: an unperturbed call or an untrainable weight
// takes the plain GEMM whatever the mode (the same bits as wprime); fused is chosen only for
// perturbed weights. And the launcher's own refusals.
TEST_F(FusedLinear, UnperturbedCallsIgnoreTheModeAndBadCallsAreRefused) {
  FusedCase c{9, 40, 64, DTYPE_BF16, MASK_DENSE, NOISE_GAUSSIAN, true, 0.0f, true, false};
  Inputs in = make_inputs(c, 78);
  EXPECT_TRUE(smezo_test::same_bits(gpu_call(*gpu_, c, in, LINEAR_MODE_FUSED),
                                    gpu_call(*gpu_, c, in, LINEAR_MODE_WPRIME)));
  in.probe.scale = 0.25f;
  in.wi.trainable = in.bi.trainable = false;
  EXPECT_TRUE(smezo_test::same_bits(gpu_call(*gpu_, c, in, LINEAR_MODE_FUSED),
                                    gpu_call(*gpu_, c, in, LINEAR_MODE_WPRIME)));

  FusedLinearParams p;
  p.M = 3;
  p.N = 4;
  p.K = 5;
  p.pair = true;
  EXPECT_THROW_MSG(launch_fused_linear(p, gpu_->stream()), "a probe pair needs an even number of rows (3)");
  p.pair = false;
  EXPECT_THROW_MSG(launch_fused_linear(p, gpu_->stream()), "fused linear: null operand");
  p.M = int64_t(65536) * 128 + 1;
  float dummy = 0.0f;
  p.out = &dummy;
  p.in = &dummy;
  p.w = &dummy;
  EXPECT_THROW_MSG(launch_fused_linear(p, gpu_->stream()), "HINT: use --linear-path wprime");
  EXPECT_EQ(fused_linear_rows_per_block(true), 64);
  EXPECT_EQ(fused_linear_rows_per_block(false), 128);
}
