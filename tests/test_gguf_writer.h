// A tiny GGUF writer for the tests (format in src/formats/gguf.h): builds well-formed files
// from metadata and tensors, and lets a test break any field on purpose (raw values, counts,
// offsets, version) to check that the reader refuses it with a clear message.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace smezo_test {

// Little-endian encodings of GGUF's primitives.
std::string gguf_u8(uint8_t v);
std::string gguf_u32(uint32_t v);
std::string gguf_u64(uint64_t v);
std::string gguf_i32(int32_t v);
std::string gguf_f32(float v);
std::string gguf_string(const std::string& s);  // u64 length + bytes

// n_blocks random blocks of a quantised GGUF type: random bytes, with every f16 scale/min field
// (d, m, dmin) set to a random finite value of either sign (random bits could make NaN or inf).
std::vector<uint8_t> random_blocks(uint32_t type, int64_t n_blocks, uint32_t seed);

struct GgufTestTensor {
  std::string name;
  uint32_t type = 0;            // ggml type
  std::vector<uint64_t> dims;   // ggml order (innermost first)
  std::string bytes;            // the tensor's data
  int64_t offset_override = -1; // >= 0: write this data offset instead of the real one
};

class GgufBuilder {
 public:
  // ---- metadata (value_type and encoded value bytes, as they appear in the file)
  void add_raw(const std::string& key, uint32_t value_type, const std::string& value_bytes);
  void add_u32(const std::string& key, uint32_t v);
  void add_i32(const std::string& key, int32_t v);
  void add_u64(const std::string& key, uint64_t v);
  void add_f32(const std::string& key, float v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, const std::string& v);
  void add_string_array(const std::string& key, const std::vector<std::string>& v);
  void add_i32_array(const std::string& key, const std::vector<int32_t>& v);
  void add_f32_array(const std::string& key, const std::vector<float>& v);

  // ---- tensors (laid out in order, each at the next multiple of `alignment`)
  void add_tensor(const GgufTestTensor& t);
  void add_f32_tensor(const std::string& name, const std::vector<uint64_t>& dims,
                      const std::vector<float>& values);

  // ---- knobs for malformed files
  uint32_t version = 3;
  int64_t alignment = 32;              // layout only; add general.alignment yourself
  int64_t tensor_count_override = -1;  // >= 0: header claims this many tensors
  int64_t kv_count_override = -1;      // >= 0: header claims this many keys

  std::string build() const;
  // build() written to path.
  void write(const std::string& path) const;

 private:
  std::string kv_bytes_;
  int64_t n_kv_ = 0;
  std::vector<GgufTestTensor> tensors_;
};

}  // namespace smezo_test
