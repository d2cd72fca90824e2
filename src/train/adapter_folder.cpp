// Applying a PEFT adapter folder (LoRA or prefix) to a loaded model (see adapter_folder.h).
#include "train/adapter_folder.h"

#include "common/check.h"
#include "common/file_util.h"
#include "formats/json_read.h"
#include "train/adapter_base.h"
#include "train/checkpoint.h"  // checkpoint_read_run_settings

namespace smezo {

AdapterFolder read_adapter_folder(const std::string& dir) {
  SMEZO_REQUIRE(is_dir(dir), "--adapter %s: no such folder ---> HINT: give the adapter folder (adapter_config.json "
                "+ adapter_model.safetensors), e.g. a --tune lora or --tune prefix run's checkpoint/",
                printable(dir).c_str());
  const std::string config_path = dir + "/" + kAdapterConfigFile;
  SMEZO_REQUIRE(is_file(config_path), "--adapter %s: no %s in it, so it is not a PEFT adapter folder ---> HINT: "
                "a full model (config.json) goes to --model", printable(dir).c_str(), kAdapterConfigFile);
  const nlohmann::json config = read_adapter_config(dir);
  SMEZO_REQUIRE(config.contains("peft_type"), "%s: field peft_type is missing", config_path.c_str());
  AdapterFolder a;
  a.dir = dir;
  a.peft_type = config["peft_type"].is_string() ? config["peft_type"].get<std::string>() : "";
  if (a.peft_type == "LORA") {
    a.lora = read_lora_adapter(dir);
    a.base_model = a.lora.base_model;
  } else if (a.peft_type == "PREFIX_TUNING") {
    a.prefix = read_prefix_adapter(dir);
    a.base_model = a.prefix.base_model;
  } else {
    throw_error("%s: peft_type %s is not one smezo applies: LORA and PREFIX_TUNING are supported",
                config_path.c_str(), printable(json_brief(config["peft_type"])).c_str());
  }
  a.run_settings = checkpoint_read_run_settings(dir);
  if (a.run_settings.is_object())
    a.base_model_path = adapter_config_string(a.run_settings, kRunBaseModelPathKey, dir + "/" + kRunSettingsFile);
  return a;
}

std::string adapter_model_path(const AdapterFolder& adapter, const std::string& model_path) {
  if (!model_path.empty()) return model_path;
  if (!adapter.base_model_path.empty() && path_exists(adapter.base_model_path)) return adapter.base_model_path;
  if (!adapter.base_model.empty() && path_exists(adapter.base_model)) return adapter.base_model;
  SMEZO_REQUIRE(!adapter.base_model_path.empty() || !adapter.base_model.empty(),
                "%s names no base model (no %s in %s, no base_model_name_or_path in %s) ---> HINT: pass --model "
                "PATH (the base model the adapter was trained on)", adapter.dir.c_str(), kRunBaseModelPathKey,
                kRunSettingsFile, kAdapterConfigFile);
  const std::string& named = adapter.base_model_path.empty() ? adapter.base_model : adapter.base_model_path;
  throw_error("the adapter's base model %s (%s in %s/%s) is not a file or folder here ---> HINT: pass --model PATH "
              "(a local copy of it)", printable(named).c_str(),
              adapter.base_model_path.empty() ? "base_model_name_or_path" : kRunBaseModelPathKey, adapter.dir.c_str(),
              adapter.base_model_path.empty() ? kAdapterConfigFile : kRunSettingsFile);
}

void apply_adapter_folder(Model& model, const AdapterFolder& adapter) {
  SMEZO_REQUIRE(!model.has_lora() && !model.has_prefix(), "--adapter %s: the model already has adapters",
                adapter.dir.c_str());
  try {
    // the seed only initialises what the file's values then replace
    if (adapter.peft_type == "LORA") {
      model.add_lora(adapter.lora.options, 0);
      load_lora_adapter(model, adapter.lora);
    } else {
      model.add_prefix(adapter.prefix.options, 0);
      load_prefix_adapter(model, adapter.prefix);
    }
  } catch (const Error& e) {  // the model's own message, said of the folder
    const std::string& named = adapter.base_model_path.empty() ? adapter.base_model : adapter.base_model_path;
    const std::string base = named.empty() ? "" : " (" + named + ")";
    throw Error("--adapter " + adapter.dir + " does not fit this model: " + e.message(),
                e.hint().empty() ? "pass the base model the adapter was trained on" + base + " as --model" : e.hint());
  }
}

TunedAdapters adapter_memory_shape(const AdapterFolder& adapter) {
  TunedAdapters t;
  if (adapter.peft_type == "LORA") {
    t.lora_rank = adapter.lora.options.rank;
    t.lora_targets = adapter.lora.options.targets;
  }
  t.prefix_tokens = adapter.prefix_tokens();
  return t;
}

}  // namespace smezo
