// What a model needs on its backend before anything is allocated, from the ModelConfig, the
// storage dtype and the workspace rows alone: the weights in the storage dtype, the Model's
// one activation workspace (model.h: sized from the run's batch and length, see
// workspace_for_batch), the backend's scratch (bounded by one layer) and the library's own
// buffers (cuBLAS's workspace). open_model compares it with what the backend has free and
// refuses in one line ("model needs X GB on the cuda device, Y GB free") instead of failing in
// the middle of the load, and `smezo info` prints it.
//
// The terms mirror the allocations (Model's workspace exactly: a test compares it with the CPU
// backend's bytes_allocated()); scratch is the high-water mark of the backend's scratch buffer:
// the largest per-call demand of a training step, single probe or probe pair (on CUDA a pair
// holds two copies of W', so a weight of at most 32 MiB needs twice its size), and on CUDA the
// load's staging chunk, each as the backend's memory_plan() (backend.h) says.
// tests/test_memory_estimate_cuda.cu checks it against the CUDA backend's bytes_allocated() and
// scratch_capacity() (SmolLM2-135M, a pair step). Not counted: the CUDA context itself (about
// 0.5 GB on an H100, outside cudaMalloc and already gone from cudaMemGetInfo's free when the
// backend exists), the key/value cache of generation (`smezo generate`, and a generation task's
// greedy decoding: examples x (longest prompt + max_new_tokens, rounded up to a power of two)
// rows per layer, fp32 keys and values), and host memory of other kinds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"  // BackendMemoryPlan
#include "backend/tensor.h"
#include "model/model_stage.h"
#include "smezo/model_config.h"

namespace smezo {

// Index buffers, norm vectors, the quantile histogram: one allowance for the small buffers.
constexpr int64_t kSmallBuffersBytes = int64_t(4) << 20;


// The Model's workspace: token rows per forward and logit rows per forward.
struct WorkspaceRows {
  int64_t tokens = 0;
  int64_t logit_rows = 0;
};

// The workspace a run of `batch` examples of up to `max_len` tokens needs: batch * max_len
// token rows (capped at max_tokens, at least max_len; a bigger batch is run in chunks, which
// gives the same results) and max(max_len, min(1024, 4 * batch)) logit rows (one row per
// example for shared-prefix classification, a few per example otherwise; more are chunked).
WorkspaceRows workspace_for_batch(int64_t batch, int64_t max_len, int64_t max_tokens);

// What --tune lora or --tune prefix adds to a model after loading (Model::add_lora, add_prefix):
// the adapters' own fp32 tensors and their workspace.
struct TunedAdapters {
  int64_t lora_rank = 0;                 // 0: no LoRA
  std::vector<ParamRole> lora_targets;   // the adapted roles of every layer
  int64_t prefix_tokens = 0;             // 0: no prefix
};

struct MemoryEstimate {
  int64_t weights = 0;      // every parameter in the storage dtype
  int64_t activations = 0;  // the Model's workspace (fp32)
  int64_t scratch = 0;      // backend scratch: one layer's perturbed W' (bounded; two copies for
                            // a probe pair) + x in 16 bits, or the load's staging chunk
  int64_t library = 0;      // cuBLAS workspace and small buffers
  int64_t adapters = 0;     // --tune lora/prefix: A and B (rank x in, out x rank per adapted
                            // linear) and their (tokens, rank + widest output) workspace, or the
                            // prefix (2 x P x kv per layer), its init's P-row key/value cache
                            // and its gathered keys/values (model.h's Workspace), all fp32
  int64_t total = 0;        // the sum; -1 everywhere when a size overflows
};

// stage: a pipeline stage (model.h) counts only the weights it holds, and logits only on the
// last stage; the default is the whole model.
MemoryEstimate estimate_model_memory(const ModelConfig& cfg, DType storage, const WorkspaceRows& ws,
                                     const BackendMemoryPlan& backend, const ModelStage& stage = ModelStage{},
                                     const TunedAdapters& adapters = TunedAdapters{});

// "13.5 GB weights + 0.83 GB activations + 0.16 GB scratch + 0.04 GB cuBLAS/small = 14.5 GB"
// (with " + X adapters" before the total under --tune lora/prefix)
std::string describe_memory_estimate(const MemoryEstimate& e);

// Throws the one-line refusal when free_bytes (>= 0; -1 means unknown and passes) cannot hold
// the estimate: "model <path> needs 14.5 GB on the cuda device, 12.0 GB free (...) ---> HINT".
// The seam the tests fake the free memory through.
void require_memory_fits(const MemoryEstimate& e, int64_t free_bytes, const std::string& device,
                         const std::string& model_path);

}  // namespace smezo
