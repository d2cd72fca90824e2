// smezo merge --model BASE --adapter DIR --out DIR2: W + (alpha / r)·B A as a full HF checkpoint.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "common/check.h"
#include "train/checkpoint.h"
#include "train/checkpoint_lora.h"

namespace smezo {

namespace {

struct MergeState {
  ModelOpenOptions model;
  std::string adapter, out;
  std::optional<DType> checkpoint_dtype;
};

int run_merge(MergeState& s) {
  const LoraAdapter adapter = read_lora_adapter(s.adapter);  // a bad adapter fails before the model loads
  ModelOpenOptions mo = s.model;
  mo.max_tokens = 1;
  mo.max_logit_rows = 1;
  mo.tokenizer_optional = true;  // merging needs none; one found is copied into the checkpoint
  LoadedModel lm = open_model(mo);
  checkpoint_dtype(*lm.model, s.checkpoint_dtype);  // a bad name fails before the merge
  merge_lora_adapter(*lm.model, adapter);
  save_hf_checkpoint(*lm.model, s.out, lm.tokenizer_path, nullptr, s.checkpoint_dtype);
  std::printf("merged %s (r %lld, alpha %g, %zu tensors) into %s -> %s\n", s.adapter.c_str(),
              (long long)adapter.options.rank, adapter.options.alpha, adapter.tensors.size(),
              lm.model_path.c_str(), s.out.c_str());
  return 0;
}

}  // namespace

Command register_merge(CLI::App& smezo) {
  auto s = std::make_shared<MergeState>();
  CLI::App* cmd = add_command(smezo, "merge", "fold a LoRA adapter (smezo train --tune lora's checkpoint, or any "
                                              "PEFT LoRA folder) into its base model, as a full checkpoint");
  add_model_options(cmd, &s->model);
  cmd->add_option("--adapter", s->adapter, "the adapter folder (adapter_config.json, adapter_model.safetensors)")
      ->type_name("DIR")
      ->required();
  cmd->add_option("--out", s->out, "the checkpoint folder to write")->type_name("DIR")->required();
  add_optional_enum_option(cmd, "--checkpoint-dtype", &s->checkpoint_dtype, dtype_option_names(),
                           "dtype of the checkpoint's tensors")
      ->default_str("the base model's storage dtype (--dtype)");
  return {cmd, [s] { return run_merge(*s); }};
}

}  // namespace smezo
