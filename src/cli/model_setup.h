// Shared by the CLI commands: pick the backend, open the model and its tokenizer from the
// options --model, --tokenizer, --device and --dtype, with the bundled stories260K as the
// default.
#pragma once

#include <memory>
#include <string>

#include "cli/args.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace smezo {

struct LoadedModel {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::string model_path;
  std::string tokenizer_path;
};

std::string default_model_path();

// Reads --model, --tokenizer, --device, --dtype; sizes the workspace for
// max_tokens/max_logit_rows.
LoadedModel open_model(Args& args, int64_t max_tokens, int64_t max_logit_rows);
// The same from explicit values (tokenizer_arg may be empty: see resolve_tokenizer_path;
// dtype may be empty: the device's default storage, see storage_dtype).
LoadedModel open_model_paths(const std::string& model_path, const std::string& tokenizer_arg,
                             const std::string& device, int64_t max_tokens, int64_t max_logit_rows,
                             const std::string& dtype = "");

// "cpu", or "cuda" in builds with nvcc (SMEZO_WITH_CUDA).
std::unique_ptr<Backend> make_backend(const std::string& device);

// The parameter storage dtype for --dtype on a device: "f32" | "f16" | "bf16", or "" for the
// device's default (cpu: f32, the only one it stores; cuda: bf16).
DType storage_dtype(const std::string& device, const std::string& dtype);

// The tokenizer for a model: an explicit path, else tokenizer.model next to the model, else
// the bundled TinyStories tokenizer for the bundled stories260K.
std::string resolve_tokenizer_path(const std::string& model_path, const std::string& explicit_path);

// Errors unless the tokenizer's vocabulary matches the model's.
void check_tokenizer_matches(const Tokenizer& tokenizer, const std::string& tokenizer_path,
                             const ModelConfig& config, const std::string& model_path);

}  // namespace smezo
