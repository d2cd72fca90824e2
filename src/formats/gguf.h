// Memory-mapped reader for GGUF (llama.cpp's checkpoint format) v2 and v3: the container only.
// Dequantising: formats/gguf_dequant.h; a LLaMA GGUF as a WeightSource: model/gguf_llama.h.
// ---- File layout (little-endian; big-endian files are refused)
//   u32 magic        the bytes "GGUF"
//   u32 version      2 or 3 (version 1 had 32-bit counts and is refused)
//   u64 tensor_count
//   u64 metadata_kv_count
//   metadata_kv_count × { string key; u32 value_type; value }
//   tensor_count × { string name; u32 n_dims (1..4); u64 dims[n_dims]; u32 type; u64 offset }
//   zero padding up to a multiple of the alignment, then the data section.
//   string      = u64 byte length, then the bytes (UTF-8, no terminator)
//   value types = 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool (one byte, 0 or 1),
//                 8 string, 9 array, 10 u64, 11 i64, 12 f64
//   array       = u32 element type; u64 count; count packed values (may be strings or arrays)
//   dims        = ggml order: dims[0] is the innermost (contiguous) axis, so a row-major (rows, cols)
//                 matrix has dims {cols, rows}; row_major_shape() reverses them.
//   type        = GgufTensorType (gguf_type_traits()); dims[0] must be a multiple of the block size.
//   offset      = bytes from the start of the data section; a multiple of the alignment.
//   alignment   = metadata general.alignment (u32, a power of two), default 32; the data section
//                 starts at the first multiple of it after the tensor table.
// Malformed input, an absent key or a wrong type throw one smezo::Error naming the file and
// key/tensor. The GgufFile must outlive every string_view/pointer it hands out.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace smezo {

class MappedFile;

enum GgufValueType : uint32_t {
  GGUF_VALUE_U8 = 0,
  GGUF_VALUE_I8 = 1,
  GGUF_VALUE_U16 = 2,
  GGUF_VALUE_I16 = 3,
  GGUF_VALUE_U32 = 4,
  GGUF_VALUE_I32 = 5,
  GGUF_VALUE_F32 = 6,
  GGUF_VALUE_BOOL = 7,
  GGUF_VALUE_STRING = 8,
  GGUF_VALUE_ARRAY = 9,
  GGUF_VALUE_U64 = 10,
  GGUF_VALUE_I64 = 11,
  GGUF_VALUE_F64 = 12,
};

// "u32", "string", "array", ...; "unknown" for anything else.
const char* gguf_value_type_name(uint32_t type);

// ggml tensor types; those without traits are named so that an error can say what the file holds.
enum GgufTensorType : uint32_t {
  GGUF_TYPE_F32 = 0,
  GGUF_TYPE_F16 = 1,
  GGUF_TYPE_Q4_0 = 2,
  GGUF_TYPE_Q4_1 = 3,
  GGUF_TYPE_Q5_0 = 6,
  GGUF_TYPE_Q5_1 = 7,
  GGUF_TYPE_Q8_0 = 8,
  GGUF_TYPE_Q4_K = 12,
  GGUF_TYPE_Q5_K = 13,
  GGUF_TYPE_Q6_K = 14,
  GGUF_TYPE_BF16 = 30,
};

struct GgufTypeTraits {
  const char* name;     // "Q4_1"
  int64_t block_size;   // elements per block (1 for F32/F16/BF16)
  int64_t block_bytes;  // bytes per block
};

// Traits of a type smezo reads, or nullptr (unknown, or known to ggml but unsupported).
const GgufTypeTraits* gguf_type_traits(uint32_t type);
// The ggml name of any type ("Q3_K", "IQ4_XS"), or "unknown".
const char* gguf_type_name(uint32_t type);
// The supported types, for error messages: "F32, F16, BF16, Q8_0, ...".
std::string gguf_supported_types();

// One metadata value. Scalars are decoded; strings and string arrays point into the mapping.
struct GgufValue {
  GgufValueType type = GGUF_VALUE_U8;
  // Scalars: integers and BOOL fill `integer` (u64 above INT64_MAX: `integer_is_huge`), F32/F64 `real`.
  int64_t integer = 0;
  bool integer_is_huge = false;
  uint64_t huge = 0;           // the value when integer_is_huge
  double real = 0.0;
  std::string_view string;     // STRING
  // ARRAY
  GgufValueType elem_type = GGUF_VALUE_U8;
  uint64_t count = 0;
  const uint8_t* raw = nullptr;              // numeric/bool elements: count packed LE values
  std::vector<std::string_view> strings;     // elements of an array of strings
  std::vector<GgufValue> items;              // elements of an array of arrays
};

struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  uint32_t type = 0;              // GgufTensorType
  std::vector<int64_t> dims;      // ggml order: dims[0] innermost
  int64_t numel = 0;
  int64_t offset = 0;             // absolute byte offset in the file
  int64_t nbytes = 0;
  const uint8_t* data = nullptr;  // into the mapping

  std::vector<int64_t> row_major_shape() const;  // dims reversed: {rows, cols} for a matrix
};

class GgufFile {
 public:
  static std::shared_ptr<GgufFile> open(const std::string& path);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  int64_t alignment() const { return alignment_; }
  int64_t data_offset() const { return data_offset_; }  // start of the data section
  int64_t file_size() const;
  const MappedFile* mapping() const { return file_.get(); }  // what tensor data points into

  // ---- metadata
  const std::vector<GgufKeyValue>& metadata() const { return metadata_; }  // file order
  const GgufValue* find(const std::string& key) const;  // nullptr when absent
  bool has(const std::string& key) const { return find(key) != nullptr; }

  // get_u32/get_i64 take any integer type whose value fits; get_f32 F32 or F64; arrays likewise.
  std::string get_string(const std::string& key) const;
  uint32_t get_u32(const std::string& key) const;
  int64_t get_i64(const std::string& key) const;
  float get_f32(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::vector<std::string> get_string_array(const std::string& key) const;
  std::vector<int64_t> get_i64_array(const std::string& key) const;
  std::vector<float> get_f32_array(const std::string& key) const;

  // fallback only when absent: a present key of the wrong type is still an error
  std::string get_string_or(const std::string& key, const std::string& fallback) const;
  uint32_t get_u32_or(const std::string& key, uint32_t fallback) const;
  float get_f32_or(const std::string& key, float fallback) const;
  bool get_bool_or(const std::string& key, bool fallback) const;

  // ---- tensors
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }  // file order
  const GgufTensorInfo* find_tensor(const std::string& name) const;

 private:
  GgufFile() = default;
  void parse();
  const GgufValue& require(const std::string& key) const;
  [[noreturn]] void wrong_type(const std::string& key, const GgufValue& v, const char* wanted) const;

  std::string path_;
  std::shared_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  int64_t alignment_ = 32;
  int64_t data_offset_ = 0;
  std::vector<GgufKeyValue> metadata_;
  std::map<std::string, size_t> metadata_index_;  // key -> index in metadata_
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;    // name -> index in tensors_
};

}  // namespace smezo
