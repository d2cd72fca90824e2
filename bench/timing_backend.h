// A Backend that forwards every op to another one and adds up the wall time of each op kind
// (`smezo bench --shape ... --profile`, build/cpu_bench). After each op it synchronises the inner backend (a
// one-float download), so on CUDA a time is the op's kernels plus one synchronisation (~10 us):
// a breakdown of where a step goes, not a replacement for Nsight. Linears and updates are split
// by the parameter's role (q, gate, head, norm, ...). With split_linear_noise on the CPU backend
// a linear's time is cut in two: "linear q noise", forming the perturbed weight rows
// (CpuBackend::set_linear_noise_timer), and "linear q", the rest (packing, sgemm, writing out).
// profile_split sums the op kinds into the four parts `smezo bench --profile` prints.
// Every virtual of Backend is forwarded, the ones with a default too (upload_stored,
// free_memory_bytes, linear_group): a default here would run the base class's version instead of the inner
// backend's (a host fp32 copy of each tensor, "free memory unknown").
// tests/test_model_bench.cpp checks the forwarding.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "cpu/cpu_backend.h"

namespace smezo {

// A step cut into its parts (GEMM, noise, attention, rest), in ms per step (means over the reps).
// gemm + noise + attention + rest = step.
struct ProfileSplit {
  double step_ms = 0;         // the step's wall time
  double gemm_ms = 0;         // the linears less their noise: packing, sgemm, writing the output
  double noise_ms = 0;        // forming perturbed weights inside the linears, and the updates
  double attention_ms = 0;    // the attention op
  double rest_ms = 0;         // every other op (norm, rope, swiglu, embedding, ...) and outside_ops_ms
  double outside_ops_ms = 0;  // the step's time in no op: the loss on the host, the optimizer's bookkeeping
};

// op_ms: milliseconds per op kind (TimingBackend::ms) summed over reps steps that took
// step_ms_total together.
inline ProfileSplit profile_split(const std::map<std::string, double>& op_ms, double step_ms_total, int reps) {
  auto starts = [](const std::string& s, const char* p) { return s.rfind(p, 0) == 0; };
  auto ends = [](const std::string& s, const std::string& x) {
    return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  ProfileSplit p;
  const double n = reps > 0 ? reps : 1;
  double ops = 0;
  for (const auto& kv : op_ms) {
    const double ms = kv.second / n;
    ops += ms;
    if (starts(kv.first, "update ") || (starts(kv.first, "linear ") && ends(kv.first, " noise"))) p.noise_ms += ms;
    else if (starts(kv.first, "linear ")) p.gemm_ms += ms;
    else if (kv.first == "attention") p.attention_ms += ms;
  }
  p.step_ms = step_ms_total / n;
  p.outside_ops_ms = p.step_ms - ops;
  p.rest_ms = p.step_ms - p.gemm_ms - p.noise_ms - p.attention_ms;
  return p;
}

class TimingBackend : public Backend {
 public:
  explicit TimingBackend(Backend& inner, bool split_linear_noise = false)
      : inner_(inner), one_(inner.alloc(1, 1, DTYPE_F32)) {
    cpu_ = split_linear_noise ? dynamic_cast<CpuBackend*>(&inner) : nullptr;
    if (cpu_) cpu_->set_linear_noise_timer(&linear_noise_ms_);
  }
  ~TimingBackend() override {
    if (cpu_) cpu_->set_linear_noise_timer(nullptr);
  }
  TimingBackend(const TimingBackend&) = delete;
  TimingBackend& operator=(const TimingBackend&) = delete;
  const char* name() const override { return inner_.name(); }
  BackendKind kind() const override { return inner_.kind(); }
  BackendMemoryPlan memory_plan() const override { return inner_.memory_plan(); }

  Tensor alloc(int64_t rows, int64_t cols, DType dtype) override { return inner_.alloc(rows, cols, dtype); }
  void upload(const Tensor& dst, const float* src) override { inner_.upload(dst, src); }
  void download(const Tensor& src, float* dst) override { timed("download", [&] { inner_.download(src, dst); }); }
  int64_t bytes_allocated() const override { return inner_.bytes_allocated(); }
  int64_t upload_stored(const Tensor& dst, const void* src, DType src_dtype) override {
    return inner_.upload_stored(dst, src, src_dtype);
  }
  int64_t free_memory_bytes() const override { return inner_.free_memory_bytes(); }

  void embedding(const Tensor& out, const Param& table, const std::vector<int32_t>& tokens,
                 const Probe& probe) override {
    timed("embedding", [&] { inner_.embedding(out, table, tokens, probe); });
  }
  void add_position_embedding(const Tensor& out, const Param& table, const std::vector<int32_t>& positions,
                              int64_t offset, const Probe& probe) override {
    timed("position_embedding", [&] { inner_.add_position_embedding(out, table, positions, offset, probe); });
  }
  void norm(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias, NormKind kind, float eps,
            const Probe& probe) override {
    timed("norm", [&] { inner_.norm(out, in, weight, bias, kind, eps, probe); });
  }
  void linear(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
              const Probe& probe) override {
    const std::string key = "linear " + kind_of(weight.info);
    const double noise_before = linear_noise_ms_;
    timed(key, [&] { inner_.linear(out, in, weight, bias, probe); });
    const double noise = linear_noise_ms_ - noise_before;
    if (noise > 0) {
      ms_[key] -= noise;
      ms_[key + " noise"] += noise;
    }
  }
  // A group as one op ("linear q+k+v"), as the inner backend runs it; item by item when split_linear_noise
  // splits a CPU linear's noise (the CPU's linear_group is linear() item by item anyway).
  void linear_group(const std::vector<LinearItem>& items, const Tensor& in, const Probe& probe) override {
    if (cpu_) return Backend::linear_group(items, in, probe);
    std::string key = "linear ";
    for (size_t i = 0; i < items.size(); i++) key += (i > 0 ? "+" : "") + kind_of(items[i].weight->info);
    timed(key, [&] { inner_.linear_group(items, in, probe); });
  }
  void rope(const Tensor& x, const std::vector<int32_t>& positions, int64_t n_heads, const std::vector<float>& inv_freq,
            RopeStyle style) override {
    timed("rope", [&] { inner_.rope(x, positions, n_heads, inv_freq, style); });
  }
  void attention(const AttentionParams& p) override { timed("attention", [&] { inner_.attention(p); }); }
  void swiglu(const Tensor& out, const Tensor& gate, const Tensor& up) override {
    timed("swiglu", [&] { inner_.swiglu(out, gate, up); });
  }
  void relu(const Tensor& x) override { timed("relu", [&] { inner_.relu(x); }); }
  void add(const Tensor& x, const Tensor& y) override { timed("add", [&] { inner_.add(x, y); }); }
  void add_scaled(const Tensor& x, const Tensor& y, float alpha) override {
    timed("add_scaled", [&] { inner_.add_scaled(x, y, alpha); });
  }
  void gather_rows(const Tensor& out, const Tensor& in, const std::vector<int64_t>& rows) override {
    timed("gather_rows", [&] { inner_.gather_rows(out, in, rows); });
  }
  void copy_rows(const Tensor& dst, int64_t dst_row, const Tensor& src) override {
    timed("copy_rows", [&] { inner_.copy_rows(dst, dst_row, src); });
  }
  void update(Param& p, float coef, float decay, uint64_t seed) override {
    timed("update " + kind_of(p.info), [&] { inner_.update(p, coef, decay, seed); });
  }
  // the fold: held by the inner backend, whose linear applies them (in the linear's time)
  void defer_updates(Param& p, const std::vector<UpdateArgs>& updates) override { inner_.defer_updates(p, updates); }
  void flush_updates() override { timed("update flush", [&] { inner_.flush_updates(); }); }
  float abs_quantile(const Param& p, double q) override {
    float h = 0;
    timed("abs_quantile", [&] { h = inner_.abs_quantile(p, q); });
    return h;
  }

  void reset() { ms_.clear(); }
  // Milliseconds per op kind since the last reset.
  const std::map<std::string, double>& ms() const { return ms_; }
  // The split of the reps steps since the last reset, which took step_ms_total together, then
  // one line per op kind, largest first, with its share of the step (stderr; ms per step).
  void print_profile(const std::string& title, double step_ms_total, int reps) const {
    const ProfileSplit p = profile_split(ms_, step_ms_total, reps);
    const double n = reps > 0 ? reps : 1;
    auto pct = [&](double ms) { return p.step_ms > 0 ? 100 * ms / p.step_ms : 0.0; };
    std::fprintf(stderr, "profile: %s, mean of %d reps: %.3f ms a step\n", title.c_str(), reps, p.step_ms);
    std::fprintf(stderr, "  split: GEMM %.2f ms %.1f%% | noise %.2f ms %.1f%% | attention %.2f ms %.1f%% | "
                 "rest %.2f ms %.1f%% (%.2f of it outside ops)\n", p.gemm_ms, pct(p.gemm_ms), p.noise_ms,
                 pct(p.noise_ms), p.attention_ms, pct(p.attention_ms), p.rest_ms, pct(p.rest_ms), p.outside_ops_ms);
    std::vector<std::pair<double, std::string>> rows;
    for (const auto& kv : ms_) rows.push_back({kv.second / n, kv.first});
    std::sort(rows.rbegin(), rows.rend());
    for (const auto& r : rows)
      std::fprintf(stderr, "  %-28s %10.3f ms %5.1f%%\n", r.second.c_str(), r.first, pct(r.first));
  }

 private:
  // The parameter's role (tensor.h): "q", "gate", "head", "norm bias", ...
  static std::string kind_of(const ParamInfo& info) {
    return std::string(param_role_name(info.role)) + (info.is_bias ? " bias" : "");
  }
  template <typename Fn>
  void timed(const std::string& key, Fn fn) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    float v;
    inner_.download(one_, &v);
    ms_[key] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  Backend& inner_;
  Tensor one_;
  std::map<std::string, double> ms_;
  CpuBackend* cpu_ = nullptr;    // the inner backend, when split_linear_noise and it is the CPU's
  double linear_noise_ms_ = 0;   // its linears' noise time so far
};

}  // namespace smezo
