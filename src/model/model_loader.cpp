// Format dispatch for load_weights().
#include "model/model_loader.h"

#include <sys/stat.h>

#include "common/check.h"
#include "common/file_util.h"
#include "model/gguf_llama.h"
#include "model/hf_dir.h"
#include "model/llama2c.h"
#include "model/model_check.h"

namespace smezo {

namespace {

WeightSource read_weight_files(const std::string& path) {
  struct stat st;
  SMEZO_REQUIRE(stat(path.c_str(), &st) == 0, "cannot open model %s: no such file or directory",
                path.c_str());
  if (S_ISDIR(st.st_mode)) return load_hf_dir(path);
  if (ends_with(path, ".safetensors")) return load_hf_dir(path);
  if (ends_with(path, ".bin")) return load_llama2c(path);
  if (ends_with(path, ".gguf")) return load_gguf(path);
  throw_error("%s: unknown model format; give a Hugging Face model directory (config.json + "
              "*.safetensors), a GGUF file (.gguf) or a llama2.c .bin checkpoint", path.c_str());
}

}  // namespace

WeightSource load_weights(const std::string& path) {
  WeightSource source = read_weight_files(path);
  check_weight_source(source);  // one set of checks for every format and every command
  return source;
}

}  // namespace smezo
