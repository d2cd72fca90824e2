// Which tokenizer a model needs, from GGUF metadata or a Hugging Face directory's files.

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/file_util.h"
#include "common/mapped_file.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"

namespace smezo {

const char* tokenizer_kind_name(TokenizerKind kind) {
  return kind == TOKENIZER_SENTENCEPIECE ? "sentencepiece" : "byte-level BPE";
}

TokenizerKind tokenizer_kind_for_gguf_model(const std::string& ggml_model, const std::string& where) {
  if (ggml_model == "llama") return TOKENIZER_SENTENCEPIECE;
  if (ggml_model == "gpt2") return TOKENIZER_BPE;
  throw_error("%s: tokenizer.ggml.model \"%s\" is not supported (supported: \"llama\" = sentencepiece, \"gpt2\" = "
              "byte-level BPE)", where.c_str(), ggml_model.c_str());
}

TokenizerKind tokenizer_kind_of_gguf(const std::string& path) {
  return tokenizer_kind_for_gguf_model(GgufFile::open(path)->get_string("tokenizer.ggml.model"), path);
}

TokenizerKind tokenizer_kind_of_hf_dir(const std::string& dir) {
  const std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  if (is_file(base + "tokenizer.model")) return TOKENIZER_SENTENCEPIECE;
  const std::string json_path = base + "tokenizer.json";
  if (!is_file(json_path) && is_file(base + "vocab.json") && is_file(base + "merges.txt")) return TOKENIZER_BPE;
  SMEZO_REQUIRE(is_file(json_path), "%s has neither tokenizer.model (sentencepiece) nor tokenizer.json or "
                "vocab.json + merges.txt (BPE)", dir.c_str());
  std::shared_ptr<MappedFile> file = MappedFile::open(json_path, "tokenizer");
  const char* begin = reinterpret_cast<const char*>(file->data());
  std::string type;
  try {
    const nlohmann::json j = nlohmann::json::parse(begin, begin + file->size());
    type = j.at("model").value("type", std::string("(none)"));
  } catch (const nlohmann::json::exception& e) {
    throw_error("%s: cannot read model.type (%s)", json_path.c_str(), e.what());
  }
  SMEZO_REQUIRE(type == "BPE", "%s: model.type is \"%s\"; smezo reads BPE tokenizer.json files, or a tokenizer.model",
                json_path.c_str(), type.c_str());
  return TOKENIZER_BPE;
}

}  // namespace smezo
