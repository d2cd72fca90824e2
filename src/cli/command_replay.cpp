// smezo replay BASE SEEDLOG --out DIR: smezo::replay() (include/smezo/replay.h), and what it wrote.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "smezo/replay.h"

namespace smezo {

namespace {

int run_replay(const ReplayOptions& s) {
  const ReplayResult r = replay(s);
  std::printf("replayed %lld steps of %s onto %s -> %s%s\n", (long long)r.steps, s.seed_log.c_str(), r.base.c_str(),
              s.out.c_str(), r.partial_tail ? " (a partial last line was ignored)" : "");
  std::printf("the run's forward passes took: %s (a replay runs the updates only, on any path)\n", r.run_path.c_str());
  if (r.written == TUNE_LORA)  // an adapter folder holds no tokenizer
    std::printf("%s is a LoRA adapter (PEFT layout): smezo merge --model %s --adapter %s --out DIR makes a full "
                "model of it\n", s.out.c_str(), r.base.c_str(), s.out.c_str());
  else if (r.written == TUNE_PREFIX)
    std::printf("%s is a prefix adapter (PEFT's PREFIX_TUNING layout) for %s\n", s.out.c_str(), r.base.c_str());
  else if (r.written == TUNE_SCALES)
    std::printf("%s/model.gguf is %s with its tuned block scales (llama.cpp and smezo load it)\n", s.out.c_str(),
                r.base.c_str());
  else if (r.tokenizer_path.empty())
    std::printf("no tokenizer beside %s and no --tokenizer: %s holds none (copy the model's tokenizer there to use "
                "it for text)\n", r.base.c_str(), s.out.c_str());
  else
    std::printf("tokenizer %s copied into %s\n", r.tokenizer_path.c_str(), s.out.c_str());
  return 0;
}

}  // namespace

Command register_replay(CLI::App& smezo) {
  auto s = std::make_shared<ReplayOptions>();
  CLI::App* cmd = add_command(smezo, "replay", "rebuild a run's fine-tuned weights from the base model and its "
                                               "seed log, bit for bit, as a Hugging Face checkpoint");
  cmd->add_option("BASE", s->base, "the base model the run started from")->type_name("PATH")->required();
  cmd->add_option("SEEDLOG", s->seed_log, "the run's seed_log.txt")->type_name("PATH")->required();
  cmd->add_option("--out", s->out, "the checkpoint folder to write")->type_name("DIR")->required();
  cmd->add_option("--tokenizer", s->tokenizer, "copied into the checkpoint (replay itself needs none)")
      ->type_name("PATH")
      ->default_str("tokenizer.model beside the base model, the bundled one for stories260K, else none");
  add_optional_enum_option(cmd, "--checkpoint-dtype", &s->checkpoint_dtype, dtype_option_names(),
                           "dtype of the checkpoint's tensors")
      ->default_str("the run's storage dtype");
  add_optional_enum_option(cmd, "--device", &s->device, device_names(), "where the updates run")
      ->default_str("the run's, from the seed log");
  add_optional_enum_option(cmd, "--dtype", &s->dtype, dtype_option_names(),
                           "weight storage; must be the run's, since updates round to it")
      ->default_str("the run's, from the seed log");
  return {cmd, [s] { return run_replay(*s); }};
}

}  // namespace smezo
