// Fuzz target: sentencepiece model bytes through smezo's own protobuf reader of .model files
// (read_sentencepiece_model_info, which writes tokenizer.json for checkpoints) and through
// load_sentencepiece_tokenizer; a model that loads must encode, decode and stream-decode without
// crashing.
#include "fuzz_util.h"
#include "tokenizer/sentencepiece_proto.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = smezo_fuzz::scratch_dir() + "/tokenizer.model";
  smezo_fuzz::write_file(path, data, size);
  smezo_fuzz::run_reader([&] { smezo::read_sentencepiece_model_info(path); });
  smezo_fuzz::run_reader([&] {
    std::unique_ptr<smezo::Tokenizer> tok = smezo::load_sentencepiece_tokenizer(path);
    std::vector<int32_t> ids = tok->encode("Once upon a time, \xc3\xa9t\xc3\xa9 \xe2\x9c\x93 42\n", true);
    tok->decode(ids);
    const int64_t n = tok->vocab_size() < 300 ? tok->vocab_size() : 300;
    for (int32_t id = 0; id < n; id++) tok->decode_piece(tok->bos_id(), id);
  });
  return 0;
}
