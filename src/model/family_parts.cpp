// The descriptors' shared parts (see family_parts.h).
#include "model/family_parts.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/check.h"
#include "formats/json_read.h"
#include "model/model_size.h"

namespace smezo {

using json = nlohmann::json;

namespace {

// Fields whose null transformers reads as "not given"; null elsewhere is an error.
bool null_means_absent(const char* field) {
  for (const char* f : {"num_key_value_heads", "head_dim", "sliding_window", "rope_scaling",
                        "rope_parameters"})
    if (std::strcmp(f, field) == 0) return true;
  return false;
}

}  // namespace

// --- HfConfigReader

const json* HfConfigReader::value(const char* field) const {
  auto it = j.find(field);
  if (it == j.end()) return nullptr;
  if (it->is_null()) {
    if (null_means_absent(field)) return nullptr;
    throw_error("config %s: field '%s' is null; give it a value or remove it", path.c_str(), field);
  }
  return &*it;
}

void HfConfigReader::wrong_type(const char* field, const json& v, const char* expected) const {
  throw_error("config %s: field '%s' is %s (%s), expected %s", path.c_str(), field, v.type_name(),
              json_brief(v).c_str(), expected);
}

int64_t HfConfigReader::as_int(const char* field, const json& v) const {
  if (const std::optional<int64_t> i = json_number<int64_t>(v)) return *i;
  wrong_type(field, v, "an integer");
}

int64_t HfConfigReader::get_int(const char* field) const {
  const json* v = value(field);
  SMEZO_REQUIRE(v, "config %s: field '%s' is missing (required for model_type %s)", path.c_str(), field,
                model_type.c_str());
  return as_int(field, *v);
}

int64_t HfConfigReader::get_int(const char* field, int64_t fallback) const {
  const json* v = value(field);
  return v ? as_int(field, *v) : fallback;
}

float HfConfigReader::get_float(const char* field, double fallback, double hi) const {
  const json* v = value(field);
  if (v && !v->is_number()) wrong_type(field, *v, "a number");
  const double d = v ? v->get<double>() : fallback;
  const float f = static_cast<float>(d);
  SMEZO_REQUIRE(std::isfinite(d) && std::isfinite(f) && f > 0.0f && d <= hi,
                "config %s: field '%s' is %g; it must be a positive number no larger than %g", path.c_str(),
                field, d, hi);
  return f;
}

bool HfConfigReader::get_bool(const char* field, bool fallback) const {
  const json* v = value(field);
  if (v && !v->is_boolean()) wrong_type(field, *v, "true or false");
  return v ? v->get<bool>() : fallback;
}

std::string HfConfigReader::get_string(const char* field, const std::string& fallback) const {
  const json* v = value(field);
  if (v && !v->is_string()) wrong_type(field, *v, "a string");
  return v ? v->get<std::string>() : fallback;
}

int32_t HfConfigReader::get_token(const char* field, int32_t fallback, int64_t vocab_size) const {
  const json* v = value(field);
  if (!v) return fallback;
  std::vector<const json*> ids;
  if (v->is_array()) {
    for (const json& e : *v) ids.push_back(&e);
  } else {
    ids.push_back(v);
  }
  for (const json* e : ids)
    if (!e->is_number_integer()) wrong_type(field, *v, "a token id (an integer or a list of them)");
  SMEZO_REQUIRE(!ids.empty(), "config %s: field '%s' is an empty list, expected token ids", path.c_str(), field);
  for (const json* e : ids) {
    const int64_t id = as_int(field, *e);
    SMEZO_REQUIRE(id >= 0 && id < vocab_size, "config %s: field '%s' holds token id %lld, outside the "
                  "vocabulary (vocab_size %lld)", path.c_str(), field, static_cast<long long>(id),
                  static_cast<long long>(vocab_size));
  }
  return static_cast<int32_t>(as_int(field, *ids[0]));
}

void HfConfigReader::require_range(const char* field, int64_t v, int64_t hi) const {
  SMEZO_REQUIRE(v >= 1 && v <= hi, "config %s: field '%s' is %lld; it must be in 1..%lld", path.c_str(), field,
                static_cast<long long>(v), static_cast<long long>(hi));
}

void HfConfigReader::unsupported(const char* field, const std::string& why) const {
  auto it = j.find(field);
  throw_error("config %s: field '%s' is %s; %s (model_type %s)", path.c_str(), field,
              it != j.end() ? json_brief(*it).c_str() : "absent", why.c_str(), model_type.c_str());
}

// --- sizes

void read_hf_sizes(const HfConfigReader& f, const char* mlp_key, ModelConfig* c) {
  c->dim = f.get_int("hidden_size");
  c->hidden_dim = f.get_int(mlp_key);
  c->n_layers = f.get_int("num_hidden_layers");
  c->n_heads = f.get_int("num_attention_heads");
  c->vocab_size = f.get_int("vocab_size");
  c->max_seq_len = f.get_int("max_position_embeddings");
  f.require_range("hidden_size", c->dim, kMaxWidth);
  f.require_range(mlp_key, c->hidden_dim, kMaxWidth);
  f.require_range("num_hidden_layers", c->n_layers, kMaxLayers);
  f.require_range("num_attention_heads", c->n_heads, kMaxWidth);
  f.require_range("vocab_size", c->vocab_size, kMaxVocab);
  f.require_range("max_position_embeddings", c->max_seq_len, kMaxPositions);
}

namespace {

void read_heads(const HfConfigReader& f, ModelConfig* c) {
  c->n_kv_heads = f.get_int("num_key_value_heads", c->n_heads);
  f.require_range("num_key_value_heads", c->n_kv_heads, c->n_heads);
  SMEZO_REQUIRE(c->n_heads % c->n_kv_heads == 0, "config %s: num_attention_heads %lld is not a multiple of "
                "num_key_value_heads %lld", f.path.c_str(), static_cast<long long>(c->n_heads),
                static_cast<long long>(c->n_kv_heads));
  if (f.has("head_dim")) {
    c->head_dim = f.get_int("head_dim");
    f.require_range("head_dim", c->head_dim, kMaxWidth);
  } else {
    SMEZO_REQUIRE(c->dim % c->n_heads == 0, "config %s: hidden_size %lld is not a multiple of "
                  "num_attention_heads %lld and there is no head_dim field", f.path.c_str(),
                  static_cast<long long>(c->dim), static_cast<long long>(c->n_heads));
    c->head_dim = c->dim / c->n_heads;
  }
  SMEZO_REQUIRE(c->head_dim % 2 == 0, "config %s: head_dim %lld (hidden_size / num_attention_heads, or the "
                "head_dim field) must be even for RoPE", f.path.c_str(), static_cast<long long>(c->head_dim));
  SMEZO_REQUIRE(c->n_heads * c->head_dim <= kMaxWidth, "config %s: num_attention_heads * head_dim = %lld * %lld "
                "is above %lld", f.path.c_str(), static_cast<long long>(c->n_heads),
                static_cast<long long>(c->head_dim), static_cast<long long>(kMaxWidth));
}

// "rope_type" (or older "type") of a rope_scaling / rope_parameters object, or "".
std::string rope_type_of(const HfConfigReader& f, const char* field) {
  const json& v = *f.value(field);
  if (!v.is_object()) f.wrong_type(field, v, "an object");
  for (const char* key : {"rope_type", "type"}) {
    auto it = v.find(key);
    if (it == v.end()) continue;
    SMEZO_REQUIRE(it->is_string(), "config %s: field '%s.%s' is %s, expected a string", f.path.c_str(), field, key,
                  json_brief(*it).c_str());
    return it->get<std::string>();
  }
  return "";
}

// object[key] as a positive finite float <= hi; absent: fallback (< 0: required).
double nested_number(const HfConfigReader& f, const char* field, const json& object, const char* key,
                     double fallback, double hi) {
  auto it = object.find(key);
  if (it == object.end()) {
    SMEZO_REQUIRE(fallback >= 0, "config %s: field '%s.%s' is missing (rope_type llama3 needs it)",
                  f.path.c_str(), field, key);
    return fallback;
  }
  const double d = it->is_number() ? it->get<double>() : 0.0;
  SMEZO_REQUIRE(it->is_number() && std::isfinite(d) && std::isfinite(static_cast<float>(d)) &&
                    static_cast<float>(d) > 0.0f && d <= hi,
                "config %s: field '%s.%s' is %s; it must be a positive number no larger than %g", f.path.c_str(),
                field, key, json_brief(*it).c_str(), hi);
  return d;
}

// Llama 3.x's frequency scaling from rope_scaling / rope_parameters (transformers' field names).
void read_llama3_scaling(const HfConfigReader& f, const char* field, ModelConfig* c) {
  const json& v = *f.value(field);
  RopeScaling& s = c->rope_scaling;
  s.kind = ROPE_SCALING_LLAMA3;
  s.factor = static_cast<float>(nested_number(f, field, v, "factor", -1, 1e6));
  s.low_freq_factor = static_cast<float>(nested_number(f, field, v, "low_freq_factor", -1, 1e6));
  s.high_freq_factor = static_cast<float>(nested_number(f, field, v, "high_freq_factor", -1, 1e6));
  const double orig = nested_number(f, field, v, "original_max_position_embeddings", -1, kMaxPositions);
  s.original_max_positions = static_cast<int64_t>(orig);
  SMEZO_REQUIRE(static_cast<double>(s.original_max_positions) == orig && s.high_freq_factor > s.low_freq_factor,
                "config %s: field '%s': original_max_position_embeddings must be an integer and "
                "high_freq_factor (%g) above low_freq_factor (%g)", f.path.c_str(), field,
                static_cast<double>(s.high_freq_factor), static_cast<double>(s.low_freq_factor));
}

// rope_theta: top level (transformers 4.x) or inside rope_parameters (5.x); rope_scaling or
// rope_parameters of rope_type "default" or "llama3".
void read_rope(const HfConfigReader& f, ModelConfig* c) {
  const float theta = f.get_float("rope_theta", 10000.0, 1e30);
  c->rope_theta = theta;
  for (const char* field : {"rope_scaling", "rope_parameters"}) {
    if (!f.has(field)) continue;
    const std::string type = rope_type_of(f, field);
    if (type == "llama3") {
      read_llama3_scaling(f, field, c);
    } else if (type != "default" && !type.empty()) {
      f.unsupported(field, "smezo runs RoPE of rope_type \"default\" and \"llama3\"");
    }
  }
  if (!f.has("rope_parameters")) return;
  const json& rp = *f.value("rope_parameters");
  if (!rp.contains("rope_theta")) return;
  const float nested = static_cast<float>(nested_number(f, "rope_parameters", rp, "rope_theta", -1, 1e30));
  SMEZO_REQUIRE(!f.has("rope_theta") || nested == theta, "config %s: field 'rope_theta' (%g) disagrees with "
                "'rope_parameters.rope_theta' (%g); fix one of them", f.path.c_str(), static_cast<double>(theta),
                static_cast<double>(nested));
  c->rope_theta = nested;
}

}  // namespace

void read_llama_like(const HfConfigReader& f, ModelConfig* c) {
  read_hf_sizes(f, "intermediate_size", c);
  read_heads(f, c);
  c->norm_eps = f.get_float("rms_norm_eps", 1e-6, 1.0);
  read_rope(f, c);
  const std::string act = f.get_string("hidden_act", "silu");
  if (act != "silu") f.unsupported("hidden_act", "smezo runs \"silu\" for this family");
  c->position = POSITION_ROPE;
  c->rope_style = ROPE_ROTATE_HALF;
  c->norm_kind = NORM_RMS;
  c->mlp_kind = MLP_SWIGLU;
  c->tied_lm_head = f.get_bool("tie_word_embeddings", false);
  c->learned_pos_offset = 0;
  c->sliding_window = 0;
  c->bos_token = f.get_token("bos_token_id", 1, c->vocab_size);
  c->eos_token = f.get_token("eos_token_id", 2, c->vocab_size);
}

void read_window_off(const HfConfigReader& f) {
  if (f.get_bool("use_sliding_window", false))
    f.unsupported("use_sliding_window", "smezo runs this family with the sliding window off (per-layer windows, "
                  "max_window_layers, are not supported)");
  const json* types = f.value("layer_types");
  if (types == nullptr) return;
  if (!types->is_array()) f.wrong_type("layer_types", *types, "a list of layer types");
  for (const json& t : *types)
    if (t != "full_attention")
      f.unsupported("layer_types", "smezo runs layers of type \"full_attention\" only (no sliding-window layers)");
}

// --- writing

namespace {

// The shortest decimal double that reads back as x (1e-5f prints as 1e-05, not 9.999999747378752e-06).
double short_float(float x) {
  char buf[32];
  for (int prec = 1; prec <= 9; prec++) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, static_cast<double>(x));
    if (std::strtof(buf, nullptr) == x) break;
  }
  return std::strtod(buf, nullptr);
}

}  // namespace

void hf_config_require(bool ok, const ModelConfig& c, const char* what) {
  SMEZO_REQUIRE(ok, "hf_config_json: cannot write a %s config.json: %s", c.family.c_str(), what);
}

void write_llama_like(const ModelConfig& c, json* j) {
  hf_config_require(c.norm_kind == NORM_RMS, c, "norm_kind must be NORM_RMS");
  hf_config_require(c.mlp_kind == MLP_SWIGLU, c, "mlp_kind must be MLP_SWIGLU");
  hf_config_require(c.position == POSITION_ROPE && c.learned_pos_offset == 0, c, "positions must be RoPE");
  hf_config_require(c.rope_style == ROPE_ROTATE_HALF, c, "rope_style must be ROPE_ROTATE_HALF (permute the q/k "
                    "weights of an interleaved-RoPE checkpoint first)");
  hf_config_require(c.rope_scaling.freq_divisors.empty(), c, "RoPE frequency divisors from a GGUF rope_freqs "
                    "tensor have no config.json field (rope_scaling needs llama3's four parameters)");
  json& o = *j;
  o["intermediate_size"] = c.hidden_dim;
  o["num_key_value_heads"] = c.n_kv_heads;
  o["head_dim"] = c.head_dim;
  o["rms_norm_eps"] = short_float(c.norm_eps);
  o["rope_theta"] = short_float(c.rope_theta);
  o["hidden_act"] = "silu";
  if (c.rope_scaling.kind == ROPE_SCALING_LLAMA3) {
    const RopeScaling& s = c.rope_scaling;
    o["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", short_float(s.factor)},
                         {"low_freq_factor", short_float(s.low_freq_factor)},
                         {"high_freq_factor", short_float(s.high_freq_factor)},
                         {"original_max_position_embeddings", s.original_max_positions}};
  }
}

}  // namespace smezo
