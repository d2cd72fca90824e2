// The CUDA backend's plan as host code, for the memory estimate and `smezo info` without CUDA:
// which path a linear takes (linear_path_choose) and the scratch it asks. Paths:
//   LINEAR_GEMM               W as stored, one cuBLAS GEMM (unperturbed, or untrainable W)
//   LINEAR_MATERIALISE        W' written to scratch, then cuBLAS (a single probe)
//   LINEAR_MATERIALISE_PAIR   W+ and W- from ONE noise generation, then one batch-2 GEMM
//   LINEAR_FUSED              mask + noise + multiply in one kernel (cuda/fused_linear.cu)
// --linear-path: wprime = the materialising paths, fused = always LINEAR_FUSED, auto = fused where
// fused_crossover_table measured it faster. Header only: the CPU-only build estimates a GPU's memory.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/backend.h"  // BackendMemoryPlan
#include "backend/tensor.h"   // DType
#include "common/check.h"

namespace smezo {

// Staging chunk in scratch for converting a tensor's file dtype (cuda/upload_stored.cu).
constexpr int64_t kCudaUploadChunkBytes = int64_t(64) << 20;
// cuBLAS's default workspace per handle (4 MiB before Hopper, 32 MiB on Hopper): the larger.
constexpr int64_t kCublasWorkspaceBytes = int64_t(32) << 20;

enum LinearPath { LINEAR_GEMM, LINEAR_MATERIALISE, LINEAR_MATERIALISE_PAIR, LINEAR_FUSED };

struct LinearCall {
  int64_t rows_per_probe = 0;  // token rows under each probe (M, or M/2 for a pair)
  int64_t n = 0;               // out features (rows of W)
  int64_t k = 0;               // in features
  bool perturbed = false;      // the probe's scale is nonzero and W is trainable
  bool pair = false;           // a probe pair (Probe::pair)
  DType storage = DTYPE_BF16;  // W's storage dtype
  LinearPathMode mode = LINEAR_MODE_AUTO;  // --linear-path
};

// Fused beats W' + cuBLAS for this dtype and probe kind up to max_rows_per_probe, from min_weight_elems.
struct FusedCrossoverRow {
  DType storage;
  bool pair;
  int64_t max_rows_per_probe;
  int64_t min_weight_elems;
};

// EMPTY until a GPU has timed the fused kernel, so auto takes the W' path everywhere.
inline const std::vector<FusedCrossoverRow>& fused_crossover_table() {
  static const std::vector<FusedCrossoverRow> table;
  return table;
}

inline bool fused_measured_faster(const LinearCall& c, const std::vector<FusedCrossoverRow>& table) {
  for (const FusedCrossoverRow& r : table)
    if (r.storage == c.storage && r.pair == c.pair && c.rows_per_probe <= r.max_rows_per_probe &&
        c.n * c.k >= r.min_weight_elems)
      return true;
  return false;
}

// A pair's W+ and W- share one row block: a pair always takes the one-noise path, however large W.
inline LinearPath linear_path_choose(const LinearCall& c,
                                     const std::vector<FusedCrossoverRow>& table = fused_crossover_table()) {
  if (!c.perturbed) return LINEAR_GEMM;
  if (c.mode == LINEAR_MODE_FUSED || (c.mode == LINEAR_MODE_AUTO && fused_measured_faster(c, table)))
    return LINEAR_FUSED;
  return c.pair ? LINEAR_MATERIALISE_PAIR : LINEAR_MATERIALISE;
}


inline const char* linear_path_name(LinearPath path) {
  switch (path) {
    case LINEAR_GEMM: return "gemm";
    case LINEAR_MATERIALISE: return "materialise";
    case LINEAR_MATERIALISE_PAIR: return "materialise-pair";
    case LINEAR_FUSED: return "fused";
  }
  return "?";
}

// Largest row block of W' (W+ and W- together) by default, so scratch never holds a whole LM head.
constexpr int64_t kCudaWeightChunkBytes = int64_t(64) << 20;
// SMEZO_CUDA_WEIGHT_BLOCK_MIB=N (1..1024) replaces it for the process: the GPU call that times the
// step at several block sizes (tools/gpu/step_excess.py). "" or unset: the default.
constexpr const char* kWeightBlockEnv = "SMEZO_CUDA_WEIGHT_BLOCK_MIB";

// The block size in bytes a value of kWeightBlockEnv asks (nullptr or "": the default); throws for
// anything but a whole number of MiB in [1, 1024].
inline int64_t weight_block_bytes_from(const char* mib) {
  if (mib == nullptr || *mib == '\0') return kCudaWeightChunkBytes;
  char* end = nullptr;
  const long long v = std::strtoll(mib, &end, 10);
  SMEZO_REQUIRE(end != mib && *end == '\0' && v >= 1 && v <= 1024,
                "%s=%s: the W' block size is a whole number of MiB from 1 to 1024 ---> HINT: unset it for the "
                "default (%lld MiB)", kWeightBlockEnv, printable(mib, 40).c_str(),
                (long long)(kCudaWeightChunkBytes >> 20));
  return static_cast<int64_t>(v) << 20;
}

// The W' block size every linear of this process plans with (and the memory estimate counts): the
// environment's on first use, until set_cuda_weight_chunk_bytes (the bench's block-size sweep).
inline std::atomic<int64_t>& cuda_weight_chunk_slot() {
  static std::atomic<int64_t> bytes{weight_block_bytes_from(std::getenv(kWeightBlockEnv))};
  return bytes;
}
inline int64_t cuda_weight_chunk_bytes() { return cuda_weight_chunk_slot().load(std::memory_order_relaxed); }
inline void set_cuda_weight_chunk_bytes(int64_t bytes) {
  SMEZO_REQUIRE(bytes >= 1, "W' block size %lld bytes: must be positive", (long long)bytes);
  cuda_weight_chunk_slot().store(bytes, std::memory_order_relaxed);
}

// CudaBackend::linear's one scratch request: [ W' block, `copies` times (W+ | W-) | x in W's 16-bit
// dtype ]. block_rows: all N rows if they fit cuda_weight_chunk_bytes(), else the most that fit rounded
// down to a multiple of 8 (a block starts on a noise group), at least 8. Regions 256-byte aligned.
// The memory estimate uses this same plan, so the two cannot drift apart.
struct LinearScratch {
  int64_t block_rows = 0;  // rows of W' per block; 0 when W is read as stored
  int64_t copies = 0;      // W' copies per block: 1, or 2 for LINEAR_MATERIALISE_PAIR
  int64_t w_bytes = 0;     // one copy's block, aligned
  int64_t x_bytes = 0;     // all the call's rows of x in W's dtype, aligned; 0 for fp32 W
  int64_t total() const { return copies * w_bytes + x_bytes; }
};

inline int64_t linear_align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

// LINEAR_FUSED needs no scratch: it rounds x and forms W' tile by tile in shared memory.
inline LinearScratch linear_scratch_plan(const LinearCall& c, LinearPath path,
                                         int64_t chunk_bytes = cuda_weight_chunk_bytes()) {
  LinearScratch s;
  if (path == LINEAR_FUSED) return s;
  const int64_t sz = dtype_size(c.storage);
  const int64_t rows = c.pair ? 2 * c.rows_per_probe : c.rows_per_probe;
  if (c.storage != DTYPE_F32) s.x_bytes = linear_align256(rows * c.k * sz);
  if (path == LINEAR_GEMM) return s;
  s.copies = path == LINEAR_MATERIALISE_PAIR ? 2 : 1;
  const int64_t row_bytes = c.k * sz;
  s.block_rows = std::min(c.n, std::max<int64_t>(8, chunk_bytes / (row_bytes * s.copies) / 8 * 8));
  s.w_bytes = linear_align256(s.block_rows * row_bytes);
  return s;
}

// The most scratch one perturbed (n, k) linear over m rows asks, single probe or pair.
inline int64_t cuda_linear_scratch_most(int64_t n, int64_t k, int64_t m, DType storage) {
  int64_t most = 0;
  for (bool pair : {false, true}) {
    const LinearCall c{pair ? m / 2 : m, n, k, /*perturbed=*/true, pair, storage};
    most = std::max(most, linear_scratch_plan(c, linear_path_choose(c)).total());
  }
  return most;
}

// CudaBackend::linear_group's plan for linears that read one input (q|k|v, gate|up): their W' side by
// side in ONE scratch request [W'_0 (W+ | W-) | W'_1 (W+ | W-) | ... | x in W's 16-bit dtype], each
// whole, so one batched GEMM per distinct N multiplies them all (cuda/linear.cu). Grouped only when
// the calls share a path (gemm or one of the materialising paths: never fused) and a dtype, and all
// their W' together fit ONE W' block (cuda_weight_chunk_bytes()): a concatenation larger than the
// block falls back to per-tensor linears, each blocked as linear_scratch_plan says (the knob keeps
// its meaning: no scratch region is ever larger than the block). offsets: each call's W' region.
struct LinearGroupScratch {
  bool grouped = false;
  LinearPath path = LINEAR_GEMM;
  int64_t copies = 0;            // W' copies per call: 0 (W as stored), 1, or 2 (pair)
  std::vector<int64_t> offsets;  // byte offset of call i's W' (its W+ then W-, w_bytes[i] apart)
  std::vector<int64_t> w_bytes;  // one copy of call i's whole W', aligned
  int64_t x_offset = 0;          // where x in 16 bits starts (after every W')
  int64_t x_bytes = 0;           // all rows of x in W's dtype, aligned; 0 for fp32 W
  int64_t total() const { return x_offset + x_bytes; }
};

// At most this many linears in one group (CudaBackend's pointer tables hold 3 pointers per problem).
constexpr int kLinearGroupMaxItems = 4;

inline LinearGroupScratch linear_group_plan(const std::vector<LinearCall>& calls,
                                            int64_t chunk_bytes = cuda_weight_chunk_bytes()) {
  LinearGroupScratch g;
  if (calls.size() < 2 || calls.size() > static_cast<size_t>(kLinearGroupMaxItems)) return g;
  const LinearCall& c0 = calls[0];
  g.path = linear_path_choose(c0);
  if (g.path == LINEAR_FUSED) return g;
  const int64_t sz = dtype_size(c0.storage);
  g.copies = g.path == LINEAR_MATERIALISE_PAIR ? 2 : g.path == LINEAR_MATERIALISE ? 1 : 0;
  for (const LinearCall& c : calls) {
    if (linear_path_choose(c) != g.path || c.storage != c0.storage || c.k != c0.k ||
        c.rows_per_probe != c0.rows_per_probe || c.pair != c0.pair || c.n <= 0)
      return LinearGroupScratch{};
    g.offsets.push_back(g.x_offset);
    g.w_bytes.push_back(g.copies > 0 ? linear_align256(c.n * c.k * sz) : 0);
    g.x_offset += g.copies * g.w_bytes.back();
  }
  if (g.x_offset > chunk_bytes) return LinearGroupScratch{};  // per-tensor blocks instead
  const int64_t rows = c0.pair ? 2 * c0.rows_per_probe : c0.rows_per_probe;
  if (c0.storage != DTYPE_F32) g.x_bytes = linear_align256(rows * c0.k * sz);
  g.grouped = true;
  return g;
}

// The most scratch one group of perturbed (ns[i], k) linears over m rows asks (0 where it is not
// grouped: its linears then ask what cuda_linear_scratch_most says), single probe or pair.
inline int64_t cuda_linear_group_scratch_most(const std::vector<int64_t>& ns, int64_t k, int64_t m, DType storage) {
  int64_t most = 0;
  for (bool pair : {false, true}) {
    std::vector<LinearCall> calls;
    for (int64_t n : ns) calls.push_back(LinearCall{pair ? m / 2 : m, n, k, /*perturbed=*/true, pair, storage});
    const LinearGroupScratch g = linear_group_plan(calls);
    if (g.grouped) most = std::max(most, g.total());
  }
  return most;
}

// cuda/upload_stored.cu: 256 B plus a staging chunk in the widest file dtype needing conversion.
inline int64_t cuda_upload_scratch(int64_t largest_numel, DType storage) {
  const int64_t src_size = storage == DTYPE_F32 ? 2 : 4;
  const int64_t chunk = std::min(largest_numel, std::max<int64_t>(1, kCudaUploadChunkBytes / src_size));
  return 256 + chunk * src_size;
}

// CudaBackend::memory_plan(), also for estimates on a machine without a GPU (smezo info).
inline BackendMemoryPlan cuda_memory_plan() {
  return {cuda_linear_scratch_most, cuda_upload_scratch, kCublasWorkspaceBytes, cuda_linear_group_scratch_most};
}

}  // namespace smezo
