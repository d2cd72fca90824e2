// Opening a model: backend, weights and tokenizer, checked to belong together, in the chosen dtype.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "model/memory_estimate.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace smezo {

struct ModelOpenOptions {
  std::string model_path;         // "": default_model_path()
  std::string tokenizer_path;     // "": the model's own (open_model_tokenizer)
  Device device = DEVICE_CPU;
  std::optional<DType> dtype;     // unset: the device's default (storage_dtype)
  LinearPathMode linear_path = LINEAR_MODE_AUTO;  // --linear-path (make_backend)
  bool graphs = false;            // --graphs on: forward passes as CUDA graphs (make_backend)
  // --weights: packed (or auto) keeps a GGUF's block-quantised 2-D tensors in their blocks, frozen; a
  // caller that updates the weights (train under --tune full, replay) passes dequantized
  WeightStorage weights = WEIGHTS_DEQUANTIZED;
  int64_t max_tokens = 8192;      // workspace: tokens per forward
  int64_t max_logit_rows = 1024;  // workspace: logit rows per forward
  // Set: the workspace from the model's config, read before anything is allocated, in place of the two
  // above (a length asked beyond the model's context, such as --max-len, is capped before it sizes buffers).
  std::function<WorkspaceRows(const ModelConfig&)> workspace;
  int stage_index = 0, stage_count = 1;  // a pipeline stage (model_stage): load only its layers
  TunedAdapters adapters;         // --tune lora/prefix: counted in the memory check, made by the caller
  bool tokenizer_optional = false;  // true: none found is no error (tokenizer null, path ""), e.g. replay
};

struct LoadedModel {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::string model_path;
  std::string tokenizer_path;  // where the tokenizer came from (OpenedTokenizer::path)
  MemoryEstimate estimate;      // what the model was expected to need on the backend
  // Start-up wall seconds: open = headers/config, tokenizer, backend; load = weights streamed in.
  double open_s = 0.0;
  double load_s = 0.0;
};

// The bundled stories260K: asset_path("models/stories260K.bin").
std::string default_model_path();
// model_path, or the default model when empty (throws, saying where it looked, if missing).
std::string resolve_model_path(const std::string& model_path);

// Refuses in one line, before allocating, when estimate_model_memory() exceeds free memory.
LoadedModel open_model(const ModelOpenOptions& options);
// The same on a backend the caller made (options.device must name its kind): tests fake free memory.
LoadedModel open_model_on(const ModelOpenOptions& options, std::unique_ptr<Backend> backend);
// The same with the fields spelled out (dtype may be empty).
LoadedModel open_model_paths(const std::string& model_path, const std::string& tokenizer_path,
                             Device device, int64_t max_tokens, int64_t max_logit_rows,
                             std::optional<DType> dtype = std::nullopt);

// The CPU, or CUDA in builds with nvcc. linear_path: the CUDA linear path; the CPU refuses fused.
// graphs: forward passes captured as CUDA graphs (cuda/cuda_graphs.cu); the CPU refuses it.
std::unique_ptr<Backend> make_backend(Device device, LinearPathMode linear_path = LINEAR_MODE_AUTO,
                                      bool graphs = false);

// The storage dtype asked, or unset for the device's default (cpu: f32; cuda: bf16); the CPU stores f32 only.
DType storage_dtype(Device device, std::optional<DType> dtype);

// A model's sentencepiece tokenizer: explicit_path, else tokenizer.model beside it, else the bundled one.
std::string resolve_tokenizer_path(const std::string& model_path, const std::string& explicit_path);

// A tokenizer and its path (a sentencepiece .model, tokenizer.json, HF directory or GGUF file).
struct OpenedTokenizer {
  std::unique_ptr<Tokenizer> tokenizer;
  std::string path;
};

// The model decides its tokenizer: a GGUF file -> byte-level BPE from its metadata (a "llama"
// vocabulary needs --tokenizer); an HF directory (or a .safetensors in one) -> tokenizer.model
// (sentencepiece), else tokenizer.json / vocab.json + merges.txt (BPE); a llama2.c .bin ->
// tokenizer.model beside it, the bundled one for stories260K. explicit_path (--tokenizer) overrides,
// read by what it is: a directory as above, *.gguf, *.json as a tokenizer.json, else sentencepiece.
OpenedTokenizer open_model_tokenizer(const std::string& model_path, const std::string& explicit_path);

// Whether open_model_tokenizer would find a tokenizer for the model.
bool model_tokenizer_available(const std::string& model_path, const std::string& explicit_path);

// resolve_tokenizer_path, but "" instead of an error when there is none to be found.
std::string find_tokenizer_path(const std::string& model_path, const std::string& explicit_path);

// Errors unless the tokenizer's vocabulary matches the model's.
void check_tokenizer_matches(const Tokenizer& tokenizer, const std::string& tokenizer_path,
                             const ModelConfig& config, const std::string& model_path);

}  // namespace smezo
