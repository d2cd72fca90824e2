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
#include "model/family_parts.h"
#include "model/family.h"
#include "model/model_check.h"

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
  HfConfigReader f(config_json_path, j, "");
  SMEZO_REQUIRE(f.has("model_type"), "config %s: field 'model_type' is missing; smezo supports model_type %s",
                config_json_path.c_str(), supported_hf_model_types().c_str());
  f.model_type = f.get_string("model_type", "");
  const FamilyDescriptor* family = family_by_hf_model_type(f.model_type);
  SMEZO_REQUIRE(family, "config %s: model_type %s is not supported; supported: %s", config_json_path.c_str(),
                printable(f.model_type).c_str(), supported_hf_model_types().c_str());
  ModelConfig cfg;
  cfg.family = family->name;
  family->read_hf(f, &cfg);
  check_model_config(cfg, config_json_path);  // the common floor and the family's rules (model_check.h)
  return cfg;
}

std::string hf_config_json(const ModelConfig& cfg, const std::string& torch_dtype) {
  const FamilyDescriptor& family = family_of(cfg);
  json j;
  j["model_type"] = family.hf_model_type;
  j["architectures"] = {family.hf_architecture};
  j["torch_dtype"] = torch_dtype;
  j["hidden_size"] = cfg.dim;
  j["num_hidden_layers"] = cfg.n_layers;
  j["num_attention_heads"] = cfg.n_heads;
  j["vocab_size"] = cfg.vocab_size;
  j["max_position_embeddings"] = cfg.max_seq_len;
  j["tie_word_embeddings"] = cfg.tied_lm_head;
  j["bos_token_id"] = cfg.bos_token;
  j["eos_token_id"] = cfg.eos_token;
  family.write_hf(cfg, &j);
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
