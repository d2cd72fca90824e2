// Reader and writer for the subset of the safetensors format that smezo uses.
//
// File layout (all integers little-endian):
//   bytes [0, 8)        N: uint64, length of the JSON header in bytes
//   bytes [8, 8 + N)    JSON header (UTF-8), optionally padded at the end with spaces
//   bytes [8 + N, end)  data region: the raw bytes of every tensor, row-major, no padding
//                       between tensors (the Python library rejects gaps)
// The header is one JSON object:
//   { "__metadata__": { "key": "value", ... },            optional, string -> string
//     "<tensor name>": { "dtype": "F32" | "F16" | "BF16",
//                        "shape": [d0, d1, ...],           [] is a scalar
//                        "data_offsets": [begin, end] },   byte range inside the data region
//     ... }
// Supported subset: dtypes F32, F16 and BF16 only; any other dtype (F64, I32, U8, ...) is
// an error naming the file and the tensor.
// The reader is as strict as the format's reference implementation (huggingface/safetensors),
// and refuses, naming the file and the tensor or field:
//   - a header length above 100 MB or past the end of the file;
//   - a header that is not exactly one JSON object from its first byte ('{') to its last
//     non-space byte ('}'): only trailing spaces may pad it; a key given twice (a tensor name,
//     __metadata__) or JSON nested deeper than 64 levels;
//   - __metadata__ that is not an object of string -> string;
//   - an entry without dtype / shape / data_offsets, a dimension that is not a non-negative
//     integer, a byte size (dtype size x product of the shape, overflow-checked) different
//     from end - begin;
//   - data_offsets that do not tile the data region: sorted by offset, the first tensor must
//     begin at 0, each next one where the previous ended (no overlap, no aliasing, no hole),
//     and the last must end at the end of the file (no trailing bytes). A header length a few
//     bytes off therefore fails instead of shifting every tensor.
// The writer pads the header with spaces so the data region starts at a multiple of 8 bytes,
// and lays tensors out by dtype size (largest first) then name, so each tensor starts at a
// multiple of its element size. It writes <path>.tmp and renames it, so a crash never leaves
// a half-written file at <path>. write_safetensors_streamed() asks for one tensor's bytes at a
// time, so a writer never holds more than the largest tensor in memory. Its output loads with the Python
// safetensors library and transformers.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "formats/host_tensor_view.h"

namespace smezo {

class MappedFile;

// A memory-mapped safetensors file. The views point into the mapping; keep keep_alive()
// (or this object) alive while they are used.
class SafetensorsFile {
 public:
  // Maps and validates the file; throws smezo::Error naming the file and tensor/field.
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Every tensor in the file, by name; view.file == path().
  const std::map<std::string, HostTensorView>& tensors() const { return tensors_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // The named tensor; throws naming the file and tensor when it is absent.
  const HostTensorView& tensor(const std::string& name) const;
  // The mapping backing the views, for WeightSource::keep_alive.
  std::shared_ptr<void> keep_alive() const;

 private:
  std::string path_;
  std::shared_ptr<MappedFile> mapping_;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, HostTensorView> tensors_;
};

// One tensor to write. data holds numel(shape) elements of dtype, row-major.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DTYPE_F32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
};

// Writes the tensors (names must be unique and non-empty) and metadata to path, atomically
// (via path + ".tmp" and rename). Throws smezo::Error naming the path on any failure.
void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors,
                       const std::map<std::string, std::string>& metadata);

// One tensor to write by write_safetensors_streamed(): its bytes come from the fill callback.
struct SafetensorsSpec {
  std::string name;
  DType dtype = DTYPE_F32;
  std::vector<int64_t> shape;
};

// fill(i, out) writes the numel(shape) * dtype_size bytes of tensors[i] to out. It may throw
// smezo::Error to abandon the file: the temporary file is removed and nothing is renamed.
using SafetensorsFill = std::function<void(size_t index, char* out)>;

// The same file as write_safetensors(), written one tensor at a time (in file order; the
// buffer handed to fill is reused, sized for the tensor at hand).
void write_safetensors_streamed(const std::string& path, const std::vector<SafetensorsSpec>& tensors,
                                const std::map<std::string, std::string>& metadata,
                                const SafetensorsFill& fill);

// The size in bytes of the file write_safetensors_streamed() would write.
int64_t safetensors_file_bytes(const std::vector<SafetensorsSpec>& tensors,
                               const std::map<std::string, std::string>& metadata);

}  // namespace smezo
