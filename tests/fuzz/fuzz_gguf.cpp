// Fuzz target: one GGUF file through load_weights (the GGUF reader, the LLaMA mapping, the
// common checks) and Model's load (dequantisation included), and, when its metadata names a
// byte-level BPE tokenizer, through load_bpe_tokenizer_gguf with an encode/decode round; and,
// when the reader accepts it, through the scale patch (formats/gguf_patch.h) round trip: every
// block-quantised tensor patched with its own f16 scales gives the input back byte for byte.
#include "model/model_loader.h"
#include "fuzz_util.h"
#include "common/half.h"
#include "formats/gguf.h"
#include "formats/gguf_patch.h"
#include "common/mapped_file.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace {

float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return smezo::f16_to_float(h);
}

// Each block-quantised tensor's own scales as a patch (d, and m/dmin where the type has one).
std::vector<smezo::GgufScalePatch> own_scales(const smezo::GgufFile& f) {
  std::vector<smezo::GgufScalePatch> patches;
  for (const smezo::GgufTensorInfo& t : f.tensors()) {
    const smezo::GgufTypeTraits* tr = smezo::gguf_type_traits(t.type);
    if (!tr || tr->block_size == 1) continue;
    const int d_at = t.type == smezo::GGUF_TYPE_Q6_K ? 208 : 0;
    const bool has_m = t.type == smezo::GGUF_TYPE_Q4_1 || t.type == smezo::GGUF_TYPE_Q5_1 ||
                       t.type == smezo::GGUF_TYPE_Q4_K || t.type == smezo::GGUF_TYPE_Q5_K;
    smezo::GgufScalePatch p{t.name, {}, {}};
    for (int64_t b = 0; b < t.numel / tr->block_size; b++) {
      p.d.push_back(f16_at(t.data + b * tr->block_bytes + d_at));
      if (has_m) p.m.push_back(f16_at(t.data + b * tr->block_bytes + 2));
    }
    patches.push_back(std::move(p));
  }
  return patches;
}

// Patched with its own scales, the file comes back unchanged (a finding otherwise). A scale of
// inf or NaN is refused (an Error), as the writer promises.
void patch_round_trip(const std::string& path, const uint8_t* data, size_t size) {
  std::shared_ptr<smezo::GgufFile> f = smezo::GgufFile::open(path);
  const std::string out = smezo_fuzz::scratch_dir() + "/patched.gguf";
  smezo::write_scale_patched_gguf(path, out, own_scales(*f));
  std::shared_ptr<smezo::GgufFile> g = smezo::GgufFile::open(out);
  const smezo::MappedFile* m = g->mapping();
  if (static_cast<size_t>(g->file_size()) != size || (size && std::memcmp(m->data(), data, size) != 0)) {
    std::fprintf(stderr, "scale patch with the file's own scales changed the file\n");
    std::abort();
  }
}

}  // namespace

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
  smezo_fuzz::run_reader([&] { patch_round_trip(path, data, size); });
  return 0;
}
