// Hugging Face config.json <-> ModelConfig, and a model directory's safetensors as a WeightSource.
#include "model/hf_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/file_util.h"
#include "common/mapped_file.h"
#include "formats/json_read.h"
#include "formats/safetensors.h"
#include "model/model_check.h"
#include "model/model_size.h"

namespace smezo {

namespace {

using json = nlohmann::json;

// --- small file helpers

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

// Parses a whole JSON file strictly (json_read.h); errors name the file.
json read_json_file(const std::string& path, const char* what) {
  std::shared_ptr<MappedFile> file = MappedFile::open(path, what);
  SMEZO_REQUIRE(file->size() > 0, "%s %s is empty", what, path.c_str());
  const char* begin = reinterpret_cast<const char*>(file->data());
  json j = json_parse_strict(begin, begin + file->size(), std::string(what) + " " + path);
  SMEZO_REQUIRE(j.is_object(), "%s %s is a JSON %s, expected an object", what, path.c_str(),
                j.type_name());
  return j;
}

// --- config.json fields, with errors that name the file and the field

// Fields whose null transformers reads as "not given"; null elsewhere is an error.
bool null_means_absent(const char* field) {
  for (const char* f : {"num_key_value_heads", "head_dim", "sliding_window", "rope_scaling",
                        "rope_parameters"})
    if (std::strcmp(f, field) == 0) return true;
  return false;
}

struct ConfigFields {
  const std::string& path;
  const json& j;
  std::string model_type;

  // The field's value; nullptr when it is absent (or null where null_means_absent).
  const json* value(const char* field) const {
    auto it = j.find(field);
    if (it == j.end()) return nullptr;
    if (it->is_null()) {
      if (null_means_absent(field)) return nullptr;
      throw_error("config %s: field '%s' is null; give it a value or remove it", path.c_str(),
                  field);
    }
    return &*it;
  }
  bool has(const char* field) const { return value(field) != nullptr; }

  [[noreturn]] void wrong_type(const char* field, const json& v, const char* expected) const {
    throw_error("config %s: field '%s' is %s (%s), expected %s", path.c_str(), field,
                v.type_name(), json_brief(v).c_str(), expected);
  }

  int64_t as_int(const char* field, const json& v) const {
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return static_cast<int64_t>(u);
    } else if (v.is_number_integer()) {
      return v.get<int64_t>();
    }
    wrong_type(field, v, "an integer");
  }

  int64_t get_int(const char* field) const {
    const json* v = value(field);
    SMEZO_REQUIRE(v, "config %s: field '%s' is missing (required for model_type %s)",
                  path.c_str(), field, model_type.c_str());
    return as_int(field, *v);
  }
  int64_t get_int(const char* field, int64_t fallback) const {
    const json* v = value(field);
    return v ? as_int(field, *v) : fallback;
  }

  // A positive finite float <= hi (a double that rounds to 0 or inf as a float is refused).
  float get_float(const char* field, double fallback, double hi) const {
    const json* v = value(field);
    if (v && !v->is_number()) wrong_type(field, *v, "a number");
    const double d = v ? v->get<double>() : fallback;
    const float f = static_cast<float>(d);
    SMEZO_REQUIRE(std::isfinite(d) && std::isfinite(f) && f > 0.0f && d <= hi,
                  "config %s: field '%s' is %g; it must be a positive number no larger than %g",
                  path.c_str(), field, d, hi);
    return f;
  }

  bool get_bool(const char* field, bool fallback) const {
    const json* v = value(field);
    if (v && !v->is_boolean()) wrong_type(field, *v, "true or false");
    return v ? v->get<bool>() : fallback;
  }

  std::string get_string(const char* field, const std::string& fallback) const {
    const json* v = value(field);
    if (v && !v->is_string()) wrong_type(field, *v, "a string");
    return v ? v->get<std::string>() : fallback;
  }

  // An id inside the vocabulary, or a non-empty list of them (the first is used).
  int32_t get_token(const char* field, int32_t fallback, int64_t vocab_size) const {
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
    SMEZO_REQUIRE(!ids.empty(), "config %s: field '%s' is an empty list, expected token ids",
                  path.c_str(), field);
    for (const json* e : ids) {
      const int64_t id = as_int(field, *e);
      SMEZO_REQUIRE(id >= 0 && id < vocab_size, "config %s: field '%s' holds token id %lld, "
                    "outside the vocabulary (vocab_size %lld)", path.c_str(), field,
                    static_cast<long long>(id), static_cast<long long>(vocab_size));
    }
    return static_cast<int32_t>(as_int(field, *ids[0]));
  }

  // 1 <= v <= hi, named after the field.
  void require_range(const char* field, int64_t v, int64_t hi) const {
    SMEZO_REQUIRE(v >= 1 && v <= hi, "config %s: field '%s' is %lld; it must be in 1..%lld",
                  path.c_str(), field, static_cast<long long>(v), static_cast<long long>(hi));
  }

  [[noreturn]] void unsupported(const char* field, const std::string& why) const {
    auto it = j.find(field);
    throw_error("config %s: field '%s' is %s; %s", path.c_str(), field,
                it != j.end() ? json_brief(*it).c_str() : "absent", why.c_str());
  }
};

// "rope_type" (or older "type") of a rope_scaling / rope_parameters object, or "".
std::string rope_type_of(const ConfigFields& f, const char* field) {
  const json& v = *f.value(field);
  if (!v.is_object()) f.wrong_type(field, v, "an object");
  for (const char* key : {"rope_type", "type"}) {
    auto it = v.find(key);
    if (it == v.end()) continue;
    SMEZO_REQUIRE(it->is_string(), "config %s: field '%s.%s' is %s, expected a string",
                  f.path.c_str(), field, key, json_brief(*it).c_str());
    return it->get<std::string>();
  }
  return "";
}

// rope_theta: top level (transformers 4.x) or inside rope_parameters (5.x).
float parse_rope_theta(const ConfigFields& f) {
  const float theta = f.get_float("rope_theta", 10000.0, 1e30);
  if (!f.has("rope_parameters")) return theta;
  std::string type = rope_type_of(f, "rope_parameters");
  if (type != "default" && !type.empty())
    f.unsupported("rope_parameters", "smezo supports only plain RoPE (rope_type \"default\")");
  const json& rp = *f.value("rope_parameters");
  auto it = rp.find("rope_theta");
  if (it == rp.end()) return theta;
  const double nested = it->is_number() ? it->get<double>() : 0.0;
  SMEZO_REQUIRE(it->is_number() && std::isfinite(nested) &&
                    std::isfinite(static_cast<float>(nested)) && static_cast<float>(nested) > 0.0f &&
                    nested <= 1e30,
                "config %s: field 'rope_parameters.rope_theta' is %s; it must be a positive "
                "number no larger than 1e30", f.path.c_str(), json_brief(*it).c_str());
  SMEZO_REQUIRE(!f.has("rope_theta") || static_cast<float>(nested) == theta,
                "config %s: field 'rope_theta' (%g) disagrees with 'rope_parameters.rope_theta' "
                "(%g); fix one of them", f.path.c_str(), static_cast<double>(theta), nested);
  return static_cast<float>(nested);
}

// The sizes every architecture has; mlp_key names the MLP width ("intermediate_size", "ffn_dim").
void parse_sizes(const ConfigFields& f, const char* mlp_key, ModelConfig* cfg) {
  cfg->dim = f.get_int("hidden_size");
  cfg->hidden_dim = f.get_int(mlp_key);
  cfg->n_layers = f.get_int("num_hidden_layers");
  cfg->n_heads = f.get_int("num_attention_heads");
  cfg->vocab_size = f.get_int("vocab_size");
  cfg->max_seq_len = f.get_int("max_position_embeddings");
  f.require_range("hidden_size", cfg->dim, kMaxWidth);
  f.require_range(mlp_key, cfg->hidden_dim, kMaxWidth);
  f.require_range("num_hidden_layers", cfg->n_layers, kMaxLayers);
  f.require_range("num_attention_heads", cfg->n_heads, kMaxWidth);
  f.require_range("vocab_size", cfg->vocab_size, kMaxVocab);
  f.require_range("max_position_embeddings", cfg->max_seq_len, kMaxPositions);
}

void parse_llama_family(const ConfigFields& f, ModelConfig* cfg) {
  parse_sizes(f, "intermediate_size", cfg);

  cfg->n_kv_heads = f.get_int("num_key_value_heads", cfg->n_heads);
  f.require_range("num_key_value_heads", cfg->n_kv_heads, cfg->n_heads);
  SMEZO_REQUIRE(cfg->n_heads % cfg->n_kv_heads == 0, "config %s: num_attention_heads %lld is "
                "not a multiple of num_key_value_heads %lld", f.path.c_str(),
                static_cast<long long>(cfg->n_heads), static_cast<long long>(cfg->n_kv_heads));
  if (f.has("head_dim")) {
    cfg->head_dim = f.get_int("head_dim");
    f.require_range("head_dim", cfg->head_dim, kMaxWidth);
  } else {
    SMEZO_REQUIRE(cfg->dim % cfg->n_heads == 0, "config %s: hidden_size %lld is not a multiple "
                  "of num_attention_heads %lld and there is no head_dim field", f.path.c_str(),
                  static_cast<long long>(cfg->dim), static_cast<long long>(cfg->n_heads));
    cfg->head_dim = cfg->dim / cfg->n_heads;
  }
  SMEZO_REQUIRE(cfg->head_dim % 2 == 0, "config %s: head_dim %lld (hidden_size / "
                "num_attention_heads, or the head_dim field) must be even for RoPE",
                f.path.c_str(), static_cast<long long>(cfg->head_dim));
  SMEZO_REQUIRE(cfg->n_heads * cfg->head_dim <= kMaxWidth, "config %s: num_attention_heads * "
                "head_dim = %lld * %lld is above %lld", f.path.c_str(),
                static_cast<long long>(cfg->n_heads), static_cast<long long>(cfg->head_dim),
                static_cast<long long>(kMaxWidth));

  cfg->norm_eps = f.get_float("rms_norm_eps", 1e-6, 1.0);
  cfg->rope_theta = parse_rope_theta(f);
  if (f.has("rope_scaling") && rope_type_of(f, "rope_scaling") != "default")
    f.unsupported("rope_scaling", "smezo supports only plain RoPE (rope_scaling null)");
  std::string act = f.get_string("hidden_act", "silu");
  if (act != "silu") f.unsupported("hidden_act", "smezo supports only \"silu\" for " + f.model_type);

  cfg->rope_style = ROPE_ROTATE_HALF;
  cfg->norm_kind = NORM_RMS;
  cfg->mlp_kind = MLP_SWIGLU;
  cfg->tied_lm_head = f.get_bool("tie_word_embeddings", false);
  cfg->learned_pos_offset = 0;
  cfg->bos_token = f.get_token("bos_token_id", 1, cfg->vocab_size);
  cfg->eos_token = f.get_token("eos_token_id", 2, cfg->vocab_size);

  if (cfg->arch == ARCH_LLAMA) {
    cfg->linear_bias = f.get_bool("attention_bias", false);
    if (f.has("mlp_bias") && f.get_bool("mlp_bias", false) != cfg->linear_bias)
      f.unsupported("mlp_bias", "smezo needs mlp_bias equal to attention_bias (biases on all "
                    "projections or on none)");
    cfg->sliding_window = 0;
  } else {  // mistral: transformers' Mistral has no projection biases
    cfg->linear_bias = false;
    const bool present = f.j.contains("sliding_window");
    cfg->sliding_window = present ? f.get_int("sliding_window", 0) : 4096;
    SMEZO_REQUIRE(cfg->sliding_window >= 0 && cfg->sliding_window <= kMaxPositions,
                  "config %s: field 'sliding_window' is %lld; it must be in 0..%lld (or null "
                  "for no window)", f.path.c_str(), static_cast<long long>(cfg->sliding_window),
                  static_cast<long long>(kMaxPositions));
  }
}

void parse_opt(const ConfigFields& f, ModelConfig* cfg) {
  parse_sizes(f, "ffn_dim", cfg);
  SMEZO_REQUIRE(cfg->dim % cfg->n_heads == 0, "config %s: hidden_size %lld is not a multiple of "
                "num_attention_heads %lld", f.path.c_str(), static_cast<long long>(cfg->dim),
                static_cast<long long>(cfg->n_heads));

  if (f.get_int("word_embed_proj_dim", cfg->dim) != cfg->dim)
    f.unsupported("word_embed_proj_dim", "smezo supports only OPT models whose "
                  "word_embed_proj_dim equals hidden_size (not supported: project_in/out)");
  if (!f.get_bool("do_layer_norm_before", true))
    f.unsupported("do_layer_norm_before", "post-LN OPT (OPT-350m) is not supported; use a "
                  "pre-LN OPT model (125m, 1.3b, 2.7b, ...)");
  if (!f.get_bool("enable_bias", true))
    f.unsupported("enable_bias", "smezo supports only OPT with biases");
  if (!f.get_bool("layer_norm_elementwise_affine", true))
    f.unsupported("layer_norm_elementwise_affine", "smezo supports only OPT with affine layer "
                  "norms");
  std::string act = f.get_string("activation_function", "relu");
  if (act != "relu") f.unsupported("activation_function", "smezo supports only \"relu\" for opt");

  cfg->n_kv_heads = cfg->n_heads;
  cfg->head_dim = cfg->dim / cfg->n_heads;
  cfg->norm_eps = 1e-5f;
  cfg->norm_kind = NORM_LAYER;
  cfg->mlp_kind = MLP_RELU;
  cfg->linear_bias = true;
  cfg->tied_lm_head = f.get_bool("tie_word_embeddings", true);
  cfg->learned_pos_offset = 2;
  cfg->sliding_window = 0;
  cfg->bos_token = f.get_token("bos_token_id", 2, cfg->vocab_size);
  cfg->eos_token = f.get_token("eos_token_id", 2, cfg->vocab_size);
}

// --- writing config.json

// The shortest decimal double that reads back as x (1e-5f prints as 1e-05, not 9.999999747378752e-06).
double short_float(float x) {
  char buf[32];
  for (int prec = 1; prec <= 9; prec++) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, static_cast<double>(x));
    if (std::strtof(buf, nullptr) == x) break;
  }
  return std::strtod(buf, nullptr);
}

const char* model_type_of(Architecture arch) {
  switch (arch) {
    case ARCH_LLAMA: return "llama";
    case ARCH_MISTRAL: return "mistral";
    case ARCH_OPT: return "opt";
  }
  return "?";
}

void require_writable(bool ok, const char* model_type, const char* what) {
  SMEZO_REQUIRE(ok, "hf_config_json: cannot write a %s config.json: %s", model_type, what);
}

// The shards model.safetensors.index.json lists (each a file in dir), checked against it, into ws.
void load_shards(const std::string& dir, const std::string& index_path, WeightSource* ws) {
  json index = read_json_file(index_path, "safetensors index");
  const char* ip = index_path.c_str();
  auto wm = index.find("weight_map");
  SMEZO_REQUIRE(wm != index.end() && wm->is_object(), "safetensors index %s: field 'weight_map' "
                "is missing or not an object of tensor name -> shard file", ip);
  auto meta = index.find("metadata");
  SMEZO_REQUIRE(meta == index.end() || meta->is_object() || meta->is_null(), "safetensors index "
                "%s: field 'metadata' is %s, expected an object", ip, json_brief(*meta).c_str());
  std::set<std::string> shard_names;
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    const std::string tensor = printable(it.key());
    SMEZO_REQUIRE(it->is_string(), "safetensors index %s: weight_map entry '%s' is %s, expected "
                  "a shard file name", ip, tensor.c_str(), json_brief(*it).c_str());
    const std::string name = it->get<std::string>();
    // A plain file name in the model directory: no path that could point elsewhere.
    SMEZO_REQUIRE(!name.empty() && name != "." && name != ".." &&
                      name.find('/') == std::string::npos && name.find('\0') == std::string::npos,
                  "safetensors index %s: tensor '%s' maps to shard '%s', which is not a file name "
                  "inside the model directory", ip, tensor.c_str(), printable(name).c_str());
    shard_names.insert(name);
  }
  SMEZO_REQUIRE(!shard_names.empty(), "safetensors index %s: weight_map is empty", ip);

  std::map<std::string, std::unique_ptr<SafetensorsFile>> shards;
  for (const std::string& name : shard_names) {
    const std::string shard_path = join_path(dir, name);
    SMEZO_REQUIRE(is_file(shard_path), "safetensors index %s lists shard '%s', but %s "
                  "is missing; download every shard of the model", ip, printable(name).c_str(),
                  printable(shard_path).c_str());
    auto file = std::make_unique<SafetensorsFile>(shard_path);
    for (const auto& kv : file->tensors()) {
      auto prev = ws->tensors.find(kv.first);
      SMEZO_REQUIRE(prev == ws->tensors.end(), "model %s: tensor '%s' is in two shards, %s and "
                    "%s", dir.c_str(), printable(kv.first).c_str(), prev->second.file.c_str(),
                    shard_path.c_str());
      auto listed = wm->find(kv.first);
      SMEZO_REQUIRE(listed != wm->end() && listed->get<std::string>() == name,
                    "safetensors index %s: shard '%s' holds tensor '%s', which the index %s; the "
                    "index is stale or the shards are mixed up", ip, printable(name).c_str(),
                    printable(kv.first).c_str(),
                    listed == wm->end()
                        ? "does not list"
                        : ("maps to shard '" + printable(listed->get<std::string>()) + "'").c_str());
      ws->tensors.emplace(kv.first, kv.second);
    }
    ws->keep_alive.push_back(file->keep_alive());
    shards.emplace(name, std::move(file));
  }
  for (auto it = wm->begin(); it != wm->end(); ++it) {
    const std::string shard = it->get<std::string>();
    SMEZO_REQUIRE(shards.at(shard)->has(it.key()), "safetensors index %s lists tensor '%s' in "
                  "shard '%s', but that shard does not contain it; the download is incomplete "
                  "or the index is stale", ip, printable(it.key()).c_str(),
                  printable(shard).c_str());
  }
}

}  // namespace

// --- public API

ModelConfig parse_hf_config(const std::string& config_json_path) {
  json j = read_json_file(config_json_path, "config");
  ConfigFields f{config_json_path, j, ""};
  SMEZO_REQUIRE(f.has("model_type"), "config %s: field 'model_type' is missing; smezo supports "
                "model_type llama, mistral and opt", config_json_path.c_str());
  f.model_type = f.get_string("model_type", "");

  ModelConfig cfg;
  if (f.model_type == "llama") {
    cfg.arch = ARCH_LLAMA;
    parse_llama_family(f, &cfg);
  } else if (f.model_type == "mistral") {
    cfg.arch = ARCH_MISTRAL;
    parse_llama_family(f, &cfg);
  } else if (f.model_type == "opt") {
    cfg.arch = ARCH_OPT;
    parse_opt(f, &cfg);
  } else {
    throw_error("config %s: field 'model_type' is \"%s\"; smezo supports model_type llama, "
                "mistral and opt", config_json_path.c_str(), printable(f.model_type).c_str());
  }
  check_model_config(cfg, config_json_path);  // the common floor (model_check.h)
  return cfg;
}

std::string hf_config_json(const ModelConfig& cfg, const std::string& torch_dtype) {
  const char* mt = model_type_of(cfg.arch);
  json j;
  j["model_type"] = mt;
  j["torch_dtype"] = torch_dtype;
  j["hidden_size"] = cfg.dim;
  j["num_hidden_layers"] = cfg.n_layers;
  j["num_attention_heads"] = cfg.n_heads;
  j["vocab_size"] = cfg.vocab_size;
  j["max_position_embeddings"] = cfg.max_seq_len;
  j["tie_word_embeddings"] = cfg.tied_lm_head;
  j["bos_token_id"] = cfg.bos_token;
  j["eos_token_id"] = cfg.eos_token;

  if (cfg.arch == ARCH_OPT) {
    require_writable(cfg.norm_kind == NORM_LAYER, mt, "norm_kind must be NORM_LAYER");
    require_writable(cfg.mlp_kind == MLP_RELU, mt, "mlp_kind must be MLP_RELU");
    require_writable(cfg.linear_bias, mt, "linear_bias must be true");
    require_writable(cfg.learned_pos_offset == 2, mt, "learned_pos_offset must be 2");
    require_writable(cfg.n_kv_heads == cfg.n_heads, mt, "n_kv_heads must equal n_heads");
    require_writable(cfg.n_heads > 0 && cfg.head_dim * cfg.n_heads == cfg.dim, mt,
                     "head_dim * n_heads must equal dim");
    require_writable(cfg.norm_eps == 1e-5f, mt, "norm_eps must be 1e-5");
    require_writable(cfg.sliding_window == 0, mt, "sliding_window must be 0");
    j["architectures"] = {"OPTForCausalLM"};
    j["ffn_dim"] = cfg.hidden_dim;
    j["word_embed_proj_dim"] = cfg.dim;
    j["do_layer_norm_before"] = true;
    j["enable_bias"] = true;
    j["layer_norm_elementwise_affine"] = true;
    j["activation_function"] = "relu";
    j["pad_token_id"] = 1;
  } else {
    require_writable(cfg.norm_kind == NORM_RMS, mt, "norm_kind must be NORM_RMS");
    require_writable(cfg.mlp_kind == MLP_SWIGLU, mt, "mlp_kind must be MLP_SWIGLU");
    require_writable(cfg.rope_style == ROPE_ROTATE_HALF, mt,
                     "rope_style must be ROPE_ROTATE_HALF (permute the q/k weights of an "
                     "interleaved-RoPE checkpoint first)");
    require_writable(cfg.learned_pos_offset == 0, mt, "learned_pos_offset must be 0");
    j["architectures"] = {cfg.arch == ARCH_LLAMA ? "LlamaForCausalLM" : "MistralForCausalLM"};
    j["intermediate_size"] = cfg.hidden_dim;
    j["num_key_value_heads"] = cfg.n_kv_heads;
    j["head_dim"] = cfg.head_dim;
    j["rms_norm_eps"] = short_float(cfg.norm_eps);
    j["rope_theta"] = short_float(cfg.rope_theta);
    j["hidden_act"] = "silu";
    if (cfg.arch == ARCH_LLAMA) {
      require_writable(cfg.sliding_window == 0, mt, "sliding_window must be 0 (use mistral)");
      j["attention_bias"] = cfg.linear_bias;
      j["mlp_bias"] = cfg.linear_bias;
    } else {
      require_writable(!cfg.linear_bias, mt, "linear_bias must be false");
      j["sliding_window"] = cfg.sliding_window > 0 ? json(cfg.sliding_window) : json(nullptr);
    }
  }
  return j.dump(2) + "\n";
}

WeightSource load_hf_dir(const std::string& path) {
  struct stat st;
  SMEZO_REQUIRE(stat(path.c_str(), &st) == 0, "cannot open model %s: %s; give a Hugging Face "
                "model directory (config.json + model.safetensors)", path.c_str(),
                std::strerror(errno));
  std::string dir = path;
  std::string single;  // the one safetensors file, when not sharded
  if (!S_ISDIR(st.st_mode)) {
    SMEZO_REQUIRE(ends_with(path, ".safetensors"), "model %s is a file, not a directory; give "
                  "the directory holding config.json and model.safetensors", path.c_str());
    size_t slash = path.find_last_of('/');
    dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    single = path;
  }

  WeightSource ws;
  ws.path = path;
  const std::string config_path = join_path(dir, "config.json");
  // a PEFT adapter folder (train/checkpoint_lora.h) holds no base weights
  SMEZO_REQUIRE(is_file(config_path) || !is_file(join_path(dir, "adapter_config.json")),
                "%s is an adapter folder (adapter_config.json, no config.json), not a model ---> HINT: pass it "
                "as --adapter %s (smezo eval, generate, logits and merge take one), with --model its base model "
                "or none for its base_model_name_or_path", dir.c_str(), dir.c_str());
  SMEZO_REQUIRE(is_file(config_path), "model directory %s has no config.json; a Hugging "
                "Face model directory needs config.json and model.safetensors (or "
                "model.safetensors.index.json)", dir.c_str());
  ws.config = parse_hf_config(config_path);

  const std::string index_path = join_path(dir, "model.safetensors.index.json");
  if (single.empty() && is_file(join_path(dir, "model.safetensors")))
    single = join_path(dir, "model.safetensors");

  if (!single.empty()) {
    SafetensorsFile file(single);
    ws.tensors = file.tensors();
    ws.keep_alive.push_back(file.keep_alive());
    return ws;
  }

  if (!is_file(index_path)) {
    bool has_bin = path_exists(join_path(dir, "pytorch_model.bin")) ||
                   path_exists(join_path(dir, "pytorch_model.bin.index.json"));
    throw_error("model directory %s has config.json but neither model.safetensors nor "
                "model.safetensors.index.json%s", dir.c_str(),
                has_bin ? "; ---> HINT: it holds PyTorch .bin weights: convert them with "
                          "transformers (from_pretrained(dir).save_pretrained(dir, "
                          "safe_serialization=True))" : "");
  }

  load_shards(dir, index_path, &ws);
  return ws;
}

}  // namespace smezo
