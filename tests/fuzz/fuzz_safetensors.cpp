// Fuzz target: one safetensors file (header and data region) through SafetensorsFile.
// On success it checks the reader's promise: the tensors' byte ranges tile the data region
// exactly, each is dtype size x numel bytes, and each view shows the file's bytes at its
// offset (compared with the input, which also proves the view lies inside the mapping).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "formats/safetensors.h"
#include "fuzz_util.h"

namespace {

struct Range {
  const uint8_t* at;
  int64_t bytes;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = smezo_fuzz::scratch_dir() + "/t.safetensors";
  smezo_fuzz::write_file(path, data, size);
  smezo_fuzz::run_reader([&] {
    smezo::SafetensorsFile file(path);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--) header_len = (header_len << 8) | data[i];
    const uint8_t* region = data + 8 + header_len;  // the input's data region
    const int64_t region_size = static_cast<int64_t>(size - 8 - header_len);
    std::vector<Range> ranges;
    for (const auto& kv : file.tensors()) {
      const smezo::HostTensorView& v = kv.second;
      const int64_t bytes = v.numel() * smezo::dtype_size(v.dtype);
      if (bytes > 0) ranges.push_back(Range{static_cast<const uint8_t*>(v.data), bytes});
    }
    std::sort(ranges.begin(), ranges.end(),
              [](const Range& a, const Range& b) { return a.at < b.at; });
    int64_t offset = 0;
    for (const Range& r : ranges) {
      if (ranges.front().at + offset != r.at) std::abort();  // overlap or hole
      if (offset + r.bytes > region_size) std::abort();
      if (std::memcmp(r.at, region + offset, static_cast<size_t>(r.bytes)) != 0) std::abort();
      offset += r.bytes;
    }
    if (offset != region_size) std::abort();  // trailing bytes accepted
  });
  return 0;
}
