// Config and tensor checks shared by every way of opening a model (see model_check.h).
#include "model/model_check.h"

#include <cmath>
#include <string>
#include <vector>

#include "common/check.h"
#include "model/family.h"
#include "model/model.h"
#include "model/model_params.h"
#include "model/model_size.h"

namespace smezo {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

void require_range(const std::string& source, const char* field, int64_t v, int64_t hi) {
  SMEZO_REQUIRE(v >= 1 && v <= hi, "model %s: config %s = %lld is outside 1..%lld; the model "
                "file is corrupt", source.c_str(), field, static_cast<long long>(v),
                static_cast<long long>(hi));
}

bool known_dtype(DType dtype) {
  switch (dtype) {
    case DTYPE_F32:
    case DTYPE_F16:
    case DTYPE_BF16:
      return true;
  }
  return false;
}

// 7 for "model.layers.7..." or "model.decoder.layers.7...", else -1; long indices read as huge.
int64_t layer_index_of(const std::string& name) {
  for (const char* prefix : {"model.layers.", "model.decoder.layers."}) {
    const std::string p = prefix;
    if (name.compare(0, p.size(), p) != 0) continue;
    int64_t index = 0;
    size_t i = p.size();
    for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; i++)
      index = index > (int64_t(1) << 40) ? index : index * 10 + (name[i] - '0');
    if (i == p.size() || i == name.size() || name[i] != '.') return -1;
    return index;
  }
  return -1;
}

// Llama 3 factors positive and ordered; GGUF divisors one per pair, positive and finite.
void check_rope_scaling(const ModelConfig& c, const std::string& source) {
  const RopeScaling& s = c.rope_scaling;
  const char* src = source.c_str();
  if (!s.freq_divisors.empty()) {
    SMEZO_REQUIRE(static_cast<int64_t>(s.freq_divisors.size()) == c.head_dim / 2, "model %s: %zu RoPE frequency "
                  "divisors for head_dim %lld (one per pair expected)", src, s.freq_divisors.size(),
                  static_cast<long long>(c.head_dim));
    for (float d : s.freq_divisors)
      SMEZO_REQUIRE(std::isfinite(d) && d > 0.0f, "model %s: a RoPE frequency divisor is %g; each must be a "
                    "positive finite float", src, static_cast<double>(d));
  }
  if (s.kind != ROPE_SCALING_LLAMA3) return;
  SMEZO_REQUIRE(std::isfinite(s.factor) && s.factor > 0.0f && std::isfinite(s.low_freq_factor) &&
                    s.low_freq_factor > 0.0f && std::isfinite(s.high_freq_factor) &&
                    s.high_freq_factor > s.low_freq_factor && s.original_max_positions >= 1,
                "model %s: llama3 RoPE scaling needs factor > 0, 0 < low_freq_factor < high_freq_factor and "
                "original_max_position_embeddings >= 1 (got %g, %g, %g, %lld)", src, static_cast<double>(s.factor),
                static_cast<double>(s.low_freq_factor), static_cast<double>(s.high_freq_factor),
                static_cast<long long>(s.original_max_positions));
}

}  // namespace

void check_model_config(const ModelConfig& c, const std::string& source) {
  const char* src = source.c_str();
  require_range(source, "dim", c.dim, kMaxWidth);
  require_range(source, "hidden_dim", c.hidden_dim, kMaxWidth);
  require_range(source, "n_layers", c.n_layers, kMaxLayers);
  require_range(source, "n_heads", c.n_heads, kMaxWidth);
  require_range(source, "n_kv_heads", c.n_kv_heads, kMaxWidth);
  require_range(source, "head_dim", c.head_dim, kMaxWidth);
  require_range(source, "vocab_size", c.vocab_size, kMaxVocab);
  require_range(source, "max_seq_len", c.max_seq_len, kMaxPositions);
  SMEZO_REQUIRE(c.n_heads * c.head_dim <= kMaxWidth, "model %s: config n_heads * head_dim = "
                "%lld * %lld is above %lld; the model file is corrupt", src,
                static_cast<long long>(c.n_heads), static_cast<long long>(c.head_dim),
                static_cast<long long>(kMaxWidth));
  SMEZO_REQUIRE(c.n_heads % c.n_kv_heads == 0, "model %s: config n_heads %lld is not a "
                "multiple of n_kv_heads %lld", src, static_cast<long long>(c.n_heads),
                static_cast<long long>(c.n_kv_heads));
  SMEZO_REQUIRE(family_named(c.family), "model %s: model family '%s' is unknown; smezo runs %s", src,
                printable(c.family).c_str(), supported_families().c_str());
  const FamilyDescriptor& family = family_of(c);
  if (family.check != nullptr) family.check(c, source);
  if (c.position == POSITION_ROPE) {
    SMEZO_REQUIRE(c.head_dim % 2 == 0, "model %s: config head_dim %lld must be even for RoPE",
                  src, static_cast<long long>(c.head_dim));
    SMEZO_REQUIRE(std::isfinite(c.rope_theta) && c.rope_theta > 0.0f, "model %s: config "
                  "rope_theta %g must be a positive finite float", src,
                  static_cast<double>(c.rope_theta));
    check_rope_scaling(c, source);
  }
  // A layout change permutes q/k weight rows only (convert, checkpoints): not their biases or norm gains.
  SMEZO_REQUIRE(!rope_rows_interleaved(c) || (!c.qkv_bias && !c.qk_norm), "model %s: q/k biases or q/k norms "
                "with interleaved RoPE rows (a GGUF of general.architecture llama) are not supported", src);
  SMEZO_REQUIRE(std::isfinite(c.norm_eps) && c.norm_eps > 0.0f && c.norm_eps <= 1.0f,
                "model %s: config norm_eps %g must be a float in (0, 1]", src,
                static_cast<double>(c.norm_eps));
  SMEZO_REQUIRE(c.sliding_window >= 0 && c.sliding_window <= kMaxPositions, "model %s: config "
                "sliding_window %lld is outside 0..%lld", src,
                static_cast<long long>(c.sliding_window), static_cast<long long>(kMaxPositions));
  SMEZO_REQUIRE(c.learned_pos_offset >= 0 && c.learned_pos_offset <= 1024, "model %s: config "
                "learned_pos_offset %lld is outside 0..1024", src,
                static_cast<long long>(c.learned_pos_offset));
  // -1: the model has no such token (a GGUF file without the key)
  SMEZO_REQUIRE(c.bos_token >= -1 && c.bos_token < c.vocab_size, "model %s: config bos token "
                "%d is outside the vocabulary (0..%lld, or -1 for none)", src, c.bos_token,
                static_cast<long long>(c.vocab_size - 1));
  SMEZO_REQUIRE(c.eos_token >= -1 && c.eos_token < c.vocab_size, "model %s: config eos token "
                "%d is outside the vocabulary (0..%lld, or -1 for none)", src, c.eos_token,
                static_cast<long long>(c.vocab_size - 1));
  ModelSize size;
  SMEZO_REQUIRE(model_size_of(c, &size), "model %s: the config's sizes multiply beyond what "
                "int64 holds; the model file is corrupt", src);
}

void check_weight_source(const WeightSource& source) {
  const ModelConfig& c = source.config;
  check_model_config(c, source.path);
  ModelSize size;
  model_size_of(c, &size);  // cannot fail after check_model_config

  for (const ExpectedTensor& e : expected_tensors(c)) {
    const HostTensorView* view = source.find(e.name);
    SMEZO_REQUIRE(view, "model %s: no tensor '%s'; the config describes a %s model of %lld "
                  "layers and %s parameters (%s as F32) that needs it", source.path.c_str(),
                  e.name.c_str(), c.family.c_str(), static_cast<long long>(c.n_layers),
                  format_count(size.parameters).c_str(),
                  format_bytes(model_weight_bytes(size, DTYPE_F32)).c_str());
    SMEZO_REQUIRE(view->shape == e.shape, "tensor %s in %s has shape %s, the model config says %s",
                  e.name.c_str(), view->file.c_str(), shape_string(view->shape).c_str(),
                  shape_string(e.shape).c_str());
    SMEZO_REQUIRE(known_dtype(view->dtype), "tensor %s in %s has dtype %d, which smezo cannot "
                  "convert", e.name.c_str(), view->file.c_str(), static_cast<int>(view->dtype));
    SMEZO_REQUIRE(view->data != nullptr, "tensor %s in %s has no data", e.name.c_str(),
                  view->file.c_str());
  }
  for (const auto& kv : source.tensors) {
    const int64_t layer = layer_index_of(kv.first);
    SMEZO_REQUIRE(layer < c.n_layers, "model %s: tensor '%s' (in %s) belongs to layer %lld, "
                  "but the config says the model has %lld layers; the config does not describe "
                  "this checkpoint", source.path.c_str(), printable(kv.first).c_str(),
                  kv.second.file.c_str(), static_cast<long long>(layer),
                  static_cast<long long>(c.n_layers));
  }
}

}  // namespace smezo
