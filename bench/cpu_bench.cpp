// CPU backend throughput at a real model's shape, with random weights (no file needed), and
// where the time goes, op by op. Default shape: SmolLM2-135M (LLaMA, 30 layers, dim 576,
// hidden 1536, 9 heads / 3 kv heads of 64, vocab 49152, tied head) at a training batch of
// 16 sequences x 256 tokens with one logit row per sequence.
//
//   make bench-cpu && ./build/cpu_bench [--batch 16] [--len 256] [--layers 30] [--reps 2]
//
// Prints forward tokens/s unperturbed and under a dense probe (every weight perturbed, as in
// an SPSA step), and the seconds spent in each backend op over all runs.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <omp.h>

#include "cpu/cpu_backend.h"
#include "model/model.h"
#include "model_fixture.h"

using namespace smezo;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A Backend that forwards every call to another and adds up the wall time per op.
class TimedBackend : public Backend {
 public:
  explicit TimedBackend(Backend& inner) : inner_(inner) {}
  std::map<std::string, double> seconds;

  const char* name() const override { return inner_.name(); }
  BackendKind kind() const override { return inner_.kind(); }
  Tensor alloc(int64_t rows, int64_t cols, DType dtype) override { return inner_.alloc(rows, cols, dtype); }
  void upload(const Tensor& dst, const float* src) override { inner_.upload(dst, src); }
  void download(const Tensor& src, float* dst) override { time("download", [&] { inner_.download(src, dst); }); }
  int64_t bytes_allocated() const override { return inner_.bytes_allocated(); }
  void embedding(const Tensor& out, const Param& table, const std::vector<int32_t>& tokens,
                 const Probe& probe) override {
    time("embedding", [&] { inner_.embedding(out, table, tokens, probe); });
  }
  void add_position_embedding(const Tensor& out, const Param& table, const std::vector<int32_t>& positions,
                              int64_t offset, const Probe& probe) override {
    time("embedding", [&] { inner_.add_position_embedding(out, table, positions, offset, probe); });
  }
  void norm(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias, NormKind kind,
            float eps, const Probe& probe) override {
    time("norm", [&] { inner_.norm(out, in, weight, bias, kind, eps, probe); });
  }
  void linear(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
              const Probe& probe) override {
    time(out.rows == in.rows && weight.w.rows > 4 * in.cols ? "linear (LM head)" : "linear",
         [&] { inner_.linear(out, in, weight, bias, probe); });
  }
  void rope(const Tensor& x, const std::vector<int32_t>& positions, int64_t n_heads, int64_t head_dim,
            float theta, RopeStyle style) override {
    time("rope", [&] { inner_.rope(x, positions, n_heads, head_dim, theta, style); });
  }
  void attention(const AttentionParams& p) override { time("attention", [&] { inner_.attention(p); }); }
  void swiglu(const Tensor& out, const Tensor& gate, const Tensor& up) override {
    time("swiglu/relu/add", [&] { inner_.swiglu(out, gate, up); });
  }
  void relu(const Tensor& x) override { time("swiglu/relu/add", [&] { inner_.relu(x); }); }
  void add(const Tensor& x, const Tensor& y) override { time("swiglu/relu/add", [&] { inner_.add(x, y); }); }
  void gather_rows(const Tensor& out, const Tensor& in, const std::vector<int64_t>& rows) override {
    time("gather/copy rows", [&] { inner_.gather_rows(out, in, rows); });
  }
  void copy_rows(const Tensor& dst, int64_t dst_row, const Tensor& src) override {
    time("gather/copy rows", [&] { inner_.copy_rows(dst, dst_row, src); });
  }
  void update(Param& p, float coef, float decay, uint64_t seed) override {
    time("update", [&] { inner_.update(p, coef, decay, seed); });
  }
  float abs_quantile(const Param& p, double q) override { return inner_.abs_quantile(p, q); }

 private:
  template <typename Fn>
  void time(const char* op, Fn fn) {
    const double t0 = now_s();
    fn();
    seconds[op] += now_s() - t0;
  }
  Backend& inner_;
};

int64_t arg(int argc, char** argv, const char* name, int64_t fallback) {
  for (int i = 1; i + 1 < argc; i++)
    if (std::strcmp(argv[i], name) == 0) return std::atoll(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t batch = arg(argc, argv, "--batch", 16), len = arg(argc, argv, "--len", 256);
  const int64_t reps = arg(argc, argv, "--reps", 2);
  ModelConfig c;
  c.arch = ARCH_LLAMA;
  c.dim = 576;
  c.hidden_dim = 1536;
  c.n_layers = arg(argc, argv, "--layers", 30);
  c.n_heads = 9;
  c.n_kv_heads = 3;
  c.head_dim = 64;
  c.vocab_size = 49152;
  c.max_seq_len = 2048;
  c.rope_theta = 100000.0f;
  c.tied_lm_head = true;
  std::printf("SmolLM2-135M shape (%lld layers), random weights; batch %lld x %lld tokens; %d OpenMP threads\n",
              (long long)c.n_layers, (long long)batch, (long long)len, omp_get_max_threads());
  CpuBackend cpu;
  TimedBackend timed(cpu);
  Model model(smezo_test::random_weight_source(c, 1, 0.02f), timed, DTYPE_F32, batch * len, batch);
  std::printf("%lld parameters; linear path for [1536, 576]: %s (OpenBLAS %s)\n",
              (long long)model.parameter_count(), cpu_linear_path(1536, 576), gemm_blas_core());
  ForwardBatch b;
  for (int64_t s = 0; s < batch; s++) {
    b.seq_lens.push_back(len);
    for (int64_t i = 0; i < len; i++) b.tokens.push_back((int32_t)((s * 7919 + i * 104729) % c.vocab_size));
    b.logit_rows.push_back(s * len + len - 1);
  }
  std::vector<float> logits;
  model.forward(b, Probe{}, &logits);  // warm-up: first-use checks and allocations
  timed.seconds.clear();
  for (float scale : {0.0f, 1e-3f}) {
    const double t0 = now_s();
    for (int64_t r = 0; r < reps; r++) model.forward(b, Probe{scale, 42 + (uint64_t)r}, &logits);
    const double s = (now_s() - t0) / reps;
    std::printf("forward %-11s %8.3f s  %8.1f tokens/s\n", scale == 0.0f ? "unperturbed" : "perturbed", s,
                batch * len / s);
  }
  double total = 0.0;
  for (const auto& kv : timed.seconds) total += kv.second;
  std::printf("time per op over all %lld forward passes:\n", (long long)(2 * reps));
  for (const auto& kv : timed.seconds)
    std::printf("  %-18s %8.3f s  %5.1f%%\n", kv.first.c_str(), kv.second, 100.0 * kv.second / total);
  return 0;
}
