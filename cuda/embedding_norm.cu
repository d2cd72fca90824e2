// CUDA ops: token embedding, learned position embedding (OPT) and RMSNorm/LayerNorm; parameters read
// through the probe exactly as cpu_read_param does. Reference: src/cpu/embedding_norm.cpp.
//   embed_rows_kernel  one thread per noise group (8 table elements) of a row; gathers (or adds)
//                      rows as fp32. With one row it also materialises a norm's effective
//                      weight/bias once per launch, so norm blocks never regenerate z.
//   norm_kernel        one block per row, fp32; LayerNorm takes the mean first (two passes, as the
//                      CPU does). Safe in place (out == in).
#include <algorithm>
#include <vector>

#include "common/check.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/device_utils.cuh"
#include "cuda/packed_dequant.h"

namespace smezo {

namespace {  // internal linkage: kernel names cannot clash across files

struct EmbedParams {
  float* out = nullptr;           // (rows, dim) fp32
  const void* table = nullptr;    // (table_rows, dim) in the storage dtype
  const int32_t* ids = nullptr;   // (rows): row m takes table row ids[m] + offset (nullptr: m + offset)
  int64_t offset = 0;
  int64_t rows = 0;
  int64_t dim = 0;
  bool accumulate = false;        // out += row instead of out = row
  ProbeArgs probe;
};

struct NormParams {
  float* out = nullptr;           // (rows, dim)
  const float* in = nullptr;      // (rows, dim); may equal out
  const float* weight = nullptr;  // (dim) effective (perturbed) weight, fp32
  const float* bias = nullptr;    // (dim) or nullptr
  int64_t rows = 0;
  int64_t dim = 0;
  float eps = 0.0f;
  bool layer_norm = false;        // subtract the mean (LayerNorm) or not (RMSNorm)
};

// Noise groups a row of `dim` elements can touch (a row may start at the last element of a group).
__host__ __device__ __forceinline__ int64_t groups_per_row(int64_t dim) { return (dim + 6) / 8 + 1; }

// --- kernels

template <typename T>
__global__ void embed_rows_kernel(EmbedParams p) {
  const T* table = static_cast<const T*>(p.table);
  const int64_t gpr = groups_per_row(p.dim);
  const int64_t total = p.rows * gpr;
  SMEZO_GRID_STRIDE(t, total) {
    const int64_t m = t / gpr;
    const int64_t row = (p.ids != nullptr ? p.ids[m] : m) + p.offset;
    const int64_t begin = row * p.dim, end = begin + p.dim;  // element indices in the table
    const int64_t group = begin / 8 + (t - m * gpr);
    const int64_t first = 8 * group;
    if (first >= end) continue;
    float w[8];
    load4(table, first, end, w);  // lanes before `begin` belong to the previous row: ignored
    load4(table, first + 4, end, w + 4);
    if (p.probe.scale != 0.0f) {
      bool keep[8];
      if (mask_keep8(p.probe.mask, w, group, keep)) {
        float z[8];
        noise_z8(p.probe.noise, p.probe.seed, p.probe.mask.tensor_id, group, z);
#pragma unroll
        for (int l = 0; l < 8; ++l) w[l] = perturbed_value(w[l], z[l], p.probe.scale, keep[l]);
      }
    }
    float* out = p.out + m * p.dim;
#pragma unroll
    for (int l = 0; l < 8; ++l) {
      const int64_t idx = first + l;  // table element; column idx - begin of this row
      if (idx < begin || idx >= end) continue;
      float* o = out + (idx - begin);
      *o = p.accumulate ? fp_add(*o, w[l]) : w[l];
    }
  }
}

__global__ void norm_kernel(NormParams p) {
  const float dim_f = static_cast<float>(p.dim);
  for (int64_t m = blockIdx.x; m < p.rows; m += gridDim.x) {
    const float* x = p.in + m * p.dim;
    float* y = p.out + m * p.dim;
    float mean = 0.0f;
    if (p.layer_norm) {
      float s = 0.0f;
      for (int64_t d = threadIdx.x; d < p.dim; d += blockDim.x) s += x[d];
      mean = block_reduce_sum(s) / dim_f;
    }
    float v = 0.0f;
    for (int64_t d = threadIdx.x; d < p.dim; d += blockDim.x) {
      const float c = x[d] - mean;
      v = fmaf(c, c, v);
    }
    const float var = block_reduce_sum(v);  // ends with a barrier: every read of x is done
    const float inv = 1.0f / sqrtf(var / dim_f + p.eps);
    for (int64_t d = threadIdx.x; d < p.dim; d += blockDim.x) {
      const float b = p.bias != nullptr ? p.bias[d] : 0.0f;
      y[d] = fp_add(fp_mul(fp_mul(fp_sub(x[d], mean), inv), p.weight[d]), b);
    }
  }
}

// --- launcher

constexpr int kEmbedBlock = 256;

void launch_embed_rows(const EmbedParams& p, DType dtype, cudaStream_t stream) {
  const int64_t total = p.rows * groups_per_row(p.dim);
  if (total == 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    embed_rows_kernel<T><<<grid_blocks(total, kEmbedBlock), kEmbedBlock, 0, stream>>>(p);
    CUDA_CHECK_LAUNCH();
  });
}

// A (1, n) parameter's fp32 values under the probe: stored fp32 data if unperturbed, else into `dst`.
const float* effective_vector(const Param& param, const Probe& probe, float* dst,
                              cudaStream_t stream) {
  const ProbeArgs args = probe_args(param, probe);
  if (args.scale == 0.0f && param.w.dtype == DTYPE_F32) return param.w.f32();
  EmbedParams e;
  e.out = dst;
  e.table = param.w.data;
  e.rows = 1;
  e.dim = param.w.numel();
  e.probe = args;
  launch_embed_rows(e, param.w.dtype, stream);
  return dst;
}

void require_table(const Tensor& out, const Param& table, const char* op) {
  SMEZO_REQUIRE(out.dtype == DTYPE_F32, "%s: output must be fp32 (got %s)", op, dtype_name(out.dtype));
  SMEZO_REQUIRE(out.cols == table.w.cols,
                "%s: output has %lld columns, table %s has %lld", op, (long long)out.cols,
                table.info.name.c_str(), (long long)table.w.cols);
}

}  // namespace

void CudaBackend::embedding(const Tensor& out, const Param& table,
                            const std::vector<int32_t>& tokens, const Probe& probe) {
  require_table(out, table, "embedding");
  SMEZO_REQUIRE(out.rows == static_cast<int64_t>(tokens.size()),
                "embedding: %lld output rows for %zu tokens", (long long)out.rows, tokens.size());
  for (int32_t tok : tokens)
    SMEZO_REQUIRE(tok >= 0 && tok < table.w.rows, "token id %d outside the vocabulary (%lld)", tok,
                  (long long)table.w.rows);
  SMEZO_REQUIRE(!(table.w.packed() && probe.scale != 0.0f && table.info.trainable), "%s is packed (--weights "
                "packed) and cannot be perturbed", table.info.name.c_str());
  if (out.rows == 0) return;
  const int32_t* ids =
      static_cast<const int32_t*>(device_copy(SLOT_TOKENS, tokens.data(), tokens.size() * sizeof(int32_t)));
  if (table.w.packed())  // the gathered rows dequantised (packed_dequant.cu); --tune scales: its scales under the probe
    return launch_dequant_packed(DTYPE_F32, out.data, table, ids, 0, out.rows, probe, stream_);
  EmbedParams e;
  e.out = out.f32();
  e.table = table.w.data;
  e.ids = ids;
  e.rows = out.rows;
  e.dim = out.cols;
  e.probe = probe_args(table, probe);
  launch_embed_rows(e, table.w.dtype, stream_);
}

void CudaBackend::add_position_embedding(const Tensor& out, const Param& table,
                                         const std::vector<int32_t>& positions, int64_t offset,
                                         const Probe& probe) {
  require_table(out, table, "add_position_embedding");
  SMEZO_REQUIRE(static_cast<int64_t>(positions.size()) >= out.rows,
                "add_position_embedding: %zu positions for %lld rows", positions.size(),
                (long long)out.rows);
  for (int64_t m = 0; m < out.rows; ++m) {
    const int64_t idx = positions[m] + offset;
    SMEZO_REQUIRE(idx >= 0 && idx < table.w.rows, "position %d past the learned position table",
                  positions[m]);
  }
  SMEZO_REQUIRE(!table.w.packed(), "%s: a packed position table is not read on the CUDA backend ---> HINT: use "
                "--weights dequantized", table.info.name.c_str());
  if (out.rows == 0) return;
  EmbedParams e;
  e.out = out.f32();
  e.table = table.w.data;
  e.ids = static_cast<const int32_t*>(
      device_copy(SLOT_POSITIONS, positions.data(), static_cast<size_t>(out.rows) * sizeof(int32_t)));
  e.offset = offset;
  e.rows = out.rows;
  e.dim = out.cols;
  e.accumulate = true;
  e.probe = probe_args(table, probe);
  launch_embed_rows(e, table.w.dtype, stream_);
}

void CudaBackend::norm(const Tensor& out, const Tensor& in, const Param& weight, const Param* bias,
                       NormKind kind, float eps, const Probe& probe) {
  const int64_t dim = in.cols;
  SMEZO_REQUIRE(in.dtype == DTYPE_F32 && out.dtype == DTYPE_F32, "norm: activations must be fp32");
  SMEZO_REQUIRE(out.rows == in.rows && out.cols == dim, "norm: output [%lld, %lld] for input [%lld, %lld]",
                (long long)out.rows, (long long)out.cols, (long long)in.rows, (long long)dim);
  SMEZO_REQUIRE(weight.w.numel() == dim, "norm: weight %s has %lld entries, activations %lld",
                weight.info.name.c_str(), (long long)weight.w.numel(), (long long)dim);
  SMEZO_REQUIRE(bias == nullptr || bias->w.numel() == dim,
                "norm: bias %s has %lld entries, activations %lld", bias->info.name.c_str(),
                (long long)bias->w.numel(), (long long)dim);
  if (in.rows == 0 || dim == 0) return;
  // Effective weight and bias, once per launch (aligned slots in the scratch buffer).
  const int64_t slot = ceil_div(dim, 64) * 64;
  float* vec = static_cast<float*>(scratch(static_cast<size_t>(2 * slot) * sizeof(float)));
  NormParams p;
  p.out = out.f32();
  p.in = in.f32();
  p.weight = effective_vector(weight, probe, vec, stream_);
  p.bias = bias != nullptr ? effective_vector(*bias, probe, vec + slot, stream_) : nullptr;
  p.rows = in.rows;
  p.dim = dim;
  p.eps = eps;
  p.layer_norm = kind == NORM_LAYER;
  // About 8 elements per thread, 32..1024 threads.
  const int block = static_cast<int>(std::min<int64_t>(1024, std::max<int64_t>(32, ceil_div(dim, 8 * 32) * 32)));
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(in.rows, 65536));
  norm_kernel<<<grid, block, 0, stream_>>>(p);
  CUDA_CHECK_LAUNCH();
}

}  // namespace smezo
