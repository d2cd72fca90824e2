// Exporting the current weights as a Hugging Face model directory that transformers can load:
// config.json + model.safetensors (+ the tokenizer's files when tokenizer_path is given:
// save_tokenizer_files, tokenizer_files.h). Models that use Meta's
// interleaved RoPE (llama2.c, GGUF) get the q/k rows of each head permuted into Hugging
// Face's rotate-half order on the way out (the same permutation HF's conversion applies).
// The directory is written next to its final place and renamed over it, so a crash never
// leaves a half-written checkpoint where a good one was.
//
// Tensors are written in the model's storage dtype (bf16 in, bf16 out) unless another is
// asked for, one at a time from the backend: nothing the size of the model is held on the
// host, only the largest tensor as fp32 and once more in the dtype written. Before writing,
// the free space of the file system that will hold the checkpoint is compared with the
// checkpoint's size: when it is short, nothing is written and the error names both numbers.
// Any failure removes the half-written DIR.tmp/ and keeps the previous checkpoint.
//
// A checkpoint written by `smezo train` also holds smezo_run.json, the data settings the run
// used, so `smezo eval --model RUN/checkpoint` measures what the run measured:
//   {"written_by": "smezo train", "task": "sst2", "max_len": 64, "data_seed": 42,
//    "n_train": 1000, "n_dev": 500, "n_test": 1000, "data_dir": "", "step": 200}
// (data_dir "" = the default; step = the training step the weights are from.)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model.h"

namespace smezo {

inline constexpr const char* kRunSettingsFile = "smezo_run.json";

// run_settings: written as smezo_run.json when it is a JSON object. tokenizer_path "": none
// copied. dtype: "f32", "f16" or "bf16"; "": the model's storage dtype.
void save_hf_checkpoint(Model& model, const std::string& dir, const std::string& tokenizer_path,
                        const nlohmann::json& run_settings = nullptr, const std::string& dtype = "");

// The tensors of a checkpoint and where their values come from: a whole model has them all; a
// pipeline's rank 0 fetches the other stages' (train/pipeline.h).
struct CheckpointTensor {
  std::string name;  // Hugging Face name
  int64_t rows = 1, cols = 1;
  ParamRole role = ROLE_OTHER;
  bool is_bias = false;
};
struct CheckpointSource {
  ModelConfig config;
  DType storage = DTYPE_F32;               // written when no dtype is asked for
  std::vector<CheckpointTensor> tensors;   // canonical order
  // The fp32 values of tensors[i] (rows * cols); each asked for once, in the order of the file
  // (safetensors lays the data out by name), not necessarily 0, 1, 2, ...
  std::function<void(size_t i, std::vector<float>* values)> fetch;
  // Called when a write fails, whenever that is (may be empty).
  std::function<void()> abandon;
};
CheckpointSource checkpoint_source(Model& model);
void save_hf_checkpoint(const CheckpointSource& source, const std::string& dir, const std::string& tokenizer_path,
                        const nlohmann::json& run_settings = nullptr, const std::string& dtype = "");

// The dtype a checkpoint of `model` is written in for a dtype name ("" = the storage dtype);
// throws naming the value when it is not f32, f16 or bf16.
DType checkpoint_dtype(Model& model, const std::string& dtype);

// The bytes save_hf_checkpoint() would write into dir (all files, before file-system rounding).
int64_t checkpoint_bytes(Model& model, const std::string& tokenizer_path, const nlohmann::json& run_settings,
                         const std::string& dtype = "");

// The free-space query: bytes available to this process on the file system holding `path`
// (statvfs f_bavail * f_frsize of its nearest existing folder).
using FreeSpaceQuery = std::function<int64_t(const std::string& path)>;
int64_t checkpoint_free_bytes(const std::string& path);
// The seam tests use to fake a full disk: replaces the query save_hf_checkpoint() asks, and
// returns the previous one; an empty function restores checkpoint_free_bytes.
FreeSpaceQuery checkpoint_set_free_space_query(FreeSpaceQuery query);

// Writes a folder so that a kill never leaves half of one: fill(tmp) writes the files into
// dir + ".tmp" (removed when fill throws), which then replaces dir (dir -> dir.old, tmp -> dir,
// dir.old dropped; run/run_dir.h restores dir.old after a kill between the two renames). `what`
// names the folder in errors ("checkpoint", "adapter").
void write_folder_swapped(const std::string& dir, const std::string& what,
                          const std::function<void(const std::string& tmp)>& fill);

// The smezo_run.json of a checkpoint folder; null when model_path is not a folder or holds none.
nlohmann::json checkpoint_read_run_settings(const std::string& model_path);

}  // namespace smezo
