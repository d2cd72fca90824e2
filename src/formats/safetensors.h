// Reader and writer for the subset of safetensors that smezo uses. File layout (little-endian):
//   bytes [0, 8)        N: uint64, length of the JSON header in bytes
//   bytes [8, 8 + N)    JSON header (UTF-8), optionally padded at the end with spaces
//   bytes [8 + N, end)  data region: every tensor's raw bytes, row-major, no gaps (Python rejects them)
// The header is one JSON object:
//   { "__metadata__": { "key": "value", ... },            optional, string -> string
//     "<tensor name>": { "dtype": "F32" | "F16" | "BF16",
//                        "shape": [d0, d1, ...],           [] is a scalar
//                        "data_offsets": [begin, end] },   byte range inside the data region
//     ... }
// Only F32, F16 and BF16; any other dtype is an error naming the file and tensor.
// As strict as huggingface/safetensors, the reader refuses (naming file and tensor or field):
//   - a header length above 100 MB or past the end of the file;
//   - a header that is not exactly one JSON object from its first byte ('{') to its last non-space
//     byte ('}'), a duplicate key, or nesting > 64;
//   - __metadata__ that is not an object of string -> string;
//   - an entry without dtype / shape / data_offsets, a dimension that is not a non-negative
//     integer, a byte size (dtype size x shape product, overflow-checked) != end - begin;
//   - data_offsets that do not tile the data region: sorted, from 0, each next where the previous
//     ended, the last at the end of the file (so a header length a few bytes off fails).
// The writer pads the header with spaces to start the data at a multiple of 8 and orders tensors by
// dtype size (largest first), then name, so each is aligned to its element size.
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

// A memory-mapped safetensors file; keep keep_alive() (or this object) alive while views are used.
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

// Names unique and non-empty. Atomic (path + ".tmp", then rename); throws smezo::Error naming the path.
void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors,
                       const std::map<std::string, std::string>& metadata);

// One tensor to write by write_safetensors_streamed(): its bytes come from the fill callback.
struct SafetensorsSpec {
  std::string name;
  DType dtype = DTYPE_F32;
  std::vector<int64_t> shape;
};

// fill(i, out) writes tensors[i]'s bytes to out; a smezo::Error it throws abandons the file.
using SafetensorsFill = std::function<void(size_t index, char* out)>;

// write_safetensors() one tensor at a time through one reused buffer: memory = the largest tensor.
void write_safetensors_streamed(const std::string& path, const std::vector<SafetensorsSpec>& tensors,
                                const std::map<std::string, std::string>& metadata,
                                const SafetensorsFill& fill);

// The size in bytes of the file write_safetensors_streamed() would write.
int64_t safetensors_file_bytes(const std::vector<SafetensorsSpec>& tensors,
                               const std::map<std::string, std::string>& metadata);

}  // namespace smezo
