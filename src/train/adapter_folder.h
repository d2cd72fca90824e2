// A PEFT adapter folder applied to a loaded model (smezo eval / generate / logits --adapter DIR):
// what `smezo train --tune lora|prefix` writes, or any PEFT folder of the kinds smezo reads:
//   peft_type LORA           -> Model::add_lora + load_lora_adapter    (checkpoint_lora.h)
//   peft_type PREFIX_TUNING  -> Model::add_prefix + load_prefix_adapter (checkpoint_prefix.h)
// Everything is read and checked before the model loads, so a bad folder fails fast.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "model/memory_estimate.h"  // TunedAdapters
#include "model/model.h"
#include "train/checkpoint_lora.h"
#include "train/checkpoint_prefix.h"

namespace smezo {

struct AdapterFolder {
  std::string dir;
  std::string peft_type;        // "LORA" | "PREFIX_TUNING"
  std::string base_model;       // base_model_name_or_path ("" when the config has none)
  std::string base_model_path;  // smezo_run.json's base_model_path (adapter_base.h), "" when absent
  nlohmann::json run_settings;  // the folder's smezo_run.json (checkpoint.h), null when absent
  LoraAdapter lora;             // peft_type LORA
  PrefixAdapter prefix;         // peft_type PREFIX_TUNING
  // Virtual tokens P before each sequence (0 for LoRA): workspace room, and max_seq_len - P left.
  int64_t prefix_tokens() const { return peft_type == "PREFIX_TUNING" ? prefix.options.tokens : 0; }
};

// Reads dir's adapter_config.json, tensors, smezo_run.json; throws naming the file for what it refuses.
AdapterFolder read_adapter_folder(const std::string& dir);

// model_path (--model) if given, else the first of base_model_path, base_model_name_or_path found here.
std::string adapter_model_path(const AdapterFolder& adapter, const std::string& model_path);

// What the adapters add to the model's memory (ModelOpenOptions::adapters), for the check before loading.
TunedAdapters adapter_memory_shape(const AdapterFolder& adapter);

// Gives a whole model without adapters the folder's adapters and values; throws for other dimensions.
void apply_adapter_folder(Model& model, const AdapterFolder& adapter);

}  // namespace smezo
