// smezo tokenize: a text's token ids, comma-separated, without loading weights (BOS only with --bos).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "common/check.h"
#include "setup/model_setup.h"

namespace smezo {

namespace {

struct TokenizeState {
  ModelOpenOptions model;
  std::string text;
  bool bos = false;
};

int run_tokenize(const TokenizeState& s) {
  const std::string model_path = resolve_model_path(s.model.model_path);
  OpenedTokenizer tok = open_model_tokenizer(model_path, s.model.tokenizer_path);
  SMEZO_REQUIRE(!s.bos || tok.tokenizer->bos_id() >= 0,
                "--bos: the tokenizer %s has no BOS token ---> HINT: leave --bos out", tok.path.c_str());
  const std::vector<int32_t> ids = tok.tokenizer->encode(s.text, s.bos);
  std::string line;
  for (size_t i = 0; i < ids.size(); i++) line += (i ? "," : "") + std::to_string(ids[i]);
  std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace

Command register_tokenize(CLI::App& smezo) {
  auto s = std::make_shared<TokenizeState>();
  CLI::App* cmd = add_command(smezo, "tokenize", "print the token ids of a text (one line, comma-separated), "
                                                 "as the model's tokenizer makes them");
  cmd->add_option("--model", s->model.model_path,
                  "the model whose tokenizer to use: a Hugging Face directory, a GGUF file or a llama2.c .bin")
      ->type_name("PATH")
      ->default_str("the bundled stories260K");
  cmd->add_option("--tokenizer", s->model.tokenizer_path,
                  "the tokenizer: a sentencepiece .model, a tokenizer.json, a Hugging Face directory or a GGUF file")
      ->type_name("PATH")
      ->default_str("the model's own");
  cmd->add_flag("--bos", s->bos, "prepend the BOS token");
  cmd->add_option("TEXT", s->text, "the text to tokenize")->required();
  return {cmd, [s] { return run_tokenize(*s); }};
}

}  // namespace smezo
