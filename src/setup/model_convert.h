// smezo convert: any model smezo reads (GGUF, llama2.c .bin, a Hugging Face directory) written as a
// Hugging Face model directory that transformers loads:
//   config.json         hf_config_json (model/hf_dir.h: the family's descriptor writes it), torch_dtype =
//                       the written dtype;
//   model.safetensors   every tensor under its HF name, in bf16 (round to nearest even) or f32;
//                       block-quantised GGUF tensors dequantised first. Q and K rows of
//                       interleaved-RoPE sources (GGUF, llama2.c) put in HF's rotate-half order;
//   tokenizer files     if the source has a tokenizer (save_tokenizer_files: a GGUF's chat template
//                       kept in tokenizer_config.json; a sentencepiece model's whitespace rule in a
//                       tokenizer.json, so that transformers tokenizes as smezo does).
// smezo convert --adapter DIR (src/cli/command_convert.cpp) converts an adapter's base so and names it in
// the adapter's base_model_name_or_path, for PEFT offline (docs/adapters.md).
// Tensors are decoded one at a time; the output's own bytes are held until written.
#pragma once

#include <string>
#include <vector>

#include "common/enum_names.h"
#include "smezo/device.h"

namespace smezo {

struct ConvertOptions {
  std::string model_path;      // the source ("": the bundled stories260K)
  std::string tokenizer_path;  // "": the model's own (open_model_tokenizer)
  std::string out_dir;         // created; must not exist or be empty
  DType dtype = DTYPE_BF16;     // one of convert_dtype_names()
};

const EnumNames<DType>& convert_dtype_names();  // bf16, f32: what convert writes

struct ConvertResult {
  std::string model_path, tokenizer_path;
  int64_t n_tensors = 0, n_params = 0, bytes = 0;
  std::vector<std::string> tokenizer_files;
};

ConvertResult convert_to_hf_dir(const ConvertOptions& options);

}  // namespace smezo
