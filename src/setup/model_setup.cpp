// Opening model + tokenizer + backend (see model_setup.h).
#include "setup/model_setup.h"

#include <filesystem>

#include "common/assets.h"
#include "common/check.h"
#include "common/device_names.h"
#include "common/file_util.h"
#include "common/stopwatch.h"
#include "cpu/cpu_backend.h"
#include "model/model_loader.h"
#include "tokenizer/tokenizer.h"

#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace smezo {

namespace {

bool hf_dir_has_tokenizer(const std::string& dir) {
  return is_file(dir + "/tokenizer.model") || is_file(dir + "/tokenizer.json") || is_file(dir + "/vocab.json");
}

std::string directory_of(const std::string& path) {
  if (is_dir(path)) return path;
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

std::string default_model_path() { return asset_path("models/stories260K.bin"); }

std::unique_ptr<Backend> make_backend(Device device, LinearPathMode mode, bool graphs) {
  enum_require_known(device_names(), device, "device");
  enum_require_known(linear_mode_names(), mode, "linear path");
  if (device == DEVICE_CPU) {
    SMEZO_REQUIRE(mode != LINEAR_MODE_FUSED, "--linear-path fused: the CPU backend has one linear path (it forms W' "
                  "rows in a buffer) ---> HINT: leave --linear-path out on the CPU, or use --device cuda");
    SMEZO_REQUIRE(!graphs, "--graphs on: CUDA graphs are a GPU's; the CPU backend launches nothing to capture "
                  "---> HINT: leave --graphs out on the CPU, or use --device cuda");
    return std::make_unique<CpuBackend>();
  }
#ifdef SMEZO_WITH_CUDA
  auto cuda = std::make_unique<CudaBackend>();
  cuda->set_linear_mode(mode);
  cuda->set_graphs(graphs);
  return cuda;
#else
  throw_error("--device cuda: this build has no CUDA (built without nvcc) ---> HINT: use --device "
              "cpu, or rebuild with nvcc on the PATH");
#endif
}

DType storage_dtype(Device device, std::optional<DType> dtype) {
  if (!dtype) return device == DEVICE_CUDA ? DTYPE_BF16 : DTYPE_F32;
  enum_require_known(dtype_option_names(), *dtype, "dtype");
  SMEZO_REQUIRE(*dtype == DTYPE_F32 || device != DEVICE_CPU,
                "--dtype %s: the CPU backend stores f32 only ---> HINT: leave --dtype out, or use "
                "--device cuda", dtype_option_name(dtype));
  return *dtype;
}

std::string find_tokenizer_path(const std::string& model_path, const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  std::string beside = directory_of(model_path) + "/tokenizer.model";
  if (is_file(beside)) return beside;
  // the bundled model, however its path is spelt (relative, absolute: an adapter records it absolute)
  std::error_code ec;
  if (model_path == default_model_path() || std::filesystem::equivalent(model_path, default_model_path(), ec))
    return asset_path("tokenizers/tinystories-512.model");
  return "";
}

std::string resolve_tokenizer_path(const std::string& model_path, const std::string& explicit_path) {
  std::string found = find_tokenizer_path(model_path, explicit_path);
  if (!found.empty()) return found;
  throw_error("no tokenizer for %s (no tokenizer.model beside it) ---> HINT: pass --tokenizer PATH "
              "(a sentencepiece .model)", model_path.c_str());
}

namespace {

OpenedTokenizer open_hf_dir_tokenizer(const std::string& dir) {
  if (tokenizer_kind_of_hf_dir(dir) == TOKENIZER_SENTENCEPIECE) {
    const std::string path = dir + "/tokenizer.model";
    return {load_sentencepiece_tokenizer(path), path};
  }
  return {load_bpe_tokenizer_hf_dir(dir), dir};
}

OpenedTokenizer open_gguf_tokenizer(const std::string& path, bool explicit_path) {
  SMEZO_REQUIRE(tokenizer_kind_of_gguf(path) == TOKENIZER_BPE,
                "%s: its tokenizer is a sentencepiece vocabulary in GGUF metadata (tokenizer.ggml.model "
                "\"llama\"), which smezo does not read ---> HINT: %s", path.c_str(),
                explicit_path ? "pass the model's tokenizer.model instead"
                              : "pass --tokenizer with the model's tokenizer.model");
  return {load_bpe_tokenizer_gguf(path), path};
}

}  // namespace

OpenedTokenizer open_model_tokenizer(const std::string& model_path, const std::string& explicit_path) {
  if (!explicit_path.empty()) {
    const std::string& t = explicit_path;
    if (is_dir(t)) return open_hf_dir_tokenizer(t);
    if (ends_with(t, ".gguf")) return open_gguf_tokenizer(t, true);
    if (ends_with(t, ".json")) return {load_bpe_tokenizer_json(t), t};
    return {load_sentencepiece_tokenizer(t), t};
  }
  if (ends_with(model_path, ".gguf")) return open_gguf_tokenizer(model_path, false);
  if (is_dir(model_path) || ends_with(model_path, ".safetensors")) {
    const std::string dir = directory_of(model_path);
    SMEZO_REQUIRE(hf_dir_has_tokenizer(dir),
                  "no tokenizer for %s (no tokenizer.model, tokenizer.json or vocab.json + merges.txt in %s) "
                  "---> HINT: pass --tokenizer PATH (a sentencepiece .model, a tokenizer.json or a GGUF file)",
                  model_path.c_str(), dir.c_str());
    return open_hf_dir_tokenizer(dir);
  }
  const std::string path = resolve_tokenizer_path(model_path, "");  // llama2.c: a .model beside it
  return {load_sentencepiece_tokenizer(path), path};
}

bool model_tokenizer_available(const std::string& model_path, const std::string& explicit_path) {
  if (!explicit_path.empty()) return true;
  if (ends_with(model_path, ".gguf")) return tokenizer_kind_of_gguf(model_path) == TOKENIZER_BPE;
  if (is_dir(model_path) || ends_with(model_path, ".safetensors")) {
    const std::string dir = directory_of(model_path);
    return hf_dir_has_tokenizer(dir);
  }
  return !find_tokenizer_path(model_path, "").empty();
}

void check_tokenizer_matches(const Tokenizer& tokenizer, const std::string& tokenizer_path,
                             const ModelConfig& config, const std::string& model_path) {
  SMEZO_REQUIRE(tokenizer.vocab_size() == config.vocab_size,
                "tokenizer %s has %lld tokens but model %s has a vocabulary of %lld ---> HINT: pass "
                "the tokenizer the model was trained with (--tokenizer)",
                tokenizer_path.c_str(), (long long)tokenizer.vocab_size(), model_path.c_str(),
                (long long)config.vocab_size);
}

std::string resolve_model_path(const std::string& model_path) {
  if (!model_path.empty()) return model_path;
  const std::string path = default_model_path();
  if (!path_exists(path))
    throw_error("the default model %s does not exist; %s ---> HINT: pass --model PATH, or set "
                "SMEZO_ASSETS to the assets folder (see weights/README.md)", path.c_str(),
                assets_search_note().c_str());
  return path;
}

LoadedModel open_model(const ModelOpenOptions& o) {
  storage_dtype(o.device, o.dtype);  // before anything heavy: fail fast
  resolve_model_path(o.model_path);
  return open_model_on(o, make_backend(o.device, o.linear_path, o.graphs));
}

LoadedModel open_model_on(const ModelOpenOptions& o, std::unique_ptr<Backend> backend) {
  const auto t_open = SteadyClock::now();
  SMEZO_REQUIRE(backend != nullptr, "open_model_on: no backend given");
  LoadedModel lm;
  const DType storage = storage_dtype(o.device, o.dtype);
  lm.model_path = resolve_model_path(o.model_path);
  lm.backend = std::move(backend);
#ifdef SMEZO_WITH_CUDA
  // --weights packed: a packed weight's W' block in the run's storage dtype (what the memory estimate counts)
  if (auto* cuda = dynamic_cast<CudaBackend*>(lm.backend.get())) cuda->set_packed_wprime_dtype(storage);
#endif
  WeightSource source = load_weights(lm.model_path);
  enum_require_known(weight_storage_names(), o.weights, "--weights");
  source.keep_packed = o.weights != WEIGHTS_DEQUANTIZED;
  // replay needs no tokenizer (tokenizer_optional): one found is opened, checked and copied
  if (!o.tokenizer_optional || model_tokenizer_available(lm.model_path, o.tokenizer_path)) {
    OpenedTokenizer tok = open_model_tokenizer(lm.model_path, o.tokenizer_path);
    lm.tokenizer = std::move(tok.tokenizer);
    lm.tokenizer_path = tok.path;
    check_tokenizer_matches(*lm.tokenizer, lm.tokenizer_path, source.config, lm.model_path);
  }
  WorkspaceRows rows;
  rows.tokens = o.max_tokens;
  rows.logit_rows = o.max_logit_rows;
  if (o.workspace) rows = o.workspace(source.config);
  const ModelStage stage = o.stage_count > 1 ? model_stage(source.config, o.stage_index, o.stage_count) : ModelStage{};
  TunedAdapters adapters = o.adapters;
  if (adapters.scales_rows > 0 && source.keep_packed)
    adapters.scale_values = packed_scale_values(source, adapters.scales_rows == 2);
  lm.estimate = estimate_model_memory(source.config, storage, rows, lm.backend->memory_plan(), stage, adapters,
                                      source.keep_packed ? packed_tensor_bytes(source) : PackedTensorBytes{});
  require_memory_fits(lm.estimate, lm.backend->free_memory_bytes(), lm.backend->name(), lm.model_path);
  lm.open_s = seconds_since(t_open);
  const auto t_load = SteadyClock::now();
  lm.model = std::make_unique<Model>(source, *lm.backend, storage, rows.tokens, rows.logit_rows, stage);
  lm.load_s = seconds_since(t_load);
  return lm;
}

LoadedModel open_model_paths(const std::string& model_path, const std::string& tokenizer_path,
                             Device device, int64_t max_tokens, int64_t max_logit_rows,
                             std::optional<DType> dtype) {
  ModelOpenOptions o;
  o.model_path = model_path;
  o.tokenizer_path = tokenizer_path;
  o.device = device;
  o.dtype = dtype;
  o.max_tokens = max_tokens;
  o.max_logit_rows = max_logit_rows;
  return open_model(o);
}

}  // namespace smezo
