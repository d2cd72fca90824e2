// Backend memory a model needs, before allocating it (see memory_estimate.h).
#include "model/memory_estimate.h"

#include <algorithm>

#include "common/check.h"
#include "common/checked_int.h"
#include "formats/gguf.h"
#include "formats/packed_weights.h"
#include "model/model.h"
#include "model/model_params.h"
#include "model/model_size.h"

namespace smezo {

namespace {

// Sums of products in int64 that remember an overflow instead of wrapping.
struct Bytes {
  int64_t value = 0;
  bool overflow = false;
  void add(int64_t a, int64_t b, int64_t c = 1) {
    int64_t ab = 0, abc = 0;
    if (!checked_mul(a, b, &ab) || !checked_mul(ab, c, &abc) || !checked_add(value, abc, &value))
      overflow = true;
  }
};

// What add_lora and add_prefix allocate for M token rows and R logit rows.
Bytes adapter_bytes(const ModelConfig& cfg, const TunedAdapters& a, int64_t M, int64_t R) {
  Bytes b;
  if (a.lora_rank > 0) {
    ModelConfig one = cfg;
    one.n_layers = 1;
    ModelParams params;
    int64_t widest = 0;
    for (const ParamSlot& s : list_param_slots(one, params)) {
      if (!s.is_linear || s.is_bias || std::find(a.lora_targets.begin(), a.lora_targets.end(), s.role) == a.lora_targets.end())
        continue;
      b.add(cfg.n_layers, a.lora_rank * (s.shape[0] + s.shape[1]), 4);  // A (r, in) and B (out, r)
      widest = std::max(widest, s.shape[0]);
    }
    b.add(M, a.lora_rank + widest, 4);  // lora_mid, lora_out
  }
  if (a.prefix_tokens > 0) {
    const int64_t P = a.prefix_tokens, kv = cfg.n_kv_heads * cfg.head_dim;
    b.add(2 * cfg.n_layers, P * kv, 4);  // the keys and values
    b.add(2 * cfg.n_layers, P * kv, 4);  // the init's key/value cache of P rows
    b.add(2 * (M + 2 * P), kv, 4);       // prefix_src_k, prefix_src_v
    b.add(2 * (M + P * std::min(M, R)), kv, 4);  // prefix_k, prefix_v: gathered per sequence
  }
  b.add(1, a.scale_values, 4);  // --tune scales' master scales
  return b;
}

}  // namespace

WorkspaceRows workspace_for_batch(int64_t batch, int64_t max_len, int64_t max_tokens) {
  SMEZO_REQUIRE(batch > 0 && max_len > 0 && max_tokens > 0,
                "workspace: batch %lld, max_len %lld and max_tokens %lld must be positive",
                (long long)batch, (long long)max_len, (long long)max_tokens);
  WorkspaceRows w;
  int64_t tokens = 0;
  if (!checked_mul(batch, max_len, &tokens)) tokens = max_tokens;
  w.tokens = std::max(max_len, std::min(tokens, max_tokens));
  w.logit_rows = std::max(max_len, std::min<int64_t>(1024, 4 * std::min<int64_t>(batch, 1024)));
  return w;
}

PackedTensorBytes packed_tensor_bytes(const WeightSource& source) {
  PackedTensorBytes out;
  for (const auto& kv : source.tensors)
    if (kv.second.packed_type != 0 && kv.second.shape.size() == 2) out[kv.first] = kv.second.nbytes;
  return out;
}

int64_t packed_scale_values(const WeightSource& source, bool with_m) {
  int64_t n = 0;
  for (const auto& kv : source.tensors) {
    const HostTensorView& v = kv.second;
    if (v.packed_type == 0 || v.shape.size() != 2) continue;
    const GgufTypeTraits* t = gguf_type_traits(v.packed_type);
    if (t) n += v.numel() / t->block_size * (with_m && packed_type_has_m(v.packed_type) ? 2 : 1);
  }
  return n;
}

MemoryEstimate estimate_model_memory(const ModelConfig& cfg, DType storage, const WorkspaceRows& ws,
                                     const BackendMemoryPlan& backend, const ModelStage& stage,
                                     const TunedAdapters& adapters, const PackedTensorBytes& packed) {
  MemoryEstimate e;
  ModelSize size;
  if (!model_size_of(cfg, &size)) {
    e.weights = e.activations = e.scratch = e.library = e.adapters = e.total = -1;
    return e;
  }
  e.weights = model_weight_bytes(size, storage);
  // The stage's own tensors (whole-model sizes fit int64: checked above), and the largest.
  ModelStage held = stage;
  if (held.end_layer < 0) held.end_layer = cfg.n_layers;
  ModelParams slots_of;
  int64_t held_bytes = 0, largest_numel = 0;
  for (const ParamSlot& s : list_param_slots(cfg, slots_of))
    if (stage.whole() || stage_holds(held, cfg, s)) {
      const int64_t n = checked_numel(s.shape.data(), s.shape.size());
      const auto kept = packed.find(s.name);
      held_bytes += kept != packed.end() ? kept->second : n * dtype_size(storage);
      if (kept == packed.end()) largest_numel = std::max(largest_numel, n);  // a packed one is copied as it is
    }
  if (!stage.whole() || !packed.empty()) e.weights = held_bytes;
  const int64_t M = ws.tokens, R = stage.last() ? ws.logit_rows : 0;
  const int64_t q_dim = cfg.n_heads * cfg.head_dim, kv_dim = cfg.n_kv_heads * cfg.head_dim;
  // Model's Workspace, fp32: x, xn; q, att; k, v; h_gate (SwiGLU), h_up; last, logits.
  Bytes act;
  act.add(2 * M, cfg.dim, 4);
  act.add(2 * M, q_dim, 4);
  act.add(2 * M, kv_dim, 4);
  act.add(cfg.mlp_kind == MLP_SWIGLU ? 2 * M : M, cfg.hidden_dim, 4);
  act.add(R, cfg.dim, 4);
  act.add(R, cfg.vocab_size, 4);
  // Scratch: the largest demand of one linear (layers: M rows; the LM head: R rows).
  ModelConfig one = cfg;
  one.n_layers = 1;
  ModelParams scratch_params;
  int64_t scratch = 0;
  for (const ParamSlot& s : list_param_slots(one, scratch_params))
    if (s.is_linear) {
      const bool head = s.name == "lm_head.weight";
      scratch = std::max(scratch, backend.linear_scratch(s.shape[0], s.shape[1], head ? R : M, storage));
    }
  if (cfg.tied_lm_head) scratch = std::max(scratch, backend.linear_scratch(cfg.vocab_size, cfg.dim, R, storage));
  if (backend.linear_group_scratch) {  // Model::run's groups: q|k|v, and gate|up under SwiGLU
    scratch = std::max(scratch, backend.linear_group_scratch({q_dim, kv_dim, kv_dim}, cfg.dim, M, storage));
    if (cfg.mlp_kind == MLP_SWIGLU)
      scratch = std::max(scratch, backend.linear_group_scratch({cfg.hidden_dim, cfg.hidden_dim}, cfg.dim, M, storage));
  }
  scratch = std::max(scratch, backend.load_scratch(largest_numel, storage));
  const Bytes tuned = adapter_bytes(cfg, adapters, M, R);
  if (e.weights < 0 || act.overflow || tuned.overflow) {
    e.weights = e.activations = e.scratch = e.library = e.adapters = e.total = -1;
    return e;
  }
  e.activations = act.value;
  e.scratch = scratch;
  e.library = kSmallBuffersBytes + backend.library_bytes;
  e.adapters = tuned.value;
  e.total = e.weights + e.activations + e.scratch + e.library + e.adapters;
  return e;
}

std::string describe_memory_estimate(const MemoryEstimate& e) {
  if (e.total < 0) return "too large to estimate (a size overflows)";
  return format_bytes(e.weights) + " weights + " + format_bytes(e.activations) + " activations + " +
         format_bytes(e.scratch) + " scratch + " + format_bytes(e.library) + " library/small" +
         (e.adapters > 0 ? " + " + format_bytes(e.adapters) + " adapters" : std::string()) + " = " + format_bytes(e.total);
}

void require_memory_fits(const MemoryEstimate& e, int64_t free_bytes, const std::string& device,
                         const std::string& model_path) {
  if (free_bytes < 0) return;  // the backend cannot tell
  SMEZO_REQUIRE(e.total >= 0 && e.total <= free_bytes,
                "model %s needs %s on the %s device, %s free (%s) ---> HINT: free memory (other "
                "processes), use a smaller --batch/--max-len, a 16-bit --dtype on cuda, or a "
                "smaller model", model_path.c_str(),
                e.total < 0 ? "more than int64 bytes" : format_bytes(e.total).c_str(), device.c_str(),
                format_bytes(free_bytes).c_str(), describe_memory_estimate(e).c_str());
}

}  // namespace smezo
