// The op cases (bench/op_case.h) of the embeddings, the norms, RoPE and the elementwise ops.
//
// Tolerance policy of the conformance test (|cuda - cpu| <= bound, element by element; NaN
// never passes). The CPU stores fp32 only, so fp16/bf16 inputs are rounded to the storage type
// on the host and the SAME rounded values go to both backends.
//   embedding, add_position_embedding,  exact (0): the same spec arithmetic (perturbed_value is
//   relu, add, gather_rows, copy_rows   one fma) or plain copies/adds on identical inputs.
//   swiglu                              1e-6 relative (kTolElementwise): expf vs std::exp and
//                                       the division, a few ulps.
//   norm (RMS, Layer)                   1e-5 x (|w|·(|x̂|+1) + |b|) (kTolNorm): the row
//                                       reductions are summed in a different order.
//   rope                                (|v0|+|v1|) x (1e-6 + 8·pos·2^-23) (kRopeAngleUlps): the
//                                       angle pos·θ^(-2j/d) carries a few ulps of pow/multiply
//                                       error on each side, which grows with the position.
//   linear, update, abs_quantile        bench/op_case_params.cpp.
//   attention                           bench/op_case_attention.cpp.
#include <cmath>
#include <memory>

#include "bench/host_values.h"
#include "bench/op_cases.h"
#include "common/check.h"
#include "cpu/cpu_backend.h"
#include "model/rope_freq.h"
#include "train/spsa.h"

namespace smezo {

namespace {

const char* dt_name(DType dt) { return dtype_name(dt); }

// The norm's bound: kTolNorm (|w_d| (|x̂_d| + 1) + |b_d|), x̂ the normalised input in double,
// w and b as the probe reads them.
std::vector<double> norm_bounds(const NormCase& c, const std::vector<float>& x, std::vector<float> w,
                                std::vector<float> b, const ParamInfo& wi, const ParamInfo& bi, const Probe& probe,
                                float eps) {
  std::vector<float> w_eff(c.dim), b_eff(c.dim, 0.0f);
  cpu_read_param(host_param(w, 1, c.dim, wi), probe, 0, c.dim, w_eff.data());
  if (c.bias) cpu_read_param(host_param(b, 1, c.dim, bi), probe, 0, c.dim, b_eff.data());
  std::vector<double> bound(static_cast<size_t>(c.M * c.dim));
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
          kTolNorm * (std::fabs(w_eff[d]) * (std::fabs((xm[d] - mean) * inv) + 1.0) + std::fabs(b_eff[d]));
  }
  return bound;
}

// Each rotated pair (a, b) shares the bound (|v_a| + |v_b|) (1e-6 + 8 pos 2^-23).
std::vector<double> rope_bounds(const RopeCase& c, RopeStyle style, const std::vector<float>& x,
                                const std::vector<int32_t>& pos) {
  const int64_t cols = c.n_heads * c.head_dim, half = c.head_dim / 2;
  std::vector<double> bound(x.size());
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t h = 0; h < c.n_heads; ++h)
      for (int64_t j = 0; j < half; ++j) {
        const int64_t base = m * cols + h * c.head_dim;
        const int64_t a = base + (style == ROPE_INTERLEAVED ? 2 * j : j);
        const int64_t b = base + (style == ROPE_INTERLEAVED ? 2 * j + 1 : j + half);
        bound[a] = bound[b] = (std::fabs(x[a]) + std::fabs(x[b])) *
                              (kTolElementwise + kRopeAngleUlps * pos[m] * std::ldexp(1.0, -23));
      }
  return bound;
}

std::function<double(size_t, float)> bound_of(std::vector<double> bound) {
  return [bound = std::move(bound)](size_t i, float) { return bound[i]; };
}

}  // namespace

OpCase make_embedding_case(const EmbeddingCase& c, const OpSeeds& s) {
  struct In {
    std::vector<float> table;
    ParamInfo info;
    std::vector<int32_t> tokens;
    Probe probe;
  };
  auto in = std::make_shared<In>();
  in->table = rounded(c.dt, random_floats(c.vocab * c.dim, s.u32(0), -1, 1));
  in->info = op_param_info("model.embed_tokens.weight", 3 + s.index, c.mask, in->table, c.trainable, s.u64(1),
                           noise_of_case(s.index));
  in->tokens = random_indices<int32_t>(c.M, s.u32(2), 0, c.vocab - 1);
  in->probe = Probe{c.scale, s.u64(3)};
  OpCase oc;
  oc.op = "embedding";
  oc.name = format_string("vocab %lld dim %lld M %lld %s scale %g %s %s%s", (long long)c.vocab, (long long)c.dim,
                          (long long)c.M, dt_name(c.dt), c.scale, mask_name(c.mask), noise_name(in->info.noise),
                          c.trainable ? "" : " untrainable");
  oc.setup = [c, in](OpTensors& t) {
    const Param p = t.param(c.vocab, c.dim, c.dt, in->table, in->info);
    const Tensor out = t.output(c.M, c.dim);
    return void_call([&be = t.be, p, out, in] { be.embedding(out, p, in->tokens, in->probe); });
  };
  return oc;
}

OpCase make_position_embedding_case(const PositionEmbeddingCase& c, const OpSeeds& s) {
  struct In {
    std::vector<float> table, x0;
    ParamInfo info;
    std::vector<int32_t> positions;
    Probe probe;
  };
  auto in = std::make_shared<In>();
  in->table = rounded(c.dt, random_floats(c.n_pos * c.dim, s.u32(0), -1, 1));
  in->info = op_param_info("model.decoder.embed_positions.weight", 1, MASK_DENSE, in->table, true, 0,
                           noise_of_case(s.index));
  in->positions = random_indices<int32_t>(c.M, s.u32(1), 0, c.n_pos - 1 - c.offset);
  in->x0 = random_floats(c.M * c.dim, s.u32(2), -1, 1);
  in->probe = Probe{c.scale, s.u64(3)};
  OpCase oc;
  oc.op = "position_embedding";
  oc.name = format_string("n_pos %lld dim %lld M %lld offset %lld %s scale %g %s", (long long)c.n_pos,
                          (long long)c.dim, (long long)c.M, (long long)c.offset, dt_name(c.dt), c.scale,
                          noise_name(in->info.noise));
  oc.setup = [c, in](OpTensors& t) {
    const Param p = t.param(c.n_pos, c.dim, c.dt, in->table, in->info);
    const Tensor out = t.inout(c.M, c.dim, DTYPE_F32, in->x0);
    return void_call([&be = t.be, p, out, c, in] {
      be.add_position_embedding(out, p, in->positions, c.offset, in->probe);
    });
  };
  return oc;
}

OpCase make_norm_case(const NormCase& c, const OpSeeds& s) {
  struct In {
    std::vector<float> x, w, b;
    ParamInfo wi, bi;
    Probe probe;
    float eps;
  };
  auto in = std::make_shared<In>();
  in->x = random_floats(c.M * c.dim, s.u32(0), -2, 2);
  if (c.kind == NORM_LAYER)
    for (float& v : in->x) v += 0.75f;  // a nonzero mean
  in->w = rounded(c.dt, random_floats(c.dim, s.u32(1), 0.5f, 1.5f));
  in->b = rounded(c.dt, random_floats(c.dim, s.u32(2), -0.5f, 0.5f));
  in->wi = op_param_info("norm.weight", 11, MASK_DENSE, in->w, true, 0, noise_of_case(s.index));
  in->bi = op_param_info("norm.bias", 12, MASK_DENSE, in->b, true, 0, noise_of_case(s.index));
  in->probe = Probe{c.scale, s.u64(3)};
  in->eps = c.kind == NORM_RMS ? 1e-5f : 1e-6f;
  OpCase oc;
  oc.op = "norm";
  oc.name = format_string("%s M %lld dim %lld%s %s scale %g%s %s", c.kind == NORM_RMS ? "rms" : "layer",
                          (long long)c.M, (long long)c.dim, c.bias ? " +bias" : "", dt_name(c.dt), c.scale,
                          c.in_place ? " in place" : "", noise_name(in->wi.noise));
  oc.setup = [c, in](OpTensors& t) {
    const Param pw = t.param(1, c.dim, c.dt, in->w, in->wi);
    const Param pb = c.bias ? t.param(1, c.dim, c.dt, in->b, in->bi) : Param();
    const Tensor x = c.in_place ? t.inout(c.M, c.dim, DTYPE_F32, in->x) : t.input(c.M, c.dim, in->x);
    const Tensor out = c.in_place ? x : t.output(c.M, c.dim);
    return void_call([&be = t.be, pw, pb, x, out, c, in] {
      be.norm(out, x, pw, c.bias ? &pb : nullptr, c.kind, in->eps, in->probe);
    });
  };
  oc.bound = bound_of(norm_bounds(c, in->x, in->w, in->b, in->wi, in->bi, in->probe, in->eps));
  return oc;
}

OpCase make_rope_case(const RopeCase& c, RopeStyle style, const OpSeeds& s) {
  const int64_t cols = c.n_heads * c.head_dim;
  auto x = std::make_shared<const std::vector<float>>(random_floats(c.M * cols, s.u32(0), -1, 1));
  auto pos = std::make_shared<const std::vector<int32_t>>(random_indices<int32_t>(c.M, s.u32(1), 0, c.max_pos));
  OpCase oc;
  oc.op = "rope";
  oc.name = format_string("M %lld heads %lld head_dim %lld theta %g%s max_pos %d %s", (long long)c.M,
                          (long long)c.n_heads, (long long)c.head_dim, c.theta, c.llama3 ? " llama3" : "",
                          c.max_pos, style == ROPE_ROTATE_HALF ? "half" : "interleaved");
  ModelConfig config;
  config.head_dim = c.head_dim;
  config.rope_theta = c.theta;
  if (c.llama3) {
    config.rope_scaling.kind = ROPE_SCALING_LLAMA3;
    config.rope_scaling.factor = 8.0f;
  }
  auto inv_freq = std::make_shared<const std::vector<float>>(rope_inverse_frequencies(config));
  oc.setup = [c, style, cols, x, pos, inv_freq](OpTensors& t) {
    const Tensor v = t.inout(c.M, cols, DTYPE_F32, *x);
    return void_call([&be = t.be, v, c, style, pos, inv_freq] { be.rope(v, *pos, c.n_heads, *inv_freq, style); });
  };
  oc.bound = bound_of(rope_bounds(c, style, *x, *pos));
  return oc;
}

// The model calls swiglu(h_up, h_gate, h_up): in place on up.
OpCase make_swiglu_case(const ActivationCase& c, bool in_place, const OpSeeds& s) {
  auto gate = std::make_shared<const std::vector<float>>(random_floats(c.rows * c.cols, s.u32(0), -8, 8));
  auto up = std::make_shared<const std::vector<float>>(random_floats(c.rows * c.cols, s.u32(1), -2, 2));
  OpCase oc;
  oc.op = "swiglu";
  oc.name = format_string("M %lld H %lld%s", (long long)c.rows, (long long)c.cols, in_place ? " in place" : "");
  oc.setup = [c, in_place, gate, up](OpTensors& t) {
    const Tensor g = t.input(c.rows, c.cols, *gate);
    const Tensor u = in_place ? t.inout(c.rows, c.cols, DTYPE_F32, *up) : t.input(c.rows, c.cols, *up);
    const Tensor out = in_place ? u : t.output(c.rows, c.cols);
    return void_call([&be = t.be, out, g, u] { be.swiglu(out, g, u); });
  };
  oc.bound = [](size_t, float ref) { return kTolElementwise * std::fabs(ref); };
  return oc;
}

OpCase make_relu_case(const ActivationCase& c, const OpSeeds& s) {
  auto x = std::make_shared<const std::vector<float>>(random_floats(c.rows * c.cols, s.u32(0), -1, 1));
  OpCase oc;
  oc.op = "relu";
  oc.name = format_string("M %lld cols %lld", (long long)c.rows, (long long)c.cols);
  oc.setup = [c, x](OpTensors& t) {
    const Tensor v = t.inout(c.rows, c.cols, DTYPE_F32, *x);
    return void_call([&be = t.be, v] { be.relu(v); });
  };
  return oc;
}

OpCase make_add_case(const ActivationCase& c, const OpSeeds& s) {
  auto x = std::make_shared<const std::vector<float>>(random_floats(c.rows * c.cols, s.u32(0), -1, 1));
  auto y = std::make_shared<const std::vector<float>>(random_floats(c.rows * c.cols, s.u32(1), -1, 1));
  OpCase oc;
  oc.op = "add";
  oc.name = format_string("M %lld cols %lld", (long long)c.rows, (long long)c.cols);
  oc.setup = [c, x, y](OpTensors& t) {
    const Tensor tx = t.inout(c.rows, c.cols, DTYPE_F32, *x);
    const Tensor ty = t.input(c.rows, c.cols, *y);
    return void_call([&be = t.be, tx, ty] { be.add(tx, ty); });
  };
  return oc;
}

OpCase make_gather_rows_case(const GatherRowsCase& c, const OpSeeds& s) {
  auto x = std::make_shared<const std::vector<float>>(random_floats(c.in_rows * c.cols, s.u32(0), -1, 1));
  std::vector<int64_t> rows = random_indices<int64_t>(c.out_rows, s.u32(1), 0, c.in_rows - 1);
  rows.front() = c.in_rows - 1;  // the last row, and (with repeats) the first
  if (rows.size() > 1) rows.back() = 0;
  OpCase oc;
  oc.op = "gather_rows";
  oc.name = format_string("%lld x %lld -> %lld rows", (long long)c.in_rows, (long long)c.cols, (long long)c.out_rows);
  oc.setup = [c, x, rows](OpTensors& t) {
    const Tensor in = t.input(c.in_rows, c.cols, *x);
    const Tensor out = t.output(c.out_rows, c.cols);
    return void_call([&be = t.be, out, in, rows] { be.gather_rows(out, in, rows); });
  };
  return oc;
}

OpCase make_copy_rows_case(const CopyRowsCase& c, const OpSeeds& s) {
  auto dst0 = std::make_shared<const std::vector<float>>(random_floats(c.dst_rows * c.cols, s.u32(0), -1, 1));
  auto src = std::make_shared<const std::vector<float>>(random_floats(c.src_rows * c.cols, s.u32(1), -1, 1));
  OpCase oc;
  oc.op = "copy_rows";
  oc.name = format_string("%lld rows into %lld at %lld, cols %lld", (long long)c.src_rows, (long long)c.dst_rows,
                          (long long)c.dst_row, (long long)c.cols);
  oc.setup = [c, dst0, src](OpTensors& t) {
    const Tensor dst = t.inout(c.dst_rows, c.cols, DTYPE_F32, *dst0);
    const Tensor from = t.input(c.src_rows, c.cols, *src);
    return void_call([&be = t.be, dst, from, c] { be.copy_rows(dst, c.dst_row, from); });
  };
  return oc;
}

}  // namespace smezo
