// Overflow-checked model sizes from a ModelConfig (see model_size.h).
#include "model/model_size.h"

#include <cstdio>

#include "common/checked_int.h"
#include "model/model.h"
#include "model/model_params.h"

namespace smezo {

namespace {

bool in_range(int64_t v, int64_t hi) { return v >= 1 && v <= hi; }

// Sum of the numels of every parameter slot of cfg (with its n_layers) and the largest one.
bool sum_slots(const ModelConfig& cfg, int64_t* total, int64_t* largest) {
  ModelParams scratch;
  *total = 0;
  for (const ParamSlot& s : list_param_slots(cfg, scratch)) {
    const int64_t n = checked_numel(s.shape.data(), s.shape.size());
    if (n < 0 || !checked_add(*total, n, total)) return false;
    if (n > *largest) *largest = n;
  }
  return true;
}

std::string with_unit(double v, const char* const* units, int n_units, double step) {
  int u = 0;
  while (u + 1 < n_units && v >= step) {
    v /= step;
    u++;
  }
  char buf[48];
  if (u == 0) std::snprintf(buf, sizeof buf, "%.0f%s", v, units[0]);
  else std::snprintf(buf, sizeof buf, v < 10 ? "%.2f%s" : (v < 100 ? "%.1f%s" : "%.0f%s"), v, units[u]);
  return buf;
}

}  // namespace

bool model_size_of(const ModelConfig& cfg, ModelSize* out) {
  if (!in_range(cfg.dim, kMaxWidth) || !in_range(cfg.hidden_dim, kMaxWidth) ||
      !in_range(cfg.n_layers, kMaxLayers) || !in_range(cfg.n_heads, kMaxWidth) ||
      !in_range(cfg.n_kv_heads, kMaxWidth) || !in_range(cfg.head_dim, kMaxWidth) ||
      !in_range(cfg.vocab_size, kMaxVocab) || !in_range(cfg.max_seq_len, kMaxPositions) ||
      cfg.learned_pos_offset < 0 || cfg.learned_pos_offset > kMaxPositions)
    return false;
  int64_t q_dim = 0, kv_dim = 0;
  if (!checked_mul(cfg.n_heads, cfg.head_dim, &q_dim) || q_dim > kMaxWidth ||
      !checked_mul(cfg.n_kv_heads, cfg.head_dim, &kv_dim) || kv_dim > kMaxWidth)
    return false;

  // Zero- and one-layer copies, times n_layers: listing every layer would cost O(n_layers) memory.
  ModelConfig c = cfg;
  int64_t outer = 0, with_layer = 0, largest = 0;
  c.n_layers = 0;
  if (!sum_slots(c, &outer, &largest)) return false;
  c.n_layers = 1;
  if (!sum_slots(c, &with_layer, &largest)) return false;
  ModelSize s;
  s.layer_parameters = with_layer - outer;
  s.largest_tensor = largest;
  int64_t layers = 0;
  if (!checked_mul(s.layer_parameters, cfg.n_layers, &layers) ||
      !checked_add(outer, layers, &s.parameters))
    return false;
  *out = s;
  return true;
}

int64_t model_weight_bytes(const ModelSize& size, DType dtype) {
  int64_t bytes = 0;
  return checked_mul(size.parameters, dtype_size(dtype), &bytes) ? bytes : -1;
}

std::string format_bytes(int64_t bytes) {
  static const char* const units[] = {" B", " KB", " MB", " GB", " TB", " PB", " EB"};
  return with_unit(static_cast<double>(bytes), units, 7, 1000.0);
}

std::string format_count(int64_t n) {
  static const char* const units[] = {"", " K", " M", " G", " T", " P", " E"};
  return with_unit(static_cast<double>(n), units, 7, 1000.0);
}

}  // namespace smezo
