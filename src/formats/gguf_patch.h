// The result of a --tune scales run as a GGUF (issue 43): the base file copied byte for byte with
// each patched tensor's block scales, rounded to f16 (nearest even), written in place. Alignment,
// every metadata key (tokenizer, chat template, general.*), the tensor order and offsets stay, so
// llama.cpp, the gguf package and transformers load it as they load the base. Where the scales lie
// in a block (layouts: formats/gguf_dequant.cpp):
//   d:        byte 0 of each block of Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K; byte 208 of Q6_K's
//   m / dmin: byte 2 of each block of Q4_1, Q5_1 (m) and Q4_K, Q5_K (dmin); the others have none.
// K-quants' 6-bit sub-scales stay. Provenance and the f32 master scales go beside the file, not in it.
#pragma once

#include <string>
#include <vector>

namespace smezo {

struct GgufScalePatch {
  std::string tensor;     // GGUF tensor name
  std::vector<float> d;   // one per block, global block order
  std::vector<float> m;   // Q4_1/Q5_1 m, Q4_K/Q5_K dmin; empty: the file's, unchanged
};

// out = base byte for byte, each patch's scales rounded to f16 (nearest even) written in place
// (d at byte 0 of each block, m/dmin at byte 2; Q6_K's d at byte 208). Written to a temporary and
// renamed. Throws with file, tensor and a hint on a type without such scales, a count mismatch,
// a base that is not a readable GGUF.
void write_scale_patched_gguf(const std::string& base_path, const std::string& out_path,
                              const std::vector<GgufScalePatch>& patches);

}  // namespace smezo
