// A read-only view of one stored tensor, as the file readers hand it out (safetensors.h, the
// model's readers in model/): name, dtype and shape as stored, its bytes in a mapped file or an
// owned buffer, and for block-quantised formats the decoder into fp32.
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
  DType dtype = DTYPE_F32;     // the element type, when decode is not set
  std::vector<int64_t> shape;  // as stored, e.g. {out_features, in_features}
  const void* data = nullptr;  // points into a mapped file or an owned buffer
  std::string file;            // where it came from, for error messages
  // Block-quantised storage (GGUF Q4_1, Q8_0, ...): data holds the blocks, decode turns them
  // into fp32 and quant_name names the format ("Q4_1"); dtype is unused then. The model
  // calls read_f32() tensor by tensor into one reused buffer, so no fp32 copy of the whole
  // model is ever made on the host.
  DecodeFn decode = nullptr;
  const char* quant_name = nullptr;  // static storage
  // The file mapping data points into (kept alive by WeightSource::keep_alive), or null when
  // data is an owned buffer; nbytes is the stored size. Model calls release_pages() once a
  // tensor is on the backend, so a loaded model never keeps its file's pages resident.
  const MappedFile* mapping = nullptr;
  int64_t nbytes = 0;

  int64_t numel() const;
  // All numel() values as fp32 into dst (decode, or a dtype conversion).
  void read_f32(float* dst) const;
  // quant_name when quantised, else dtype_name(dtype): what `smezo info` prints.
  const char* storage_name() const;
  // Drops this tensor's pages of the mapping from the process (MappedFile::release_pages);
  // nothing when the view is not backed by a mapping.
  void release_pages() const;
};

}  // namespace smezo
