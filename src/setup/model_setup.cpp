// Opening model + tokenizer + backend (see model_setup.h).
#include "setup/model_setup.h"

#include <sys/stat.h>

#include "common/assets.h"
#include "common/check.h"
#include "cpu/cpu_backend.h"
#include "formats/model_loader.h"

#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace smezo {

namespace {

bool file_exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool path_exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

std::string directory_of(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return path;
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

std::string default_model_path() { return asset_path("models/stories260K.bin"); }

std::unique_ptr<Backend> make_backend(const std::string& device) {
  if (device == "cpu") return std::make_unique<CpuBackend>();
  if (device == "cuda") {
#ifdef SMEZO_WITH_CUDA
    return std::make_unique<CudaBackend>();
#else
    throw_error("--device cuda: this build has no CUDA (built without nvcc) ---> HINT: use --device "
                "cpu, or rebuild with nvcc on the PATH");
#endif
  }
  throw_error("unknown --device '%s' (choose cpu or cuda)", device.c_str());
}

DType storage_dtype(const std::string& device, const std::string& dtype) {
  if (dtype.empty()) return device == "cuda" ? DTYPE_BF16 : DTYPE_F32;
  DType d;
  if (dtype == "f32") {
    d = DTYPE_F32;
  } else if (dtype == "f16") {
    d = DTYPE_F16;
  } else if (dtype == "bf16") {
    d = DTYPE_BF16;
  } else {
    throw_error("unknown --dtype '%s' (choose f32, f16 or bf16)", dtype.c_str());
  }
  SMEZO_REQUIRE(d == DTYPE_F32 || device != "cpu",
                "--dtype %s: the CPU backend stores f32 only ---> HINT: leave --dtype out, or use "
                "--device cuda", dtype.c_str());
  return d;
}

std::string find_tokenizer_path(const std::string& model_path, const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  std::string beside = directory_of(model_path) + "/tokenizer.model";
  if (file_exists(beside)) return beside;
  if (model_path == default_model_path()) return asset_path("tokenizers/tinystories-512.model");
  return "";
}

std::string resolve_tokenizer_path(const std::string& model_path, const std::string& explicit_path) {
  std::string found = find_tokenizer_path(model_path, explicit_path);
  if (!found.empty()) return found;
  throw_error("no tokenizer for %s (no tokenizer.model beside it) ---> HINT: pass --tokenizer PATH "
              "(a sentencepiece .model)", model_path.c_str());
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
  LoadedModel lm;
  const DType storage = storage_dtype(o.device, o.dtype);  // before anything heavy: fail fast
  lm.model_path = resolve_model_path(o.model_path);
  lm.backend = make_backend(o.device);
  WeightSource source = load_weights(lm.model_path);
  lm.tokenizer_path = o.tokenizer_optional ? find_tokenizer_path(lm.model_path, o.tokenizer_path)
                                           : resolve_tokenizer_path(lm.model_path, o.tokenizer_path);
  if (!lm.tokenizer_path.empty()) {
    lm.tokenizer = load_sentencepiece_tokenizer(lm.tokenizer_path);
    check_tokenizer_matches(*lm.tokenizer, lm.tokenizer_path, source.config, lm.model_path);
  }
  lm.model = std::make_unique<Model>(source, *lm.backend, storage, o.max_tokens, o.max_logit_rows);
  return lm;
}

LoadedModel open_model_paths(const std::string& model_path, const std::string& tokenizer_path,
                             const std::string& device, int64_t max_tokens, int64_t max_logit_rows,
                             const std::string& dtype) {
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
