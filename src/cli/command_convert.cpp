// smezo convert: a GGUF, llama2.c or HF model written as an HF model directory (model_convert.h).
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "setup/model_convert.h"

namespace smezo {

namespace {

int run_convert(const ConvertOptions& o) {
  const ConvertResult r = convert_to_hf_dir(o);
  std::string files;
  for (const std::string& f : r.tokenizer_files) files += ", " + f;
  std::printf("wrote %s: config.json, model.safetensors (%lld tensors, %lld parameters, %s, %.1f MB)%s\n",
              o.out_dir.c_str(), (long long)r.n_tensors, (long long)r.n_params, o.dtype.c_str(), r.bytes / 1e6,
              files.c_str());
  if (r.tokenizer_files.empty()) std::printf("no tokenizer files: the source has none\n");
  return 0;
}

}  // namespace

Command register_convert(CLI::App& smezo) {
  auto s = std::make_shared<ConvertOptions>();
  CLI::App* cmd = add_command(smezo, "convert", "write a model (GGUF, llama2.c .bin, Hugging Face directory) as a "
                                                "Hugging Face directory that transformers loads");
  cmd->add_option("--model", s->model_path, "the model to convert: a GGUF file, a llama2.c .bin or a Hugging Face "
                                            "directory")
      ->type_name("PATH")
      ->default_str("the bundled stories260K");
  cmd->add_option("--tokenizer", s->tokenizer_path,
                  "the tokenizer to write beside it: a sentencepiece .model, a tokenizer.json, a Hugging Face "
                  "directory or a GGUF file")
      ->type_name("PATH")
      ->default_str("the model's own");
  cmd->add_option("--out", s->out_dir, "the folder to write (new, or empty)")->type_name("DIR")->required();
  cmd->add_option("--dtype", s->dtype, "how the weights are stored")->check(one_of({"bf16", "f32"}));
  return {cmd, [s] { return run_convert(*s); }};
}

}  // namespace smezo
