// Fuzz target: a whole Hugging Face model directory through load_weights and Model's load
// (the path every command takes). The input is split at "\n--8<--\n" into files:
//   part 0: config.json
//   2 parts: part 1 is model.safetensors
//   3+ parts: part 1 is model.safetensors.index.json, parts 2.. are shard1.safetensors, ...
#include <memory>

#include "model/model_loader.h"
#include "fuzz_util.h"
#include "model/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> parts = smezo_fuzz::split_parts(data, size, "\n--8<--\n");
  if (parts.size() < 2) return 0;
  const std::string dir = smezo_fuzz::fresh_dir("hf");
  smezo_fuzz::write_file(dir + "/config.json", parts[0]);
  if (parts.size() == 2) {
    smezo_fuzz::write_file(dir + "/model.safetensors", parts[1]);
  } else {
    smezo_fuzz::write_file(dir + "/model.safetensors.index.json", parts[1]);
    for (size_t i = 2; i < parts.size(); i++)
      smezo_fuzz::write_file(dir + "/shard" + std::to_string(i - 1) + ".safetensors", parts[i]);
  }
  smezo_fuzz::run_reader([&] {
    smezo::WeightSource source = smezo::load_weights(dir);
    smezo_fuzz::HostBackend backend;
    smezo::Model model(source, backend, smezo::DTYPE_F32, 4, 2);
  });
  return 0;
}
