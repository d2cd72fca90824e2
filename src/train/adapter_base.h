// Where an adapter folder (checkpoint_lora.h, checkpoint_prefix.h) says its base model is, in two
// fields for two readers:
//   adapter_config.json  base_model_name_or_path: a name Hugging Face PEFT's auto classes
//                        (AutoPeftModelForCausalLM.from_pretrained(DIR)) load the base from:
//                          a Hugging Face model folder     its absolute path
//                          a GGUF whose metadata names     that Hub id, from
//                          the Hub model it was made from  general.source.huggingface.repository
//                                                          or a https://huggingface.co/ORG/NAME
//                                                          general.source.repo_url / source.url
//                          a GGUF without one, a llama2.c  null: transformers cannot load such a
//                          .bin                            file (smezo convert makes a folder of it)
//                          a path that does not exist here as given (a Hub id)
//                        (general.base_model.N.* name a GGUF's fine-tuning parent: unused.)
//   smezo_run.json       base_model_path: the model smezo trained on, absolute; `--adapter DIR` opens it.
// read_adapter_folder (adapter_folder.h) takes base_model_path first, then base_model_name_or_path.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace smezo {

inline constexpr const char* kRunBaseModelPathKey = "base_model_path";

// adapter_config.json's base_model_name_or_path for a base model path (a string, or null).
nlohmann::json adapter_peft_base_name(const std::string& model_path);

// run_settings (object or null) with base_model_path = model_path made absolute (unless a Hub id).
nlohmann::json adapter_run_settings(const nlohmann::json& run_settings, const std::string& model_path);

// The Hub id a GGUF file records for the model it was converted from, or "".
std::string gguf_source_hub_id(const std::string& gguf_path);

}  // namespace smezo
