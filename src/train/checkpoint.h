// Exports the current weights as a Hugging Face model directory: config.json + model.safetensors
// (+ the tokenizer's files when tokenizer_path is given). Meta's interleaved RoPE (llama2.c, GGUF)
// gets each head's q/k rows permuted to HF's rotate-half order.
// Tensors go one at a time from the backend (storage dtype unless asked): the host holds only the
// largest, as fp32 and in the dtype written. Short of disk space, nothing is written and the error
// names both numbers. DIR.tmp/ is swapped in (write_folder_swapped): a failure keeps the old one.
// A checkpoint from `smezo train` also holds smezo_run.json, the run's data settings, so
// `smezo eval --model RUN/checkpoint` measures what the run did:
//   {"written_by": "smezo train", "task": "sst2", "max_len": 64, "data_seed": 42,
//    "n_train": 1000, "n_dev": 500, "n_test": 1000, "data_dir": "", "step": 200}
// (data_dir "" = the default; step = the training step the weights are from.)
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model.h"

namespace smezo {

inline constexpr const char* kRunSettingsFile = "smezo_run.json";

// run_settings: smezo_run.json when a JSON object. tokenizer_path "": none. dtype unset: the storage's.
void save_hf_checkpoint(Model& model, const std::string& dir, const std::string& tokenizer_path,
                        const nlohmann::json& run_settings = nullptr, std::optional<DType> dtype = std::nullopt);

// A checkpoint's tensors and where their values come from (a pipeline's rank 0 fetches the stages').
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
  // The fp32 values of tensors[i] (rows * cols); each asked for once, in file order (not 0, 1, 2...).
  std::function<void(size_t i, std::vector<float>* values)> fetch;
  // Called when a write fails, whenever that is (may be empty).
  std::function<void()> abandon;
};
CheckpointSource checkpoint_source(Model& model);
void save_hf_checkpoint(const CheckpointSource& source, const std::string& dir, const std::string& tokenizer_path,
                        const nlohmann::json& run_settings = nullptr, std::optional<DType> dtype = std::nullopt);

// The checkpoint dtype: the one asked, or the storage dtype when unset.
DType checkpoint_dtype(Model& model, std::optional<DType> dtype);

// The bytes save_hf_checkpoint() would write into dir (all files, before file-system rounding).
int64_t checkpoint_bytes(Model& model, const std::string& tokenizer_path, const nlohmann::json& run_settings,
                         std::optional<DType> dtype = std::nullopt);

// Bytes available to this process on the file system holding `path` (statvfs of the nearest folder).
using FreeSpaceQuery = std::function<int64_t(const std::string& path)>;
int64_t checkpoint_free_bytes(const std::string& path);
// Tests fake a full disk here: replaces the query, returns the previous one (empty: the default).
FreeSpaceQuery checkpoint_set_free_space_query(FreeSpaceQuery query);

// fill(tmp) writes dir.tmp (removed if it throws); then dir -> dir.old, tmp -> dir, drop dir.old (run_dir.h).
void write_folder_swapped(const std::string& dir, const std::string& what,
                          const std::function<void(const std::string& tmp)>& fill);

// The smezo_run.json of a checkpoint folder; null when model_path is not a folder or holds none.
nlohmann::json checkpoint_read_run_settings(const std::string& model_path);

}  // namespace smezo
