// Fuzz target: one llama2.c checkpoint through load_weights and Model's load.
#include "model/model_loader.h"
#include "fuzz_util.h"
#include "model/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = smezo_fuzz::scratch_dir() + "/model.bin";
  smezo_fuzz::write_file(path, data, size);
  smezo_fuzz::run_reader([&] {
    smezo::WeightSource source = smezo::load_weights(path);
    smezo_fuzz::HostBackend backend;
    smezo::Model model(source, backend, smezo::DTYPE_F32, 4, 2);
  });
  return 0;
}
