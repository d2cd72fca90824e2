// What a model needs on its backend before anything is allocated, so open_model refuses in one line
// instead of failing mid-load. The terms mirror the allocations: the workspace exactly, scratch as the
// high-water mark of a step or the load's staging chunk (memory_plan()). Not counted: the CUDA context
// (already gone from cudaMemGetInfo's free), the generation key/value cache, other host memory.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"  // BackendMemoryPlan
#include "backend/tensor.h"
#include "model/model_stage.h"
#include "model/weight_source.h"
#include "smezo/model_config.h"

namespace smezo {

// Index buffers, norm vectors, the quantile histogram: one allowance for the small buffers.
constexpr int64_t kSmallBuffersBytes = int64_t(4) << 20;

// The Model's workspace rows per forward.
struct WorkspaceRows {
  int64_t tokens = 0;
  int64_t logit_rows = 0;
};

// min(batch * max_len, max_tokens) (>= max_len) token rows, max(max_len, min(1024, 4 * batch)) logit rows.
WorkspaceRows workspace_for_batch(int64_t batch, int64_t max_len, int64_t max_tokens);

// What --tune lora/prefix adds after loading: the adapters' fp32 tensors and workspace.
struct TunedAdapters {
  int64_t lora_rank = 0;                 // 0: no LoRA
  std::vector<ParamRole> lora_targets;   // the adapted roles of every layer
  int64_t prefix_tokens = 0;             // 0: no prefix
  // --tune scales: 1 (d) or 2 (d and Q4_1/Q5_1 m, K-quant dmin; --scales-m); 0: none. scale_values: the
  // f32 master scales of the packed tensors (packed_scale_values), which open_model fills in.
  int64_t scales_rows = 0;
  int64_t scale_values = 0;
};

// --weights packed: the bytes of each tensor the Model keeps in its GGUF blocks, by Hugging Face name.
using PackedTensorBytes = std::map<std::string, int64_t>;
// What Model::load keeps packed of source (its 2-D block-quantised tensors), as keep_packed set would.
PackedTensorBytes packed_tensor_bytes(const WeightSource& source);
// --tune scales: the master scale values of those tensors (one per block, two with m where the type has one).
int64_t packed_scale_values(const WeightSource& source, bool with_m);

struct MemoryEstimate {
  int64_t weights = 0;      // every parameter in the storage dtype (a packed one: its stored bytes)
  int64_t activations = 0;  // the Model's workspace (fp32)
  int64_t scratch = 0;      // one layer's perturbed W' block(s) + x in 16 bits, or the load's staging
  int64_t library = 0;      // cuBLAS workspace and small buffers
  int64_t adapters = 0;     // --tune lora/prefix tensors and their workspace, --tune scales' masters, fp32
  int64_t total = 0;        // the sum; -1 everywhere when a size overflows
};

// A pipeline stage counts only its own weights, and logits only on the last stage.
MemoryEstimate estimate_model_memory(const ModelConfig& cfg, DType storage, const WorkspaceRows& ws,
                                     const BackendMemoryPlan& backend, const ModelStage& stage = ModelStage{},
                                     const TunedAdapters& adapters = TunedAdapters{},
                                     const PackedTensorBytes& packed = PackedTensorBytes{});

// "13.5 GB weights + 0.83 GB activations + 0.16 GB scratch + 0.04 GB cuBLAS/small = 14.5 GB"
std::string describe_memory_estimate(const MemoryEstimate& e);

// Throws "model <path> needs 14.5 GB on the cuda device, 12.0 GB free" unless e fits; -1 passes.
void require_memory_fits(const MemoryEstimate& e, int64_t free_bytes, const std::string& device,
                         const std::string& model_path);

}  // namespace smezo
