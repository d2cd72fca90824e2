// The CPU reference backend, fp32 storage: runs the whole program without a GPU and is the reference
// every CUDA op is tested against. The linear goes through OpenBLAS; the other ops are readable loops,
// OpenMP where it pays. Results are bit-identical for any thread count, and a token row's results
// never depend on the other rows in the call. One file per op family, named as its cuda/ twin
// (cpu_backend.cpp: memory; linear.cpp over cpu_gemm.cpp; optimizer.cpp over noise_path.h).
#pragma once

#include <memory>
#include <vector>

#include "cpu/cpu_gemm.h"
#include "backend/backend.h"

namespace smezo {

// CpuBackend::memory_plan() (linear.cpp), also for estimates without a CPU backend (smezo info).
BackendMemoryPlan cpu_memory_plan();

class CpuBackend : public Backend {
 public:
  CpuBackend();  // picks the noise path (noise_path.h)
  const char* name() const override { return "cpu"; }
  BackendKind kind() const override { return BACKEND_CPU; }
  BackendMemoryPlan memory_plan() const override { return cpu_memory_plan(); }

  Tensor alloc(int64_t rows, int64_t cols, DType dtype) override;
  Tensor alloc_packed(int64_t rows, int64_t cols, uint32_t packed_type, int64_t row_bytes, const void* src) override;
  void upload(const Tensor& dst, const float* src) override;
  void download(const Tensor& src, float* dst) override;
  int64_t bytes_allocated() const override { return bytes_; }
  // Converts straight from src into the tensor (no host copy); free memory is MemAvailable.
  int64_t upload_stored(const Tensor& dst, const void* src, DType src_dtype) override;
  int64_t free_memory_bytes() const override;

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
            const std::vector<float>& inv_freq, RopeStyle style) override;
  void attention(const AttentionParams& p) override;
  void swiglu(const Tensor& out, const Tensor& gate, const Tensor& up) override;
  void relu(const Tensor& x) override;
  void add(const Tensor& x, const Tensor& y) override;
  void add_scaled(const Tensor& x, const Tensor& y, float alpha) override;
  void gather_rows(const Tensor& out, const Tensor& in, const std::vector<int64_t>& rows) override;
  void copy_rows(const Tensor& dst, int64_t dst_row, const Tensor& src) override;

  void update(Param& p, float coef, float decay, uint64_t seed) override;
  float abs_quantile(const Param& p, double q) override;
  // The fold (pending_updates.h): linear.cpp applies a held update row by row as it forms W'.
  void defer_updates(Param& p, const std::vector<UpdateArgs>& updates) override { held_.hold(*this, p, updates); }
  void flush_updates() override { held_.flush(*this); }
  const PendingUpdates& held_updates() const { return held_; }

  // --profile: while set, linear adds the wall ms it spends forming perturbed weight rows.
  void set_linear_noise_timer(double* ms) { linear_noise_ms_ = ms; }

 private:
  std::vector<std::unique_ptr<float[]>> blocks_;
  int64_t bytes_ = 0;
  // linear's workspaces: packed input rows, one group of perturbed weight rows; [1]: pair's - half
  GemmPanel linear_rows_[2];
  std::vector<float> linear_weights_[2];
  double* linear_noise_ms_ = nullptr;
  PendingUpdates held_;  // the linear weights' updates held for the fold
  // Rows [g0, g0 + rows) of W' into linear_weights_ (the held updates `fold` applied to them first); a
  // packed weight's rows dequantised into linear_weights_[0] (frozen: no probe, no fold).
  void form_weight_rows(const Param& weight, const Probe& probe, int64_t g0, int64_t rows,
                        const PendingUpdates::Entry& fold);
};

// Elements [start, start + count) of a parameter under a probe: w + scale * m(w) * z, or w.
void cpu_read_param(const Param& p, const Probe& probe, int64_t start, int64_t count, float* out);
// Both halves of a pair from one noise generation, bit for bit cpu_read_param of each half.
void cpu_read_param_pair(const Param& p, const Probe& pair, int64_t start, int64_t count, float* out_plus,
                         float* out_minus);

// out(M, N) = in(M, K) · W'(N, K)ᵀ (+ bias), plain loops, k summed in order: CpuBackend::linear's test.
void cpu_linear_reference(const Tensor& out, const Tensor& in, const Param& weight,
                          const Param* bias, const Probe& probe);

// Whether an op of about this many cycles is worth an OpenMP team (ops under ~1.5 ms: one thread).
inline bool cpu_parallel_worth(int64_t cycles) { return cycles >= (int64_t{1} << 22); }

// The sgemm row scheme CpuBackend::linear uses for an (N, K) weight here, or "reference".
const char* cpu_linear_path(int64_t N, int64_t K);

}  // namespace smezo
