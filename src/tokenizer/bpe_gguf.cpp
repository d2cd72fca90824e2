// A byte-level BPE vocabulary from GGUF metadata (tokenizer.ggml.*; keys in bpe_vocab.h).
#include <cstdint>
#include <limits>

#include "common/check.h"
#include "formats/gguf.h"
#include "tokenizer/bpe_pretokenizer.h"
#include "tokenizer/bpe_vocab.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/bpe_tokenizer.h"

namespace smezo {

BpeVocab bpe_vocab_from_gguf(const GgufFile& f) {
  const std::string& path = f.path();
  const std::string model = f.get_string("tokenizer.ggml.model");
  SMEZO_REQUIRE(model == "gpt2", "%s: tokenizer.ggml.model is \"%s\", not \"gpt2\" (byte-level BPE)", path.c_str(),
                model.c_str());
  SMEZO_REQUIRE(f.has("tokenizer.ggml.pre"), "%s: no tokenizer.ggml.pre, so the pre-tokeniser is unknown "
                "(llama.cpp would guess; smezo does not)", path.c_str());
  BpeVocab v;
  v.source = path;
  v.pre_patterns = bpe_pre_patterns_for_gguf(f.get_string("tokenizer.ggml.pre"), path);
  v.tokens = f.get_string_array("tokenizer.ggml.tokens");
  const int64_t n = static_cast<int64_t>(v.tokens.size());
  if (f.has("tokenizer.ggml.token_type")) {
    const std::vector<int64_t> types = f.get_i64_array("tokenizer.ggml.token_type");
    SMEZO_REQUIRE(static_cast<int64_t>(types.size()) == n, "%s: tokenizer.ggml.token_type has %zu entries for "
                  "%lld tokens", path.c_str(), types.size(), (long long)n);
    v.types.reserve(types.size());
    for (size_t i = 0; i < types.size(); i++) {
      SMEZO_REQUIRE(types[i] >= 0 && types[i] <= BPE_TOKEN_BYTE, "%s: tokenizer.ggml.token_type[%zu] = %lld, "
                    "expected 0..6", path.c_str(), i, (long long)types[i]);
      v.types.push_back(types[i] == 0 ? BPE_TOKEN_NORMAL : static_cast<int32_t>(types[i]));
    }
  } else {
    v.types.assign(v.tokens.size(), BPE_TOKEN_NORMAL);
  }
  const std::vector<std::string> merges = f.get_string_array("tokenizer.ggml.merges");
  v.merges.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); r++) {
    const std::string& m = merges[r];
    const size_t space = m.find(' ');
    SMEZO_REQUIRE(space != std::string::npos && m.find(' ', space + 1) == std::string::npos,
                  "%s: tokenizer.ggml.merges[%zu] \"%s\" is not two tokens separated by one space", path.c_str(), r,
                  m.c_str());
    v.merges.emplace_back(m.substr(0, space), m.substr(space + 1));
  }
  const uint32_t none = std::numeric_limits<uint32_t>::max();
  const struct {
    const char* key;
    int32_t* id;
  } ids[] = {{"tokenizer.ggml.bos_token_id", &v.bos_id}, {"tokenizer.ggml.eos_token_id", &v.eos_id},
             {"tokenizer.ggml.unknown_token_id", &v.unk_id}, {"tokenizer.ggml.padding_token_id", &v.pad_id}};
  for (const auto& k : ids) {
    const uint32_t id = f.get_u32_or(k.key, none);
    SMEZO_REQUIRE(id == none || id < static_cast<uint64_t>(n), "%s: %s = %u is outside the %lld-token vocabulary",
                  path.c_str(), k.key, id, (long long)n);
    *k.id = id == none ? -1 : static_cast<int32_t>(id);
  }
  v.add_bos = f.get_bool_or("tokenizer.ggml.add_bos_token", false);
  SMEZO_REQUIRE(!f.get_bool_or("tokenizer.ggml.add_eos_token", false), "%s: tokenizer.ggml.add_eos_token = true "
                "is not supported (smezo never appends EOS)", path.c_str());
  bpe_vocab_validate(v);
  return v;
}

std::unique_ptr<Tokenizer> load_bpe_tokenizer_gguf(const std::string& path) {
  return std::make_unique<BpeTokenizer>(bpe_vocab_from_gguf(*GgufFile::open(path)));
}

}  // namespace smezo
