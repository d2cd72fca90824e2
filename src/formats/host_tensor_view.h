// A read-only view of one stored tensor as the file readers hand it out (mapped or owned bytes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/dtype_convert.h"  // convert_to_f32, first_non_finite_in, ...
#include "backend/tensor.h"

namespace smezo {

class MappedFile;

// Turns n stored elements at src into fp32 (a block-quantised format's decoder).
using DecodeFn = void (*)(const void* src, int64_t n, float* dst);

struct HostTensorView {
  std::string name;
  std::string file_name;       // the tensor's name in its file, when it differs from name (GGUF: blk.0.attn_q.weight)
  DType dtype = DTYPE_F32;     // the element type, when decode is not set
  std::vector<int64_t> shape;  // as stored, e.g. {out_features, in_features}
  const void* data = nullptr;  // points into a mapped file or an owned buffer
  std::string file;            // where it came from, for error messages
  // Block-quantised (GGUF Q4_1, ...): data holds the blocks, quant_name the format; dtype unused.
  DecodeFn decode = nullptr;
  const char* quant_name = nullptr;  // static storage
  uint32_t packed_type = 0;          // a GGUF file's block type (formats/gguf.h), which --weights packed keeps
  // What data points into (kept alive by WeightSource::keep_alive); null for an owned buffer.
  const MappedFile* mapping = nullptr;
  int64_t nbytes = 0;

  int64_t numel() const;
  // All numel() values as fp32 into dst (decode, or a dtype conversion).
  void read_f32(float* dst) const;
  // read_f32, refusing a NaN or an Inf: "tensor X in FILE holds NaN at index i (row r, column c)". For
  // values taken as they are (adapters); a model's weights are checked as they reach its storage dtype.
  void read_f32_finite(float* dst) const;
  // quant_name when quantised, else dtype_name(dtype): what `smezo info` prints.
  const char* storage_name() const;
  // Drops this tensor's mapped pages (MappedFile::release_pages); nothing when unmapped.
  void release_pages() const;
};

}  // namespace smezo
