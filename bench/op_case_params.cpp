// The op cases (bench/op_case.h) of the parameter ops: the linear, the update and abs_quantile.
//
// Tolerance policy of the conformance test (the rest: bench/op_case_ops.cpp):
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
//   update (fp32 storage)               bit-exact: both run the spec's correctly rounded fp32
//                                       ops (noise_spec.h section 5) on identical w, for every
//                                       noise kind (ParamInfo::noise; the cases run each).
//   update (fp16/bf16 storage)          bit-exact vs round_nearest_even(CPU fp32 update of the
//                                       rounded w): the GPU reads float(w16) (exact), does the
//                                       same fp32 ops, and rounds once to the storage type, so
//                                       the two differ in nothing (no double rounding: the
//                                       CPU's fp32 result IS the GPU's pre-rounding value).
//   abs_quantile                        bit-exact: selection returns an element of |W|.
#include <cmath>
#include <memory>

#include "bench/host_values.h"
#include "bench/op_cases.h"
#include "common/check.h"
#include "common/half.h"
#include "cpu/cpu_backend.h"
#include "train/spsa.h"

namespace smezo {

namespace {

// A linear case's host operands, and (made when first asked) the reference's: W' and b' read
// through the probe, W' and x rounded to the storage type.
struct LinearInputs {
  LinearCase c;
  std::vector<float> x, w, b;
  ParamInfo wi, bi;
  Probe probe;
  std::vector<float> x_eff, w_eff, b_eff;
  void make_effective() {
    if (!w_eff.empty()) return;
    w_eff.resize(w.size());
    b_eff.resize(b.size());
    cpu_read_param(host_param(w, c.N, c.K, wi), probe, 0, c.N * c.K, w_eff.data());
    cpu_read_param(host_param(b, 1, c.N, bi), probe, 0, c.N, b_eff.data());
    w_eff = rounded(c.dt, w_eff);
    x_eff = rounded(c.dt, x);
  }
};

std::shared_ptr<LinearInputs> linear_inputs(const LinearCase& c, const OpSeeds& s) {
  auto in = std::make_shared<LinearInputs>();
  in->c = c;
  if (c.group == LINEAR_SMALL_INT) {
    in->x = small_ints(c.M * c.K, s.u32(0), -4, 4);
    in->w = small_ints(c.N * c.K, s.u32(1), -4, 4);
    in->b = small_ints(c.N, s.u32(2), -8, 8);
  } else {
    in->x = random_floats(c.M * c.K, s.u32(0), -1, 1);
    in->w = rounded(c.dt, random_floats(c.N * c.K, s.u32(1), -0.5f, 0.5f));
    in->b = rounded(c.dt, random_floats(c.N, s.u32(2), -1, 1));
  }
  in->wi = op_param_info("model.layers.0.mlp.up_proj.weight", 40 + s.index, c.mask, in->w, c.trainable, s.u64(3),
                         c.noise);
  in->bi = op_param_info("model.layers.0.mlp.up_proj.bias", 41 + s.index, MASK_DENSE, in->b, c.trainable, 0, c.noise);
  in->wi.role = in->bi.role = ROLE_MLP_UP;  // TimingBackend's name: "linear up"
  in->probe = Probe{c.scale, s.u64(4)};
  return in;
}

// The CUDA backend runs the case as a user calls it; the reference, the CPU linear unperturbed
// on the effective operands (W', b' already applied, W' and x rounded to the storage type).
OpCall linear_setup(const std::shared_ptr<LinearInputs>& in, OpTensors& t) {
  const LinearCase& c = in->c;
  const bool ref = t.reference;
  if (ref) in->make_effective();
  ParamInfo wi = in->wi, bi = in->bi;
  if (ref) wi.trainable = bi.trainable = false;
  const Param w = t.param(c.N, c.K, ref ? DTYPE_F32 : c.dt, ref ? in->w_eff : in->w, wi);
  const Param b = t.param(1, c.N, ref ? DTYPE_F32 : c.dt, ref ? in->b_eff : in->b, bi);
  const Tensor x = t.input(c.M, c.K, ref ? in->x_eff : in->x);
  const Tensor out = t.output(c.M, c.N);
  const Probe probe = ref ? Probe{} : in->probe;
  return void_call([&be = t.be, out, x, w, b, probe, bias = c.bias] { be.linear(out, x, w, bias ? &b : nullptr, probe); });
}

}  // namespace

OpCase make_linear_case(const LinearCase& c, const OpSeeds& s) {
  std::shared_ptr<LinearInputs> in = linear_inputs(c, s);
  OpCase oc;
  oc.op = "linear up";
  oc.name = format_string("M %lld N %lld K %lld %s%s scale %g %s%s%s %s", (long long)c.M, (long long)c.N,
                          (long long)c.K, dtype_name(c.dt), c.bias ? " +bias" : "", c.scale, mask_name(c.mask),
                          c.trainable ? "" : " untrainable", c.group == LINEAR_SMALL_INT ? " small-int" : "",
                          noise_name(c.noise));
  oc.setup = [in](OpTensors& t) { return linear_setup(in, t); };
  if (c.group != LINEAR_SMALL_INT)  // bound = kTolGemm (Σ_k |x_k w'_k| + |b'|), in double
    oc.bound = [in](size_t i, float) {
      in->make_effective();
      const LinearCase& c = in->c;
      const int64_t m = static_cast<int64_t>(i) / c.N, n = static_cast<int64_t>(i) % c.N;
      double sum = c.bias ? std::fabs(in->b_eff[n]) : 0.0;
      for (int64_t k = 0; k < c.K; ++k)
        sum += std::fabs(static_cast<double>(in->x_eff[m * c.K + k]) * in->w_eff[n * c.K + k]);
      return kTolGemm * sum;
    };
  if (c.trainable && c.scale != 0.0f)
    oc.check_ref = [in](const std::vector<float>&) -> std::string {
      in->make_effective();
      for (size_t i = 0; i < in->w.size(); ++i)
        if (in->w_eff[i] != in->w[i]) return "";
      return "the probe perturbed nothing: the case tests nothing";
    };
  return oc;
}

// Backend::update of a (rows, cols) weight stored as dt, in place.
OpCase make_update_case(const UpdateCase& c, DType dt, NoiseKind noise, const OpSeeds& s) {
  auto w0 = std::make_shared<const std::vector<float>>(rounded(dt, random_floats(c.rows * c.cols, s.u32(0), -1, 1)));
  ParamInfo info = op_param_info("model.layers.1.self_attn.o_proj.weight", 77 + s.index, c.mask, *w0, c.trainable,
                                 s.u64(1), noise);
  info.role = ROLE_ATTN_O;  // TimingBackend's name: "update o"
  const uint64_t seed = s.u64(2);
  OpCase oc;
  oc.op = "update o";
  oc.name = format_string("%lld x %lld %s %s coef %g decay %g%s %s", (long long)c.rows, (long long)c.cols,
                          dtype_name(dt), mask_name(c.mask), c.coef, c.decay, c.trainable ? "" : " untrainable",
                          noise_name(noise));
  oc.setup = [c, dt, w0, info, seed](OpTensors& t) {
    Param p;
    p.w = t.inout(c.rows, c.cols, dt, *w0);
    p.info = info;
    return void_call([&be = t.be, p, c, seed]() mutable { be.update(p, c.coef, c.decay, seed); });
  };
  oc.bit_exact = true;
  oc.ref_rounding = dt;
  oc.check_ref = [c, w0](const std::vector<float>& ref) -> std::string {
    int64_t changed = 0;
    for (size_t i = 0; i < ref.size(); ++i) changed += float_bits(ref[i]) != float_bits((*w0)[i]);
    if (c.trainable && c.rows * c.cols > 64 && changed == 0)
      return "the update changed nothing: the case tests nothing";
    return !c.trainable && changed > 0 ? "an untrainable parameter was updated" : "";
  };
  return oc;
}

// Backend::abs_quantile at every level of abs_quantile_levels(): the call returns them.
OpCase make_abs_quantile_case(const AbsQuantileCase& c, DType dt, const OpSeeds& s) {
  std::vector<float> w = c.ties ? small_ints(c.rows * c.cols, s.u32(0), -6, 6)
                                : random_floats(c.rows * c.cols, s.u32(0), -1, 1);
  if (c.ties)
    for (float& v : w) v = v == 0.0f ? 0.375f : 0.25f * v;  // never zero
  auto wr = std::make_shared<const std::vector<float>>(rounded(dt, w));
  OpCase oc;
  oc.op = "abs_quantile";
  oc.name = format_string("%lld x %lld %s%s, %zu levels", (long long)c.rows, (long long)c.cols, dtype_name(dt),
                          c.ties ? " ties" : "", abs_quantile_levels().size());
  oc.setup = [c, dt, wr](OpTensors& t) -> OpCall {
    const Param p = t.param(c.rows, c.cols, dt, *wr, op_param_info("w", 5, MASK_DENSE, *wr, true, 0));
    return [&be = t.be, p] {
      std::vector<float> h;
      for (double q : abs_quantile_levels()) h.push_back(be.abs_quantile(p, q));
      return h;
    };
  };
  oc.bit_exact = true;
  return oc;
}

}  // namespace smezo
