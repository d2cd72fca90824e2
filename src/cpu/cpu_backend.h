// The CPU reference backend: fp32 storage, plain readable loops. It runs the whole program
// (forward, noise, masks, updates) without a GPU and is the reference every CUDA op is
// tested against. One op family per file: cpu_memory.cpp, cpu_embedding_norm.cpp,
// cpu_linear.cpp, cpu_attention.cpp, cpu_elementwise.cpp, cpu_optimizer.cpp.
#pragma once

#include <memory>
#include <vector>

#include "model/backend.h"

namespace smezo {

class CpuBackend : public Backend {
 public:
  const char* name() const override { return "cpu"; }

  Tensor alloc(int64_t rows, int64_t cols, DType dtype) override;
  void upload(const Tensor& dst, const float* src) override;
  void download(const Tensor& src, float* dst) override;
  int64_t bytes_allocated() const override { return bytes_; }

  void embedding(const Tensor& out, const Param& table, const std::vector<int32_t>& tokens,
                 const Probe& probe) override;
  void add_position_embedding(const Tensor& out, const Param& table,
                              const std::vector<int32_t>& positions, int64_t offset,
                              const Probe& probe) override;
  void norm(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
            NormKind kind, float eps, const Probe& probe) override;
  void linear(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
              const Probe& probe) override;
  void rope(const Tensor& x, const std::vector<int32_t>& positions, int64_t n_heads,
            int64_t head_dim, float theta, RopeStyle style) override;
  void attention(const AttentionParams& p) override;
  void swiglu(const Tensor& out, const Tensor& gate, const Tensor& up) override;
  void relu(const Tensor& x) override;
  void add(const Tensor& x, const Tensor& y) override;
  void gather_rows(const Tensor& out, const Tensor& in, const std::vector<int64_t>& rows) override;
  void copy_rows(const Tensor& dst, int64_t dst_row, const Tensor& src) override;

  void update(Param& p, float coef, float decay, uint64_t seed) override;
  float abs_quantile(const Param& p, double q) override;

 private:
  std::vector<std::unique_ptr<float[]>> blocks_;
  int64_t bytes_ = 0;
};

// Effective values of elements [start, start + count) of a parameter under a probe:
// w + scale * m(w) * z (src/common/noise_spec.h), or w itself when unperturbed.
void cpu_read_param(const Param& p, const Probe& probe, int64_t start, int64_t count, float* out);

}  // namespace smezo
