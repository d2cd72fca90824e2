// A Backend that forwards every op to another one and adds up the wall time of each op kind
// (`smezo bench --shape ... --profile`, build/cpu_bench). After each op it synchronises the inner backend (a
// one-float download), so on CUDA a time is the op's kernels plus one synchronisation (~10 us):
// a breakdown of where a step goes, not a replacement for Nsight. Linears and updates are split
// by the parameter's role (q, gate, head, norm, ...).
// Every virtual of Backend is forwarded, the ones with a default too (upload_stored,
// free_memory_bytes): a default here would run the base class's version instead of the inner
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

namespace smezo {

class TimingBackend : public Backend {
 public:
  explicit TimingBackend(Backend& inner) : inner_(inner), one_(inner.alloc(1, 1, DTYPE_F32)) {}
  const char* name() const override { return inner_.name(); }
  BackendKind kind() const override { return inner_.kind(); }

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
    timed("linear " + kind_of(weight.info), [&] { inner_.linear(out, in, weight, bias, probe); });
  }
  void rope(const Tensor& x, const std::vector<int32_t>& positions, int64_t n_heads, int64_t head_dim, float theta,
            RopeStyle style) override {
    timed("rope", [&] { inner_.rope(x, positions, n_heads, head_dim, theta, style); });
  }
  void attention(const AttentionParams& p) override { timed("attention", [&] { inner_.attention(p); }); }
  void swiglu(const Tensor& out, const Tensor& gate, const Tensor& up) override {
    timed("swiglu", [&] { inner_.swiglu(out, gate, up); });
  }
  void relu(const Tensor& x) override { timed("relu", [&] { inner_.relu(x); }); }
  void add(const Tensor& x, const Tensor& y) override { timed("add", [&] { inner_.add(x, y); }); }
  void gather_rows(const Tensor& out, const Tensor& in, const std::vector<int64_t>& rows) override {
    timed("gather_rows", [&] { inner_.gather_rows(out, in, rows); });
  }
  void copy_rows(const Tensor& dst, int64_t dst_row, const Tensor& src) override {
    timed("copy_rows", [&] { inner_.copy_rows(dst, dst_row, src); });
  }
  void update(Param& p, float coef, float decay, uint64_t seed) override {
    timed("update " + kind_of(p.info), [&] { inner_.update(p, coef, decay, seed); });
  }
  float abs_quantile(const Param& p, double q) override {
    float h = 0;
    timed("abs_quantile", [&] { h = inner_.abs_quantile(p, q); });
    return h;
  }

  void reset() { ms_.clear(); }
  // Milliseconds per op kind since the last reset.
  const std::map<std::string, double>& ms() const { return ms_; }
  // One line per op kind, largest first, with its share of the total (stderr).
  void print_profile(const std::string& title) const {
    std::vector<std::pair<double, std::string>> rows;
    double total = 0;
    for (const auto& kv : ms_) {
      rows.push_back({kv.second, kv.first});
      total += kv.second;
    }
    std::sort(rows.rbegin(), rows.rend());
    std::fprintf(stderr, "profile: %s, last rep, %.3f ms in ops\n", title.c_str(), total);
    for (const auto& r : rows)
      std::fprintf(stderr, "  %-28s %10.3f ms %5.1f%%\n", r.second.c_str(), r.first, total > 0 ? 100 * r.first / total : 0.0);
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
};

}  // namespace smezo
