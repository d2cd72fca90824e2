// smezo convert: a GGUF, llama2.c or HF model written as an HF model directory (model_convert.h);
// with --adapter, an adapter folder's base written so, and the adapter pointed at it for PEFT.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include "cli/commands.h"
#include "common/check.h"
#include "formats/json_read.h"
#include "run/summary.h"
#include "setup/model_convert.h"
#include "train/adapter_folder.h"

namespace smezo {

namespace {

struct ConvertState {
  ConvertOptions options;
  std::string adapter_dir;  // --adapter: write its base, then name that folder in its adapter_config.json
};

// adapter_config.json's base_model_name_or_path := the absolute path of base_dir (other fields kept).
std::string point_adapter_at(const std::string& adapter_dir, const std::string& base_dir) {
  const std::string path = adapter_dir + "/" + kAdapterConfigFile;
  std::ifstream in(path, std::ios::binary);
  SMEZO_REQUIRE(in.good(), "cannot read %s; is %s an adapter folder?", path.c_str(), adapter_dir.c_str());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  nlohmann::json j = json_parse_strict(text.data(), text.data() + text.size(), "adapter config " + path);
  const std::string base = std::filesystem::absolute(base_dir).lexically_normal().string();
  j["base_model_name_or_path"] = base;
  run_write_file_atomic(path, j.dump(2) + "\n");
  return base;
}

int run_convert(ConvertState& s) {
  ConvertOptions& o = s.options;
  if (!s.adapter_dir.empty()) o.model_path = adapter_model_path(read_adapter_folder(s.adapter_dir), o.model_path);
  const ConvertResult r = convert_to_hf_dir(o);
  std::string files;
  for (const std::string& f : r.tokenizer_files) files += ", " + f;
  std::printf("wrote %s: config.json, model.safetensors (%lld tensors, %lld parameters, %s, %.1f MB)%s\n",
              o.out_dir.c_str(), (long long)r.n_tensors, (long long)r.n_params, enum_name(convert_dtype_names(), o.dtype), r.bytes / 1e6,
              files.c_str());
  if (r.tokenizer_files.empty()) std::printf("no tokenizer files: the source has none\n");
  if (!s.adapter_dir.empty())
    std::printf("%s/%s: base_model_name_or_path is now %s (PEFT's AutoPeftModelForCausalLM loads it offline)\n",
                s.adapter_dir.c_str(), kAdapterConfigFile, point_adapter_at(s.adapter_dir, o.out_dir).c_str());
  return 0;
}

}  // namespace

Command register_convert(CLI::App& smezo) {
  auto s = std::make_shared<ConvertState>();
  CLI::App* cmd = add_command(smezo, "convert", "write a model (GGUF, llama2.c .bin, Hugging Face directory) as a "
                                                "Hugging Face directory that transformers loads");
  cmd->add_option("--model", s->options.model_path, "the model to convert: a GGUF file, a llama2.c .bin or a Hugging "
                                                    "Face directory")
      ->type_name("PATH")
      ->default_str("the bundled stories260K, or the --adapter folder's base");
  cmd->add_option("--adapter", s->adapter_dir,
                  "an adapter folder (smezo train --tune lora|prefix): its base model is converted into --out, "
                  "and its adapter_config.json then names --out as base_model_name_or_path, so that PEFT's "
                  "AutoPeftModelForCausalLM loads adapter and base offline (a GGUF or llama2.c base records none)")
      ->type_name("DIR");
  cmd->add_option("--tokenizer", s->options.tokenizer_path,
                  "the tokenizer to write beside it: a sentencepiece .model, a tokenizer.json, a Hugging Face "
                  "directory or a GGUF file")
      ->type_name("PATH")
      ->default_str("the model's own");
  cmd->add_option("--out", s->options.out_dir, "the folder to write (new, or empty)")->type_name("DIR")->required();
  add_enum_option(cmd, "--dtype", &s->options.dtype, convert_dtype_names(), "how the weights are stored");
  return {cmd, [s] { return run_convert(*s); }};
}

}  // namespace smezo
