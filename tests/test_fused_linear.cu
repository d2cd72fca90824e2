// The fused perturbed linear (cuda/fused_linear.h, version 0) against two references:
//   host    W' computed here with the spec functions (noise_z8 of the case's noise kind, mask_keep,
//           perturbed_value of src/common/noise_spec.h) at idx = n*K + k, rounded to the storage
//           type with float_to_bf16 / float_to_f16 (src/common/half.h); x rounded likewise;
//           b' = perturbed_value(b, ...) in fp32; the product summed in double.
//   cuBLAS  CudaBackend::linear (materialise W' in scratch, then cublasGemmEx).
// Cases: every mask kind (dense, magnitude, random), every noise kind (in turn, and all of
// them on the large cases), sigma +1 / -1 / 0, bf16 and fp16, odd
// shapes (N, K not multiples of 4, 16 or 32, so noise groups straddle rows and tiles have
// tails; K = 256 for the aligned path; K = 6 for rows shorter than two groups), M = 1, 17, 300
// (one partial M-tile, several M-tiles), with and without bias. Inputs are fresh random values
// (never zeros; SMEZO_TEST_SEED varies them), outputs have one guard row above and below
// (random, must come back bit-identical) and are poisoned with NaN before the run. The fused
// kernel must also be deterministic (a second run is bitwise identical) and leave x, W and b
// untouched. Skipped without a GPU.
//
// Tolerance (element by element, NaN never passes):
//   |fused - host| <= kTolGemm·(Σ_k |x_r·w'| + |b'|) + kTiny, kTolGemm = 1e-5, kTiny = 1e-6.
// Both sides multiply the SAME rounded operands; a bf16/fp16 product is exact in fp32 (8x8 or
// 11x11 significand bits), so only the fp32 accumulation order differs (worst case K·2^-24,
// typical sqrt(K)·2^-24 relative to Σ|x_r·w'|), plus one rounding for the bias add. The same
// bound holds for cuBLAS vs host (checks the reference) and for fused vs cuBLAS.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../cuda/cuda_backend.h"
#include "../cuda/cuda_check.h"
#include "../cuda/fused_linear.h"
#include "common/half.h"
#include "common/noise_spec.h"
#include "test_util.h"

using namespace smezo;
using smezo_test::download;
using smezo_test::download_checked;
using smezo_test::GuardedTensor;
using smezo_test::make_guarded;
using smezo_test::make_param;
using smezo_test::mixed_seed;
using smezo_test::round_to;
using smezo_test::seed_note;

namespace {

constexpr double kTolGemm = 1e-5;
constexpr double kTiny = 1e-6;

// A well-mixed seed for (case, part) of SMEZO_TEST_SEED.
uint64_t mix(uint64_t case_index, uint64_t part) {
  return mixed_seed(1 + case_index * 101ull + part + 7777);
}

const char* mask_str(MaskKind m) {
  return m == MASK_DENSE ? "dense" : m == MASK_MAGNITUDE ? "magnitude" : "random";
}

// |got - ref| <= bound[i] everywhere (NaN fails); the first few failures and the worst ratio.
void expect_within(const std::vector<float>& got, const std::vector<double>& ref,
                   const std::vector<double>& bound, const char* what) {
  ASSERT_EQ(got.size(), ref.size());
  int64_t bad = 0;
  double worst = 0.0;
  std::ostringstream first;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - ref[i]);
    if (!(err <= bound[i])) {
      if (bad < 5)
        first << "\n  [" << i << "] got " << got[i] << " ref " << ref[i] << " |diff| " << err
              << " bound " << bound[i];
      ++bad;
    }
    worst = std::max(worst, err / bound[i]);
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size()
                    << " elements out of tolerance (worst error/bound " << worst << ")"
                    << first.str();
}

struct Case {
  int64_t M, N, K;
  DType dt;
  MaskKind mask;
  float scale;  // sigma * eps
  bool bias;
  bool trainable;
  NoiseKind noise = NOISE_GAUSSIAN;
};

constexpr NoiseKind kNoiseKinds[] = {NOISE_GAUSSIAN, NOISE_GAUSSIAN_V1, NOISE_RADEMACHER};

std::string describe(const Case& c) {
  std::ostringstream s;
  s << "fused linear M " << c.M << " N " << c.N << " K " << c.K << " " << dtype_name(c.dt) << " "
    << mask_str(c.mask) << " scale " << c.scale << (c.bias ? " +bias" : "")
    << (c.trainable ? "" : " untrainable") << " noise kind " << c.noise
    << " " << seed_note();
  return s.str();
}

ParamInfo make_info(const char* name, uint32_t tensor_id, MaskKind mask,
                    const std::vector<float>& values, bool trainable, uint64_t mask_seed) {
  ParamInfo info;
  info.name = name;
  info.tensor_id = tensor_id;
  info.is_linear = true;
  info.trainable = trainable;
  info.mask = mask;
  if (mask == MASK_MAGNITUDE) {  // keep |w| <= median |w|
    std::vector<float> a(values.size());
    for (size_t i = 0; i < a.size(); ++i) a[i] = std::fabs(values[i]);
    std::nth_element(a.begin(), a.begin() + a.size() / 2, a.end());
    info.threshold = a[a.size() / 2];
  }
  if (mask == MASK_RANDOM) {
    info.keep_prob = 0.3f;
    info.mask_seed = mask_seed;
  }
  return info;
}

// v read through the probe exactly as the spec says, element by element (fp32, unrounded).
float host_read(const ParamInfo& info, const Probe& probe, float v, int64_t idx) {
  if (!info.trainable || probe.scale == 0.0f) return v;
  float z8[8];
  noise_z8(info.noise, probe.seed, info.tensor_id, idx / 8, z8);
  const bool keep = mask_keep(info.mask, v, info.threshold, info.keep_prob, info.mask_seed,
                              info.tensor_id, idx);
  return perturbed_value(v, z8[idx % 8], probe.scale, keep);
}

void check_case(CudaBackend& be, const Case& c, uint64_t ci) {
  SCOPED_TRACE(describe(c));
  const int64_t M = c.M, N = c.N, K = c.K;
  const uint32_t s0 = static_cast<uint32_t>(mix(ci, 0));
  const std::vector<float> x = smezo_test::random_floats(M * K, s0, -1.0f, 1.0f);
  std::vector<float> w = smezo_test::random_floats(N * K, s0 + 1, -0.5f, 0.5f);
  std::vector<float> b = smezo_test::random_floats(N, s0 + 2, -1.0f, 1.0f);
  for (float& v : w) v = round_to(c.dt, v);
  for (float& v : b) v = round_to(c.dt, v);
  ParamInfo wi = make_info("model.layers.0.mlp.up_proj.weight", 60 + 2 * ci, c.mask, w,
                           c.trainable, mix(ci, 3));
  ParamInfo bi =
      make_info("model.layers.0.mlp.up_proj.bias", 61 + 2 * ci, MASK_DENSE, b, c.trainable, 0);
  wi.noise = bi.noise = c.noise;
  const Probe probe{c.scale, mix(ci, 4)};

  // Host reference operands and product.
  std::vector<float> x_r(x.size()), w_r(w.size()), b_eff(b.size());
  for (size_t i = 0; i < x.size(); ++i) x_r[i] = round_to(c.dt, x[i]);
  for (int64_t i = 0; i < N * K; ++i) w_r[i] = round_to(c.dt, host_read(wi, probe, w[i], i));
  for (int64_t n = 0; n < N; ++n) b_eff[n] = host_read(bi, probe, b[n], n);
  if (c.trainable && c.scale != 0.0f) {
    int64_t changed = 0;
    for (size_t i = 0; i < w.size(); ++i) changed += w_r[i] != w[i];
    EXPECT_GT(changed, 0) << "the probe perturbed nothing: the case tests nothing";
  }
  std::vector<double> ref(static_cast<size_t>(M * N)), bound(ref.size());
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = c.bias ? b_eff[n] : 0.0, a = c.bias ? std::fabs(b_eff[n]) : 0.0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = static_cast<double>(x_r[m * K + k]) * w_r[n * K + k];
        s += p;
        a += std::fabs(p);
      }
      ref[m * N + n] = s;
      bound[m * N + n] = kTolGemm * a + kTiny;
    }

  // Device: the same stored values for both paths.
  Param pw = make_param(be, N, K, c.dt, w, wi), pb = make_param(be, 1, N, c.dt, b, bi);
  const Param* bias = c.bias ? &pb : nullptr;
  const uint32_t sg = static_cast<uint32_t>(mix(ci, 5));
  // x at a row offset: misaligned rows when K % 4
  GuardedTensor gx = make_guarded(be, M, K, DTYPE_F32, x, sg);
  GuardedTensor out_c = make_guarded(be, M, N, DTYPE_F32, {}, sg + 2);
  GuardedTensor out_f = make_guarded(be, M, N, DTYPE_F32, {}, sg + 4);

  be.linear(out_c.view, gx.view, pw, bias, probe);
  fused_linear(be, out_f.view, gx.view, pw, bias, probe);
  const std::vector<float> got_c = download_checked(be, out_c, "CudaBackend::linear");
  const std::vector<float> got_f = download_checked(be, out_f, "fused_linear");

  expect_within(got_c, ref, bound, "cuBLAS path vs host");
  expect_within(got_f, ref, bound, "fused vs host");
  std::vector<double> got_c_d(got_c.begin(), got_c.end());
  expect_within(got_f, got_c_d, bound, "fused vs cuBLAS path");

  // Deterministic: a second run gives the same bits.
  fused_linear(be, out_f.view, gx.view, pw, bias, probe);
  const std::vector<float> again = download_checked(be, out_f, "fused_linear (2nd run)");
  int64_t differ = 0;
  for (size_t i = 0; i < again.size(); ++i) differ += float_bits(again[i]) != float_bits(got_f[i]);
  EXPECT_EQ(differ, 0) << "fused_linear is not deterministic: " << differ << " entries changed";

  // Inputs are never written.
  EXPECT_TRUE(download_checked(be, gx, "x") == x) << "x was written";
  EXPECT_TRUE(download(be, pw.w) == w) << "W was written";
  EXPECT_TRUE(download(be, pb.w) == b) << "the bias was written";
}

class FusedLinear : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
    be_ = std::make_unique<CudaBackend>();
  }
  std::unique_ptr<CudaBackend> be_;
};

}  // namespace

TEST_F(FusedLinear, MatchesHostAndCublasOnOddShapes) {
  // (N, K): K % 4 = 1 (groups straddle rows), K = 256 (aligned path, several K-steps),
  // K = 6 (rows shorter than two groups); N tails of the 128-wide tile.
  const int64_t nk[][2] = {{77, 45}, {130, 333}, {129, 256}, {33, 6}};
  const int64_t ms[] = {1, 17, 300};
  const float eps = 0.05f;  // large enough that a wrong z or mask is visible after rounding
  const float sigmas[] = {1.0f, -1.0f, 0.0f};
  const MaskKind masks[] = {MASK_DENSE, MASK_MAGNITUDE, MASK_RANDOM};
  uint64_t ci = 0;
  for (DType dt : {DTYPE_BF16, DTYPE_F16})
    for (const auto& s : nk)
      for (int64_t M : ms)
        for (MaskKind mask : masks)
          for (float sigma : sigmas) {
            check_case(*be_, {M, s[0], s[1], dt, mask, sigma * eps, ci % 2 == 0, true,
                              kNoiseKinds[ci % 3]}, ci);
            ++ci;
          }
}

TEST_F(FusedLinear, TrainingScaleAndUntrainable) {
  uint64_t ci = 1000;
  // eps = 1e-3 (the training value) on a larger shape: many N-tiles and K-steps.
  for (MaskKind mask : {MASK_DENSE, MASK_MAGNITUDE, MASK_RANDOM})
    for (NoiseKind noise : kNoiseKinds)
      check_case(*be_, {260, 300, 515, DTYPE_BF16, mask, -1e-3f, true, true, noise}, ci++);
  // K % 8 == 0 (the whole-noise-group path with one 16-byte load), every kind.
  for (NoiseKind noise : kNoiseKinds)
    check_case(*be_, {33, 140, 264, DTYPE_BF16, MASK_RANDOM, 0.05f, true, true, noise}, ci++);
  // An untrainable weight and bias are read as stored even under a probe.
  check_case(*be_, {9, 70, 33, DTYPE_F16, MASK_DENSE, 0.25f, true, false}, ci++);
}

TEST_F(FusedLinear, RejectsFp32Weights) {
  Param pw;
  pw.w = be_->alloc(4, 8, DTYPE_F32);
  pw.info.name = "w32";
  const Tensor x = be_->alloc(2, 8, DTYPE_F32), out = be_->alloc(2, 4, DTYPE_F32);
  const std::string msg =
      smezo_test::error_of([&] { fused_linear(*be_, out, x, pw, nullptr, Probe{}); });
  EXPECT_NE(msg.find("bf16 or f16"), std::string::npos) << msg;
}
