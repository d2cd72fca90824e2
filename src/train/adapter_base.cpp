// The base model fields of an adapter folder (see adapter_base.h).
#include "train/adapter_base.h"

#include <cctype>
#include <filesystem>
#include <memory>

#include "common/file_util.h"
#include "formats/gguf.h"
#include "train/checkpoint_lora.h"  // adapter_base_model

namespace smezo {

namespace {

// "ORG/NAME" of letters, digits, '-', '_' and '.', as the Hub names repositories.
bool is_hub_id(const std::string& id) {
  const size_t slash = id.find('/');
  if (slash == 0 || slash == std::string::npos || slash + 1 == id.size() || id.find('/', slash + 1) != id.npos)
    return false;
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/')) return false;
  return true;
}

// "ORG/NAME" of https://huggingface.co/ORG/NAME[/...], or "".
std::string hub_id_of_url(const std::string& url) {
  for (const char* host : {"https://huggingface.co/", "https://hf.co/", "https://www.huggingface.co/"}) {
    if (url.rfind(host, 0) != 0) continue;
    const std::string rest = url.substr(std::string(host).size());
    const size_t second = rest.find('/', rest.find('/') + 1);
    const std::string id = rest.substr(0, second);
    return is_hub_id(id) ? id : "";
  }
  return "";
}

std::string gguf_string_or_empty(const GgufFile& file, const char* key) {
  const GgufValue* v = file.find(key);
  return v && v->type == GGUF_VALUE_STRING ? std::string(v->string) : "";
}

}  // namespace

std::string gguf_source_hub_id(const std::string& gguf_path) {
  const std::shared_ptr<GgufFile> file = GgufFile::open(gguf_path);
  const std::string repository = gguf_string_or_empty(*file, "general.source.huggingface.repository");
  if (is_hub_id(repository)) return repository;
  const std::string from_url = hub_id_of_url(repository);
  if (!from_url.empty()) return from_url;
  for (const char* key : {"general.source.repo_url", "general.source.url"}) {
    const std::string id = hub_id_of_url(gguf_string_or_empty(*file, key));
    if (!id.empty()) return id;
  }
  return "";
}

nlohmann::json adapter_peft_base_name(const std::string& model_path) {
  if (model_path.empty()) return nullptr;
  if (!path_exists(model_path)) return model_path;  // not a local model: a Hub id, as given
  if (is_dir(model_path)) return adapter_base_model(model_path);
  if (ends_with(model_path, ".safetensors"))  // a file of a Hugging Face folder: the folder
    return adapter_base_model(std::filesystem::absolute(model_path).parent_path().string());
  if (ends_with(model_path, ".gguf")) {
    const std::string id = gguf_source_hub_id(model_path);
    if (!id.empty()) return id;
  }
  return nullptr;  // a file transformers cannot load as a model
}

nlohmann::json adapter_run_settings(const nlohmann::json& run_settings, const std::string& model_path) {
  if (model_path.empty() || !path_exists(model_path)) return run_settings;
  nlohmann::json settings = run_settings.is_object() ? run_settings : nlohmann::json::object();
  settings[kRunBaseModelPathKey] = adapter_base_model(model_path);
  return settings;
}

}  // namespace smezo
