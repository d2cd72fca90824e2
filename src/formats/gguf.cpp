// GGUF container reader: every read and count bounds-checked, so a corrupt file ends in one smezo::Error.
#include "formats/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "common/check.h"
#include "common/mapped_file.h"

namespace smezo {

namespace {

constexpr uint32_t kMaxDims = 4;        // ggml's GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 4;       // arrays of arrays deeper than this are refused
constexpr int64_t kMaxNumel = std::numeric_limits<int64_t>::max() / 8;

const GgufTypeTraits kF32 = {"F32", 1, 4};
const GgufTypeTraits kF16 = {"F16", 1, 2};
const GgufTypeTraits kBF16 = {"BF16", 1, 2};
const GgufTypeTraits kQ4_0 = {"Q4_0", 32, 18};
const GgufTypeTraits kQ4_1 = {"Q4_1", 32, 20};
const GgufTypeTraits kQ5_0 = {"Q5_0", 32, 22};
const GgufTypeTraits kQ5_1 = {"Q5_1", 32, 24};
const GgufTypeTraits kQ8_0 = {"Q8_0", 32, 34};
const GgufTypeTraits kQ4_K = {"Q4_K", 256, 144};
const GgufTypeTraits kQ5_K = {"Q5_K", 256, 176};
const GgufTypeTraits kQ6_K = {"Q6_K", 256, 210};

// Bytes one scalar of a metadata value type takes; 0 for STRING/ARRAY/unknown.
int64_t scalar_size(uint32_t type) {
  switch (type) {
    case GGUF_VALUE_U8: case GGUF_VALUE_I8: case GGUF_VALUE_BOOL: return 1;
    case GGUF_VALUE_U16: case GGUF_VALUE_I16: return 2;
    case GGUF_VALUE_U32: case GGUF_VALUE_I32: case GGUF_VALUE_F32: return 4;
    case GGUF_VALUE_U64: case GGUF_VALUE_I64: case GGUF_VALUE_F64: return 8;
    default: return 0;
  }
}

bool is_integer_type(uint32_t type) {
  switch (type) {
    case GGUF_VALUE_U8: case GGUF_VALUE_I8: case GGUF_VALUE_U16: case GGUF_VALUE_I16:
    case GGUF_VALUE_U32: case GGUF_VALUE_I32: case GGUF_VALUE_U64: case GGUF_VALUE_I64:
      return true;
    default:
      return false;
  }
}

// Decodes one little-endian scalar at p into v (type already set).
void decode_scalar(const uint8_t* p, GgufValue* v) {
  switch (v->type) {
    case GGUF_VALUE_U8: v->integer = p[0]; return;
    case GGUF_VALUE_I8: v->integer = static_cast<int8_t>(p[0]); return;
    case GGUF_VALUE_BOOL: v->integer = p[0]; return;
    case GGUF_VALUE_U16: { uint16_t x; std::memcpy(&x, p, 2); v->integer = x; return; }
    case GGUF_VALUE_I16: { int16_t x; std::memcpy(&x, p, 2); v->integer = x; return; }
    case GGUF_VALUE_U32: { uint32_t x; std::memcpy(&x, p, 4); v->integer = x; return; }
    case GGUF_VALUE_I32: { int32_t x; std::memcpy(&x, p, 4); v->integer = x; return; }
    case GGUF_VALUE_I64: { int64_t x; std::memcpy(&x, p, 8); v->integer = x; return; }
    case GGUF_VALUE_U64: {
      uint64_t x;
      std::memcpy(&x, p, 8);
      if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        v->integer_is_huge = true;
        v->huge = x;
      } else {
        v->integer = static_cast<int64_t>(x);
      }
      return;
    }
    case GGUF_VALUE_F32: { float x; std::memcpy(&x, p, 4); v->real = x; return; }
    case GGUF_VALUE_F64: { double x; std::memcpy(&x, p, 8); v->real = x; return; }
    default: return;
  }
}

// A bounds-checked reading position in the mapped file; `what` names the thing read ("tensor #3").
class Cursor {
 public:
  Cursor(const std::string& path, const uint8_t* base, int64_t size)
      : path_(path), base_(base), size_(size) {}

  int64_t pos() const { return pos_; }
  int64_t left() const { return size_ - pos_; }
  const uint8_t* here() const { return base_ + pos_; }

  void need(int64_t n, const std::string& what) const {
    SMEZO_REQUIRE(n >= 0 && n <= left(),
                  "%s: %s needs %lld bytes at offset %lld but the file ends at %lld bytes "
                  "(truncated or corrupt GGUF)",
                  path_.c_str(), what.c_str(), (long long)n, (long long)pos_, (long long)size_);
  }
  void skip(int64_t n, const std::string& what) {
    need(n, what);
    pos_ += n;
  }
  uint32_t u32(const std::string& what) {
    need(4, what);
    uint32_t x;
    std::memcpy(&x, here(), 4);
    pos_ += 4;
    return x;
  }
  uint64_t u64(const std::string& what) {
    need(8, what);
    uint64_t x;
    std::memcpy(&x, here(), 8);
    pos_ += 8;
    return x;
  }
  std::string_view string(const std::string& what) {
    const int64_t at = pos_;
    uint64_t len = u64(what + " (string length)");
    SMEZO_REQUIRE(len <= static_cast<uint64_t>(left()),
                  "%s: %s is a string of %llu bytes at offset %lld, which runs past the end of "
                  "the file (%lld bytes); the GGUF is truncated or corrupt",
                  path_.c_str(), what.c_str(), (unsigned long long)len, (long long)at,
                  (long long)size_);
    std::string_view s(reinterpret_cast<const char*>(here()), static_cast<size_t>(len));
    pos_ += static_cast<int64_t>(len);
    return s;
  }
  // Refuses a count that cannot fit in what is left of the file.
  void check_count(uint64_t count, int64_t min_bytes_each, const std::string& what) const {
    SMEZO_REQUIRE(count <= static_cast<uint64_t>(left() / min_bytes_each),
                  "%s: %s claims %llu entries, but only %lld bytes are left in the file (at "
                  "least %lld bytes each); the GGUF is corrupt",
                  path_.c_str(), what.c_str(), (unsigned long long)count, (long long)left(),
                  (long long)min_bytes_each);
  }

 private:
  const std::string& path_;
  const uint8_t* base_;
  int64_t size_;
  int64_t pos_ = 0;
};

void read_value(Cursor& cur, const std::string& path, const std::string& what, uint32_t type,
                int depth, GgufValue* out);

void read_array(Cursor& cur, const std::string& path, const std::string& what, int depth,
                GgufValue* out) {
  SMEZO_REQUIRE(depth < kMaxArrayDepth, "%s: %s nests arrays more than %d deep; not supported",
                path.c_str(), what.c_str(), kMaxArrayDepth);
  const uint32_t elem = cur.u32(what + " (array element type)");
  SMEZO_REQUIRE(elem <= GGUF_VALUE_F64, "%s: %s is an array of unknown value type %u",
                path.c_str(), what.c_str(), elem);
  const uint64_t count = cur.u64(what + " (array length)");
  out->elem_type = static_cast<GgufValueType>(elem);
  out->count = count;
  if (elem == GGUF_VALUE_STRING) {
    cur.check_count(count, 8, what);
    for (uint64_t i = 0; i < count; i++)
      out->strings.push_back(cur.string(what + " element " + std::to_string(i)));
  } else if (elem == GGUF_VALUE_ARRAY) {
    cur.check_count(count, 12, what);
    for (uint64_t i = 0; i < count; i++) {
      out->items.emplace_back();
      read_value(cur, path, what + " element " + std::to_string(i), GGUF_VALUE_ARRAY, depth + 1,
                 &out->items.back());
    }
  } else {
    const int64_t size = scalar_size(elem);
    cur.check_count(count, size, what);
    out->raw = cur.here();
    cur.skip(static_cast<int64_t>(count) * size, what);
    if (elem == GGUF_VALUE_BOOL) {
      for (uint64_t i = 0; i < count; i++)
        SMEZO_REQUIRE(out->raw[i] <= 1, "%s: %s element %llu is a bool with byte value %u (not 0 or 1)",
                      path.c_str(), what.c_str(), (unsigned long long)i, out->raw[i]);
    }
  }
}

void read_value(Cursor& cur, const std::string& path, const std::string& what, uint32_t type,
                int depth, GgufValue* out) {
  SMEZO_REQUIRE(type <= GGUF_VALUE_F64, "%s: %s has unknown value type %u (corrupt GGUF?)",
                path.c_str(), what.c_str(), type);
  out->type = static_cast<GgufValueType>(type);
  if (type == GGUF_VALUE_STRING) {
    out->string = cur.string(what);
  } else if (type == GGUF_VALUE_ARRAY) {
    read_array(cur, path, what, depth, out);
  } else {
    const int64_t size = scalar_size(type);
    cur.need(size, what);
    decode_scalar(cur.here(), out);
    SMEZO_REQUIRE(type != GGUF_VALUE_BOOL || out->integer <= 1,
                  "%s: %s is a bool with byte value %lld (not 0 or 1)", path.c_str(), what.c_str(),
                  (long long)out->integer);
    cur.skip(size, what);
  }
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// Entry i of the tensor table; its data offset (a multiple of alignment) into *rel_offset.
GgufTensorInfo read_tensor_info(Cursor& cur, const std::string& path, uint64_t i,
                                const std::map<std::string, size_t>& index, int64_t alignment, uint64_t* rel_offset) {
  const char* p = path.c_str();
  GgufTensorInfo t;
  t.name = std::string(cur.string("tensor #" + std::to_string(i) + " (name)"));
  const std::string what = "tensor " + quoted(t.name);
  SMEZO_REQUIRE(index.count(t.name) == 0, "%s: %s appears twice", p, what.c_str());
  const uint32_t n_dims = cur.u32(what + " (n_dims)");
  SMEZO_REQUIRE(n_dims >= 1 && n_dims <= kMaxDims,
                "%s: %s has %u dimensions; GGUF tensors have 1 to %u", p, what.c_str(), n_dims,
                kMaxDims);
  t.numel = 1;
  for (uint32_t d = 0; d < n_dims; d++) {
    const uint64_t dim = cur.u64(what + " (dims)");
    SMEZO_REQUIRE(dim >= 1 && dim <= static_cast<uint64_t>(kMaxNumel / t.numel),
                  "%s: %s dimension %u is %llu (zero, or the tensor would have more than 2^60 "
                  "elements)", p, what.c_str(), d, (unsigned long long)dim);
    t.dims.push_back(static_cast<int64_t>(dim));
    t.numel *= static_cast<int64_t>(dim);
  }
  t.type = cur.u32(what + " (type)");
  const GgufTypeTraits* traits = gguf_type_traits(t.type);
  SMEZO_REQUIRE(traits, "%s: %s has tensor type %s (%u), which smezo does not read (it reads %s)",
                p, what.c_str(), gguf_type_name(t.type), t.type, gguf_supported_types().c_str());
  SMEZO_REQUIRE(t.dims[0] % traits->block_size == 0,
                "%s: %s has type %s (blocks of %lld) but its innermost dimension %lld is not a "
                "multiple of the block size", p, what.c_str(), traits->name,
                (long long)traits->block_size, (long long)t.dims[0]);
  t.nbytes = t.numel / traits->block_size * traits->block_bytes;
  *rel_offset = cur.u64(what + " (offset)");
  SMEZO_REQUIRE(*rel_offset % static_cast<uint64_t>(alignment) == 0,
                "%s: %s starts at data offset %llu, which is not a multiple of the alignment %lld",
                p, what.c_str(), (unsigned long long)*rel_offset, (long long)alignment);
  return t;
}

}  // namespace

// ---- type tables

const char* gguf_value_type_name(uint32_t type) {
  static const char* names[] = {"u8",  "i8",     "u16",   "i16", "u32", "i32", "f32",
                                "bool", "string", "array", "u64", "i64", "f64"};
  return type <= GGUF_VALUE_F64 ? names[type] : "unknown";
}

const GgufTypeTraits* gguf_type_traits(uint32_t type) {
  switch (type) {
    case GGUF_TYPE_F32: return &kF32;
    case GGUF_TYPE_F16: return &kF16;
    case GGUF_TYPE_BF16: return &kBF16;
    case GGUF_TYPE_Q4_0: return &kQ4_0;
    case GGUF_TYPE_Q4_1: return &kQ4_1;
    case GGUF_TYPE_Q5_0: return &kQ5_0;
    case GGUF_TYPE_Q5_1: return &kQ5_1;
    case GGUF_TYPE_Q8_0: return &kQ8_0;
    case GGUF_TYPE_Q4_K: return &kQ4_K;
    case GGUF_TYPE_Q5_K: return &kQ5_K;
    case GGUF_TYPE_Q6_K: return &kQ6_K;
    default: return nullptr;
  }
}

const char* gguf_type_name(uint32_t type) {
  if (const GgufTypeTraits* t = gguf_type_traits(type)) return t->name;
  switch (type) {
    case 9: return "Q8_1";
    case 10: return "Q2_K";
    case 11: return "Q3_K";
    case 15: return "Q8_K";
    case 16: return "IQ2_XXS";
    case 17: return "IQ2_XS";
    case 18: return "IQ3_XXS";
    case 19: return "IQ1_S";
    case 20: return "IQ4_NL";
    case 21: return "IQ3_S";
    case 22: return "IQ2_S";
    case 23: return "IQ4_XS";
    case 24: return "I8";
    case 25: return "I16";
    case 26: return "I32";
    case 27: return "I64";
    case 28: return "F64";
    case 29: return "IQ1_M";
    case 34: return "TQ1_0";
    case 35: return "TQ2_0";
    default: return "unknown";
  }
}

std::string gguf_supported_types() {
  return "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K";
}

std::vector<int64_t> GgufTensorInfo::row_major_shape() const {
  return std::vector<int64_t>(dims.rbegin(), dims.rend());
}

// ---- parsing

std::shared_ptr<GgufFile> GgufFile::open(const std::string& path) {
  std::shared_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  f->file_ = MappedFile::open(path, "GGUF file");
  f->parse();
  return f;
}

int64_t GgufFile::file_size() const { return file_->size(); }

void GgufFile::parse() {
  const char* p = path_.c_str();
  Cursor cur(path_, file_->data(), file_->size());
  cur.need(4, "the GGUF magic");
  SMEZO_REQUIRE(std::memcmp(cur.here(), "GGUF", 4) == 0,
                "%s: not a GGUF file (the first 4 bytes are not \"GGUF\")", p);
  cur.skip(4, "the GGUF magic");
  version_ = cur.u32("the GGUF version");
  SMEZO_REQUIRE(version_ != 0x03000000u && version_ != 0x02000000u,
                "%s: big-endian GGUF (version field %08x) is not supported; convert the file to "
                "little-endian", p, version_);
  SMEZO_REQUIRE(version_ == 2 || version_ == 3,
                "%s: GGUF version %u is not supported (smezo reads versions 2 and 3)", p, version_);
  const uint64_t n_tensors = cur.u64("the tensor count");
  const uint64_t n_kv = cur.u64("the metadata key count");
  // Smallest entries: key/value = empty key (8) + type (4) + u8 (1); tensor = 8 + 4 + 8 + 4 + 8.
  cur.check_count(n_kv, 13, "the header's metadata key count");
  cur.check_count(n_tensors, 32, "the header's tensor count");

  // Appended as parsed, never sized from the claimed counts.
  for (uint64_t i = 0; i < n_kv; i++) {
    metadata_.emplace_back();
    GgufKeyValue& kv = metadata_.back();
    const std::string where = "metadata key #" + std::to_string(i);
    kv.key = std::string(cur.string(where));
    const std::string what = "metadata key " + quoted(kv.key);
    SMEZO_REQUIRE(metadata_index_.count(kv.key) == 0, "%s: %s appears twice", p, what.c_str());
    const uint32_t type = cur.u32(what + " (value type)");
    read_value(cur, path_, what, type, 0, &kv.value);
    metadata_index_[kv.key] = static_cast<size_t>(i);
  }

  if (const GgufValue* a = find("general.alignment")) {
    SMEZO_REQUIRE(is_integer_type(a->type) && !a->integer_is_huge && a->integer > 0 &&
                      a->integer <= (1 << 30) && (a->integer & (a->integer - 1)) == 0,
                  "%s: metadata key 'general.alignment' must be a power of two (got %s %lld)", p,
                  gguf_value_type_name(a->type), (long long)a->integer);
    alignment_ = a->integer;
  }

  std::vector<uint64_t> rel_offsets;
  for (uint64_t i = 0; i < n_tensors; i++) {
    rel_offsets.push_back(0);
    tensors_.push_back(read_tensor_info(cur, path_, i, tensor_index_, alignment_, &rel_offsets.back()));
    tensor_index_[tensors_.back().name] = static_cast<size_t>(i);
  }

  // A file without tensors may end right after the table.
  data_offset_ = (cur.pos() + alignment_ - 1) / alignment_ * alignment_;
  const int64_t size = file_->size();
  SMEZO_REQUIRE(n_tensors == 0 || data_offset_ <= size,
                "%s: the data section would start at byte %lld, past the end of the file (%lld "
                "bytes); the GGUF is truncated", p, (long long)data_offset_, (long long)size);
  for (size_t i = 0; i < tensors_.size(); i++) {
    GgufTensorInfo& t = tensors_[i];
    const uint64_t rel = rel_offsets[i];
    const uint64_t room = static_cast<uint64_t>(size - data_offset_);
    SMEZO_REQUIRE(rel <= room && static_cast<uint64_t>(t.nbytes) <= room - rel,
                  "%s: tensor '%s' (%s, %lld bytes at data offset %llu) extends past the end of "
                  "the file (%lld bytes); the GGUF is truncated or its tensor table is corrupt", p,
                  t.name.c_str(), gguf_type_name(t.type), (long long)t.nbytes,
                  (unsigned long long)rel, (long long)size);
    t.offset = data_offset_ + static_cast<int64_t>(rel);
    t.data = file_->data() + t.offset;
  }
  // No two tensors share bytes (a writer lays them out one after another): a scale patch of one would
  // otherwise rewrite the other (the gguf fuzzer's finding: a grown dimension ran into the next tensor).
  std::vector<const GgufTensorInfo*> by_offset;
  for (const GgufTensorInfo& t : tensors_) by_offset.push_back(&t);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); i++) {
    const GgufTensorInfo &a = *by_offset[i - 1], &b = *by_offset[i];
    SMEZO_REQUIRE(a.offset + a.nbytes <= b.offset,
                  "%s: tensor '%s' (%lld bytes at byte %lld) runs into tensor '%s' at byte %lld; the GGUF's "
                  "tensor table is corrupt", p, a.name.c_str(), (long long)a.nbytes, (long long)a.offset,
                  b.name.c_str(), (long long)b.offset);
  }
}

// ---- metadata accessors

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

const GgufValue& GgufFile::require(const std::string& key) const {
  const GgufValue* v = find(key);
  SMEZO_REQUIRE(v, "%s: GGUF metadata key '%s' is missing", path_.c_str(), key.c_str());
  return *v;
}

void GgufFile::wrong_type(const std::string& key, const GgufValue& v, const char* wanted) const {
  std::string have = gguf_value_type_name(v.type);
  if (v.type == GGUF_VALUE_ARRAY) have += std::string(" of ") + gguf_value_type_name(v.elem_type);
  throw_error("%s: GGUF metadata key '%s' is %s, expected %s", path_.c_str(), key.c_str(),
              have.c_str(), wanted);
}

std::string GgufFile::get_string(const std::string& key) const {
  const GgufValue& v = require(key);
  if (v.type != GGUF_VALUE_STRING) wrong_type(key, v, "a string");
  return std::string(v.string);
}

uint32_t GgufFile::get_u32(const std::string& key) const {
  const GgufValue& v = require(key);
  if (!is_integer_type(v.type)) wrong_type(key, v, "an unsigned integer");
  SMEZO_REQUIRE(!v.integer_is_huge && v.integer >= 0 && v.integer <= 0xffffffffLL,
                "%s: GGUF metadata key '%s' = %s is out of range for a u32", path_.c_str(),
                key.c_str(),
                v.integer_is_huge ? std::to_string(v.huge).c_str() : std::to_string(v.integer).c_str());
  return static_cast<uint32_t>(v.integer);
}

int64_t GgufFile::get_i64(const std::string& key) const {
  const GgufValue& v = require(key);
  if (!is_integer_type(v.type)) wrong_type(key, v, "an integer");
  SMEZO_REQUIRE(!v.integer_is_huge, "%s: GGUF metadata key '%s' = %llu is out of range for an i64",
                path_.c_str(), key.c_str(), (unsigned long long)v.huge);
  return v.integer;
}

float GgufFile::get_f32(const std::string& key) const {
  const GgufValue& v = require(key);
  if (v.type != GGUF_VALUE_F32 && v.type != GGUF_VALUE_F64) wrong_type(key, v, "a float");
  return static_cast<float>(v.real);
}

bool GgufFile::get_bool(const std::string& key) const {
  const GgufValue& v = require(key);
  if (v.type != GGUF_VALUE_BOOL) wrong_type(key, v, "a bool");
  return v.integer != 0;
}

std::vector<std::string> GgufFile::get_string_array(const std::string& key) const {
  const GgufValue& v = require(key);
  if (v.type != GGUF_VALUE_ARRAY || v.elem_type != GGUF_VALUE_STRING)
    wrong_type(key, v, "an array of strings");
  std::vector<std::string> out;
  out.reserve(v.strings.size());
  for (std::string_view s : v.strings) out.emplace_back(s);
  return out;
}

std::vector<int64_t> GgufFile::get_i64_array(const std::string& key) const {
  const GgufValue& v = require(key);
  if (v.type != GGUF_VALUE_ARRAY || !is_integer_type(v.elem_type))
    wrong_type(key, v, "an array of integers");
  const int64_t size = scalar_size(v.elem_type);
  std::vector<int64_t> out(static_cast<size_t>(v.count));
  for (uint64_t i = 0; i < v.count; i++) {
    GgufValue e;
    e.type = v.elem_type;
    decode_scalar(v.raw + i * size, &e);
    SMEZO_REQUIRE(!e.integer_is_huge, "%s: GGUF metadata key '%s' element %llu = %llu is out of "
                  "range for an i64", path_.c_str(), key.c_str(), (unsigned long long)i,
                  (unsigned long long)e.huge);
    out[static_cast<size_t>(i)] = e.integer;
  }
  return out;
}

std::vector<float> GgufFile::get_f32_array(const std::string& key) const {
  const GgufValue& v = require(key);
  if (v.type != GGUF_VALUE_ARRAY || (v.elem_type != GGUF_VALUE_F32 && v.elem_type != GGUF_VALUE_F64))
    wrong_type(key, v, "an array of floats");
  const int64_t size = scalar_size(v.elem_type);
  std::vector<float> out(static_cast<size_t>(v.count));
  for (uint64_t i = 0; i < v.count; i++) {
    GgufValue e;
    e.type = v.elem_type;
    decode_scalar(v.raw + i * size, &e);
    out[static_cast<size_t>(i)] = static_cast<float>(e.real);
  }
  return out;
}

std::string GgufFile::get_string_or(const std::string& key, const std::string& fallback) const {
  return has(key) ? get_string(key) : fallback;
}
uint32_t GgufFile::get_u32_or(const std::string& key, uint32_t fallback) const {
  return has(key) ? get_u32(key) : fallback;
}
float GgufFile::get_f32_or(const std::string& key, float fallback) const {
  return has(key) ? get_f32(key) : fallback;
}
bool GgufFile::get_bool_or(const std::string& key, bool fallback) const {
  return has(key) ? get_bool(key) : fallback;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace smezo
