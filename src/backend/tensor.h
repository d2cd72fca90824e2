// Tensors as the model and backends see them: a non-owning 2-D view on backend memory, plus
// the per-parameter facts the optimiser needs (noise tensor id, noise kind, mask).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/noise_spec.h"  // MaskKind, NoiseKind
#include "smezo/device.h"       // DType

namespace smezo {

const char* dtype_name(DType dtype);
int64_t dtype_size(DType dtype);

// A row-major (rows, cols) view. Vectors are (1, n). Memory belongs to a Backend.
struct Tensor {
  void* data = nullptr;
  DType dtype = DTYPE_F32;
  int64_t rows = 0;
  int64_t cols = 0;
  // --weights packed (formats/packed_weights.h): nonzero, data holds the GGUF blocks of this block type
  // (Q4_1, ...) for the rows * cols values, row after row, packed_row_bytes a row; dtype is DTYPE_F32, what
  // the values read as. Only a frozen weight is packed; ops dequantise the rows they read.
  uint32_t packed_type = 0;
  int64_t packed_row_bytes = 0;

  int64_t numel() const { return rows * cols; }
  bool packed() const { return packed_type != 0; }
  float* f32() const { return static_cast<float*>(data); }
};

// Rows [row0, row0 + n) of t as a view of the same memory (only the pointer moves).
Tensor tensor_rows(const Tensor& t, int64_t row0, int64_t n);

// Set at load from the architecture's tensor map; rules read it, never a name.
enum ParamRole : int {
  ROLE_OTHER,  // a tensor made outside a model's map (tests, benchmarks)
  ROLE_TOKEN_EMBEDDING,
  ROLE_POSITION_EMBEDDING,  // OPT's learned positions
  ROLE_NORM,                // RMSNorm/LayerNorm weights, and LayerNorm biases (is_bias)
  ROLE_ATTN_Q,
  ROLE_ATTN_K,
  ROLE_ATTN_V,
  ROLE_ATTN_O,
  ROLE_MLP_GATE,
  ROLE_MLP_UP,    // OPT's fc1
  ROLE_MLP_DOWN,  // OPT's fc2
  ROLE_LM_HEAD,
};
// "other", "embedding", "position-embedding", "norm", "q", "k", "v", "o", "gate", "up", "down", "head"
const char* param_role_name(ParamRole role);
inline bool role_is_embedding(ParamRole role) {
  return role == ROLE_TOKEN_EMBEDDING || role == ROLE_POSITION_EMBEDDING;
}

// A LoRA adapter's matrix or a layer's prefix keys/values: under --tune lora/prefix only these are tuned.
enum AdapterPart { ADAPTER_NONE, ADAPTER_LORA_A, ADAPTER_LORA_B, ADAPTER_PREFIX_KEY, ADAPTER_PREFIX_VALUE };

struct ParamInfo {
  std::string name;          // Hugging Face name, e.g. model.layers.0.self_attn.q_proj.weight
  ParamRole role = ROLE_OTHER;
  bool is_bias = false;      // the bias of its role's layer (a linear's, or a LayerNorm's)
  uint32_t tensor_id = 0;    // noise stream id: index in the model's canonical parameter list
  bool is_linear = false;    // a linear layer's weight matrix (the only kind that is masked)
  AdapterPart adapter = ADAPTER_NONE;  // LoRA's A/B (role: the adapted layer's), prefix keys/values (k/v)
  bool trainable = true;     // false: never perturbed nor updated
  MaskKind mask = MASK_DENSE;
  float threshold = 0.0f;    // MASK_MAGNITUDE: the fixed per-tensor |w| threshold h
  float keep_prob = 1.0f;    // MASK_RANDOM: probability that an entry is tuned
  uint64_t mask_seed = 0;    // MASK_RANDOM: seed of the fixed mask stream (one per run)
  bool stochastic_rounding = false;  // updates round stochastically to bf16 storage
  NoiseKind noise = NOISE_GAUSSIAN;  // the run's z (set by SpsaOptimizer); never NOISE_AUTO
};

struct Param {
  Tensor w;        // (out_features, in_features) for linear weights; (1, n) for vectors
  ParamInfo info;
  // --tune scales: this packed weight's f32 master block scales, a trainable Param of (1, n_blocks)
  // (row 0: d) or (2, n_blocks) (row 1: Q4_1/Q5_1 m, K-quant dmin), indexed by global block index
  // (block 0 = the tensor's first; K-quants: the 256-value super-block). Null: the file's f16 scales.
  Param* scales = nullptr;
};

// One forward pass's perturbation: every trainable parameter reads as w + scale * m(w) *
// z(seed, tensor_id, index); scale = sigma * eps, 0 = unperturbed. A PAIR reads rows [0, M/2) at
// +scale and [M/2, M) at -scale; only Model::forward and Backend::linear take one, the other ops get
// each half's single probe (half_probe).
struct Probe {
  float scale = 0.0f;
  uint64_t seed = 0;
  bool pair = false;
};

// The single probe of one half of a pair: sign +1 (rows [0, M/2)) or -1 (rows [M/2, M)).
inline Probe half_probe(const Probe& pair, int sign) {
  return Probe{sign > 0 ? pair.scale : -pair.scale, pair.seed, false};
}

// Results a probe stands for (a pair: +, then -); a list gives them half by half, in order.
inline size_t probe_halves(const Probe& probe) { return probe.pair ? 2 : 1; }
inline size_t probe_halves(const std::vector<Probe>& probes) {
  size_t n = 0;
  for (const Probe& p : probes) n += probe_halves(p);
  return n;
}

// Whether a read of packed w under `probe` moves its values (--tune scales: trainable master scales read
// differently at +scale and -scale): a pair then needs a W' per half.
inline bool packed_scales_perturbed(const Param& w, const Probe& probe) {
  return w.w.packed() && w.scales != nullptr && w.scales->info.trainable && probe.scale != 0.0f;
}

}  // namespace smezo
