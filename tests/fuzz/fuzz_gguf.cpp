// Fuzz target: one GGUF file through load_weights (the GGUF reader, the LLaMA mapping, the
// common checks) and Model's load (dequantisation included), and, when its metadata names a
// byte-level BPE tokenizer, through load_bpe_tokenizer_gguf with an encode/decode round.
#include "model/model_loader.h"
#include "fuzz_util.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = smezo_fuzz::scratch_dir() + "/model.gguf";
  smezo_fuzz::write_file(path, data, size);
  smezo_fuzz::run_reader([&] {
    smezo::WeightSource source = smezo::load_weights(path);
    smezo_fuzz::HostBackend backend;
    smezo::Model model(source, backend, smezo::DTYPE_F32, 4, 2);
  });
  smezo_fuzz::run_reader([&] {
    if (smezo::tokenizer_kind_of_gguf(path) != smezo::TOKENIZER_BPE) return;
    std::unique_ptr<smezo::Tokenizer> tok = smezo::load_bpe_tokenizer_gguf(path);
    std::vector<int32_t> ids = tok->encode("the tea, 42 \xc3\xa9t\xc3\xa9\n<|im_end|>", true);
    tok->decode(ids);
    const int64_t n = tok->vocab_size() < 300 ? tok->vocab_size() : 300;
    for (int32_t id = 0; id < n; id++) tok->decode_piece(tok->bos_id(), id);
  });
  return 0;
}
