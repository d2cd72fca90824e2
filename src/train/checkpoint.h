// Exporting the current weights as a Hugging Face model directory that transformers can load:
// config.json + model.safetensors (+ the tokenizer's files when tokenizer_path is given:
// save_tokenizer_files, tokenizer_files.h). Models that use Meta's
// interleaved RoPE (llama2.c, GGUF) get the q/k rows of each head permuted into Hugging
// Face's rotate-half order on the way out (the same permutation HF's conversion applies).
// The directory is written next to its final place and renamed over it, so a crash never
// leaves a half-written checkpoint where a good one was.
//
// A checkpoint written by `smezo train` also holds smezo_run.json, the data settings the run
// used, so `smezo eval --model RUN/checkpoint` measures what the run measured:
//   {"written_by": "smezo train", "task": "sst2", "max_len": 64, "data_seed": 42,
//    "n_train": 1000, "n_dev": 500, "n_test": 1000, "data_dir": "", "step": 200}
// (data_dir "" = the default; step = the training step the weights are from.)
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/model.h"

namespace smezo {

inline constexpr const char* kRunSettingsFile = "smezo_run.json";

// run_settings: written as smezo_run.json when it is a JSON object.
void save_hf_checkpoint(Model& model, const std::string& dir, const std::string& tokenizer_path,
                        const nlohmann::json& run_settings = nullptr);

// The smezo_run.json of a checkpoint folder; null when model_path is not a folder or holds none.
nlohmann::json checkpoint_read_run_settings(const std::string& model_path);

}  // namespace smezo
