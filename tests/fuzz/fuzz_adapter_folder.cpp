// Fuzz target: a PEFT adapter folder (what `smezo eval/generate/logits --adapter DIR` and
// `smezo merge --adapter DIR` read) through read_adapter_folder: adapter_config.json's peft_type
// dispatch to the LoRA or the prefix reader, adapter_model.safetensors, smezo_run.json. The input
// is split at "\n--8<--\n": part 0 adapter_config.json, part 1 adapter_model.safetensors, an
// optional part 2 smezo_run.json.
#include "fuzz_util.h"
#include "train/adapter_folder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = smezo_fuzz::split_parts(data, size, "\n--8<--\n");
  if (parts.size() < 2 || parts.size() > 3) return 0;
  const std::string dir = smezo_fuzz::fresh_dir("adapter");
  smezo_fuzz::write_file(dir + "/adapter_config.json", parts[0]);
  smezo_fuzz::write_file(dir + "/adapter_model.safetensors", parts[1]);
  if (parts.size() == 3) smezo_fuzz::write_file(dir + "/smezo_run.json", parts[2]);
  smezo_fuzz::run_reader([&] {
    const smezo::AdapterFolder a = smezo::read_adapter_folder(dir);
    // an accepted folder is one of the two kinds, with tensors whose sizes its config states
    if (a.peft_type == "LORA") {
      for (const smezo::LoraAdapterTensor& t : a.lora.tensors)
        if ((int64_t)t.values.size() != t.rows * t.cols) std::abort();
    } else if (a.peft_type == "PREFIX_TUNING") {
      if ((int64_t)a.prefix.values.size() != a.prefix.options.tokens * a.prefix.layers * 2 * a.prefix.token_dim)
        std::abort();
    } else {
      std::abort();
    }
  });
  return 0;
}
