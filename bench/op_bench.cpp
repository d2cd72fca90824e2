// The op benchmark (see op_bench.h).
#include "bench/op_bench.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/op_cases.h"
#include "bench/timing_backend.h"
#include "common/check.h"

namespace smezo {

namespace {

std::vector<float> random_values(int64_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

struct Bench {
  TimingBackend& be;
  int reps, warmup;
  std::FILE* out;
  int64_t cases = 0;
  uint32_t seed = 1;

  Tensor tensor(int64_t rows, int64_t cols, float lo, float hi) {
    Tensor t = be.alloc(rows, cols, DTYPE_F32);
    be.upload(t, random_values(rows * cols, seed++, lo, hi).data());
    return t;
  }
  Param param(int64_t rows, int64_t cols, DType dt, const char* name, MaskKind mask, bool trainable,
              float lo, float hi) {
    Param p;
    p.w = be.alloc(rows, cols, be.kind() == BACKEND_CPU ? DTYPE_F32 : dt);
    be.upload(p.w, random_values(rows * cols, seed++, lo, hi).data());
    p.info.name = name;
    p.info.tensor_id = seed;
    p.info.trainable = trainable;
    p.info.mask = mask;
    p.info.threshold = 0.5f * hi;
    p.info.keep_prob = 0.3f;
    p.info.mask_seed = 7;
    return p;
  }
  // Times `op` (the TimingBackend key) over reps calls of run; restore (untimed) before each.
  void time(const char* op, const std::string& what, const std::function<void()>& run,
            const std::function<void()>& restore = nullptr) {
    for (int r = 0; r < warmup + reps; r++) {
      if (r == warmup) be.reset();
      if (restore) restore();
      run();
    }
    const auto it = be.ms().find(op);
    SMEZO_REQUIRE(it != be.ms().end(), "op bench: the timing backend recorded no '%s' for %s", op, what.c_str());
    const double ms = it->second / reps;
    std::fprintf(out, "%-20s %-58s %10.4f ms\n", op, what.c_str(), ms);
    std::fflush(out);
    ++cases;
  }
};

const char* dt_name(const Backend& be, DType dt) { return dtype_name(be.kind() == BACKEND_CPU ? DTYPE_F32 : dt); }

void run_all(Bench& b) {
  TimingBackend& be = b.be;
  for (const EmbeddingCase& c : embedding_cases()) {
    Param table = b.param(c.vocab, c.dim, c.dt, "model.embed_tokens.weight", c.mask, c.trainable, -1, 1);
    Tensor out = be.alloc(c.M, c.dim, DTYPE_F32);
    const std::vector<int32_t> tokens = random_indices<int32_t>(c.M, b.seed++, 0, c.vocab - 1);
    const Probe probe{c.scale, 11};
    b.time("embedding",
           format_string("vocab %lld dim %lld M %lld %s scale %g", (long long)c.vocab, (long long)c.dim, (long long)c.M,
                dt_name(be, c.dt), c.scale),
           [&] { be.embedding(out, table, tokens, probe); });
  }
  for (const PositionEmbeddingCase& c : position_embedding_cases()) {
    Param table = b.param(c.n_pos, c.dim, c.dt, "model.decoder.embed_positions.weight", MASK_DENSE, true, -1, 1);
    Tensor out = b.tensor(c.M, c.dim, -1, 1);
    const std::vector<int32_t> positions = random_indices<int32_t>(c.M, b.seed++, 0, c.n_pos - 1 - c.offset);
    const Probe probe{c.scale, 12};
    b.time("position_embedding",
           format_string("n_pos %lld dim %lld M %lld %s scale %g", (long long)c.n_pos, (long long)c.dim, (long long)c.M,
                dt_name(be, c.dt), c.scale),
           [&] { be.add_position_embedding(out, table, positions, c.offset, probe); });
  }
  for (const NormCase& c : norm_cases()) {
    Param w = b.param(1, c.dim, c.dt, "norm.weight", MASK_DENSE, true, 0.5f, 1.5f);
    Param bias = b.param(1, c.dim, c.dt, "norm.bias", MASK_DENSE, true, -0.5f, 0.5f);
    const std::vector<float> x = random_values(c.M * c.dim, b.seed++, -2, 2);
    Tensor in = be.alloc(c.M, c.dim, DTYPE_F32);
    be.upload(in, x.data());
    Tensor out = c.in_place ? in : be.alloc(c.M, c.dim, DTYPE_F32);
    const Probe probe{c.scale, 13};
    b.time("norm",
           format_string("%s M %lld dim %lld%s %s scale %g%s", c.kind == NORM_RMS ? "rms" : "layer", (long long)c.M,
                (long long)c.dim, c.bias ? " +bias" : "", dt_name(be, c.dt), c.scale, c.in_place ? " in place" : ""),
           [&] { be.norm(out, in, w, c.bias ? &bias : nullptr, c.kind, 1e-5f, probe); },
           [&] { if (c.in_place) be.upload(in, x.data()); });
  }
  for (const RopeCase& c : rope_cases())
    for (RopeStyle style : kRopeStyles) {
      const int64_t cols = c.n_heads * c.head_dim;
      const std::vector<float> x = random_values(c.M * cols, b.seed++, -1, 1);
      Tensor t = be.alloc(c.M, cols, DTYPE_F32);
      const std::vector<int32_t> pos = random_indices<int32_t>(c.M, b.seed++, 0, c.max_pos);
      b.time("rope",
             format_string("M %lld heads %lld head_dim %lld max_pos %d %s", (long long)c.M, (long long)c.n_heads,
                  (long long)c.head_dim, c.max_pos, style == ROPE_ROTATE_HALF ? "half" : "interleaved"),
             [&] { be.rope(t, pos, c.n_heads, c.head_dim, c.theta, style); },
             [&] { be.upload(t, x.data()); });
    }
  for (const ActivationCase& s : swiglu_cases())
    for (bool in_place : {false, true}) {
      Tensor gate = b.tensor(s.rows, s.cols, -8, 8);
      const std::vector<float> up0 = random_values(s.rows * s.cols, b.seed++, -2, 2);
      Tensor up = be.alloc(s.rows, s.cols, DTYPE_F32);
      Tensor out = in_place ? up : be.alloc(s.rows, s.cols, DTYPE_F32);
      b.time("swiglu", format_string("M %lld H %lld%s", (long long)s.rows, (long long)s.cols, in_place ? " in place" : ""),
             [&] { be.swiglu(out, gate, up); }, [&] { be.upload(up, up0.data()); });
    }
  for (const ActivationCase& s : relu_add_cases()) {
    const std::vector<float> x0 = random_values(s.rows * s.cols, b.seed++, -1, 1);
    Tensor x = be.alloc(s.rows, s.cols, DTYPE_F32);
    Tensor y = b.tensor(s.rows, s.cols, -1, 1);
    const std::string what = format_string("M %lld cols %lld", (long long)s.rows, (long long)s.cols);
    auto restore = [&] { be.upload(x, x0.data()); };
    b.time("relu", what, [&] { be.relu(x); }, restore);
    b.time("add", what, [&] { be.add(x, y); }, restore);
  }
  for (const GatherRowsCase& c : gather_rows_cases()) {
    Tensor in = b.tensor(c.in_rows, c.cols, -1, 1);
    Tensor out = be.alloc(c.out_rows, c.cols, DTYPE_F32);
    const std::vector<int64_t> rows = random_indices<int64_t>(c.out_rows, b.seed++, 0, c.in_rows - 1);
    b.time("gather_rows",
           format_string("%lld x %lld -> %lld rows", (long long)c.in_rows, (long long)c.cols, (long long)c.out_rows),
           [&] { be.gather_rows(out, in, rows); });
  }
  for (const LinearCase& c : linear_cases()) {
    Param w = b.param(c.N, c.K, c.dt, "mlp.up_proj.weight", c.mask, c.trainable, -0.5f, 0.5f);
    Param bias = b.param(1, c.N, c.dt, "mlp.up_proj.bias", MASK_DENSE, c.trainable, -1, 1);
    w.info.role = bias.info.role = ROLE_MLP_UP;  // TimingBackend's key: "linear up"
    w.info.noise = bias.info.noise = c.noise;
    Tensor in = b.tensor(c.M, c.K, -1, 1);
    Tensor out = be.alloc(c.M, c.N, DTYPE_F32);
    const Probe probe{c.scale, 14};
    b.time("linear up",
           format_string("M %lld N %lld K %lld %s%s scale %g", (long long)c.M, (long long)c.N, (long long)c.K,
                dt_name(be, c.dt), c.bias ? " +bias" : "", c.scale),
           [&] { be.linear(out, in, w, c.bias ? &bias : nullptr, probe); });
  }
  for (const UpdateCase& c : update_cases()) {
    const std::vector<float> w0 = random_values(c.rows * c.cols, b.seed++, -1, 1);
    Param p = b.param(c.rows, c.cols, DTYPE_BF16, "self_attn.o_proj.weight", c.mask, c.trainable, -1, 1);
    p.info.role = ROLE_ATTN_O;  // TimingBackend's key: "update o"
    b.time("update o",
           format_string("%lld x %lld %s coef %g decay %g%s", (long long)c.rows, (long long)c.cols, dt_name(be, DTYPE_BF16),
                c.coef, c.decay, c.trainable ? "" : " untrainable"),
           [&] { be.update(p, c.coef, c.decay, 15); }, [&] { be.upload(p.w, w0.data()); });
  }
  for (const AbsQuantileCase& c : abs_quantile_cases()) {
    Param p = b.param(c.rows, c.cols, DTYPE_BF16, "weight", MASK_DENSE, true, -1, 1);
    b.time("abs_quantile", format_string("%lld x %lld %s q 0.75", (long long)c.rows, (long long)c.cols, dt_name(be, DTYPE_BF16)),
           [&] { be.abs_quantile(p, 0.75); });
  }
  for (const CopyRowsCase& c : copy_rows_cases()) {
    Tensor dst = b.tensor(c.dst_rows, c.cols, -1, 1);
    Tensor src = b.tensor(c.src_rows, c.cols, -1, 1);
    b.time("copy_rows",
           format_string("%lld rows into %lld at %lld, cols %lld", (long long)c.src_rows, (long long)c.dst_rows,
                (long long)c.dst_row, (long long)c.cols),
           [&] { be.copy_rows(dst, c.dst_row, src); });
  }
}

}  // namespace

int64_t run_op_bench(Backend& backend, const OpBenchOptions& o) {
  SMEZO_REQUIRE(o.reps > 0 && o.warmup >= 0, "op bench: --reps must be positive, --warmup not negative");
  TimingBackend timed(backend);
  std::fprintf(o.out, "op bench: every case of bench/op_cases.h on %s, mean of %d calls after %d warm-up calls\n",
               backend.name(), o.reps, o.warmup);
  Bench b{timed, o.reps, o.warmup, o.out};
  run_all(b);
  return b.cases;
}

}  // namespace smezo
