// Fuzz target: one config.json through parse_hf_config. On success the config must pass the
// common checks and its sizes must be computable (no overflow) — the reader's promise.
#include <cstdlib>

#include "model/hf_dir.h"
#include "fuzz_util.h"
#include "model/model_check.h"
#include "model/model_size.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = smezo_fuzz::scratch_dir() + "/config.json";
  smezo_fuzz::write_file(path, data, size);
  smezo_fuzz::run_reader([&] {
    smezo::ModelConfig c = smezo::parse_hf_config(path);
    smezo::ModelSize s;
    if (!smezo::model_size_of(c, &s)) std::abort();
    smezo::check_model_config(c, path);  // must not throw after a successful parse
    smezo::hf_config_json(c);            // what was read can be written back
  });
  return 0;
}
