// Fuzz target: a tokenizer.json through load_bpe_tokenizer_json. A tokenizer that loads must
// encode a mixed text (with and without BOS where it has one), decode it, and stream-decode its
// first pieces; the ids it gives must lie in its vocabulary.
#include <cstdlib>

#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = smezo_fuzz::scratch_dir() + "/tokenizer.json";
  smezo_fuzz::write_file(path, data, size);
  smezo_fuzz::run_reader([&] {
    std::unique_ptr<smezo::Tokenizer> tok = smezo::load_bpe_tokenizer_json(path);
    const bool bos = tok->bos_id() >= 0;
    const std::vector<int32_t> ids = tok->encode("Once upon a time, \xc3\xa9t\xc3\xa9 \xe2\x9c\x93 42\n<|im_start|>", bos);
    for (int32_t id : ids)
      if (id < 0 || id >= tok->vocab_size()) std::abort();
    tok->decode(ids);
    for (size_t i = 0; i < ids.size() && i < 64; i++) tok->decode_piece(i ? ids[i - 1] : -1, ids[i]);
  });
  return 0;
}
