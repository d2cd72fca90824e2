// The tests' GGUF writer (see test_gguf_writer.h).
#include "test_gguf_writer.h"

#include <cstring>
#include <random>

#include "common/half.h"
#include "formats/gguf.h"

#include "test_util.h"

namespace smezo_test {

namespace {

template <typename T>
std::string le_bytes(T v) {
  std::string s(sizeof(T), '\0');
  std::memcpy(&s[0], &v, sizeof(T));  // the test machines are little-endian, like GGUF
  return s;
}

}  // namespace

std::string gguf_u8(uint8_t v) { return le_bytes(v); }
std::string gguf_u32(uint32_t v) { return le_bytes(v); }
std::string gguf_u64(uint64_t v) { return le_bytes(v); }
std::string gguf_i32(int32_t v) { return le_bytes(v); }
std::string gguf_f32(float v) { return le_bytes(v); }
std::string gguf_string(const std::string& s) { return gguf_u64(s.size()) + s; }

void GgufBuilder::add_raw(const std::string& key, uint32_t value_type, const std::string& value_bytes) {
  kv_bytes_ += gguf_string(key) + gguf_u32(value_type) + value_bytes;
  n_kv_++;
}

void GgufBuilder::add_u32(const std::string& key, uint32_t v) { add_raw(key, 4, gguf_u32(v)); }
void GgufBuilder::add_i32(const std::string& key, int32_t v) { add_raw(key, 5, gguf_i32(v)); }
void GgufBuilder::add_u64(const std::string& key, uint64_t v) { add_raw(key, 10, gguf_u64(v)); }
void GgufBuilder::add_f32(const std::string& key, float v) { add_raw(key, 6, gguf_f32(v)); }
void GgufBuilder::add_bool(const std::string& key, bool v) { add_raw(key, 7, gguf_u8(v ? 1 : 0)); }
void GgufBuilder::add_string(const std::string& key, const std::string& v) {
  add_raw(key, 8, gguf_string(v));
}

void GgufBuilder::add_string_array(const std::string& key, const std::vector<std::string>& v) {
  std::string b = gguf_u32(8) + gguf_u64(v.size());
  for (const std::string& s : v) b += gguf_string(s);
  add_raw(key, 9, b);
}

void GgufBuilder::add_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  std::string b = gguf_u32(5) + gguf_u64(v.size());
  for (int32_t x : v) b += gguf_i32(x);
  add_raw(key, 9, b);
}

void GgufBuilder::add_f32_array(const std::string& key, const std::vector<float>& v) {
  std::string b = gguf_u32(6) + gguf_u64(v.size());
  for (float x : v) b += gguf_f32(x);
  add_raw(key, 9, b);
}

void GgufBuilder::add_tensor(const GgufTestTensor& t) { tensors_.push_back(t); }

void GgufBuilder::add_f32_tensor(const std::string& name, const std::vector<uint64_t>& dims,
                                 const std::vector<float>& values) {
  GgufTestTensor t;
  t.name = name;
  t.type = 0;
  t.dims = dims;
  t.bytes.resize(values.size() * 4);
  std::memcpy(&t.bytes[0], values.data(), t.bytes.size());
  add_tensor(t);
}

std::string GgufBuilder::build() const {
  auto align = [this](int64_t n) { return (n + alignment - 1) / alignment * alignment; };
  std::string out = "GGUF" + gguf_u32(version);
  out += gguf_u64(tensor_count_override >= 0 ? static_cast<uint64_t>(tensor_count_override)
                                             : tensors_.size());
  out += gguf_u64(kv_count_override >= 0 ? static_cast<uint64_t>(kv_count_override) : n_kv_);
  out += kv_bytes_;
  std::string data;
  for (const GgufTestTensor& t : tensors_) {
    data.resize(static_cast<size_t>(align(static_cast<int64_t>(data.size()))), '\0');
    out += gguf_string(t.name) + gguf_u32(static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) out += gguf_u64(d);
    out += gguf_u32(t.type);
    out += gguf_u64(t.offset_override >= 0 ? static_cast<uint64_t>(t.offset_override) : data.size());
    data += t.bytes;
  }
  if (!tensors_.empty()) out.resize(static_cast<size_t>(align(static_cast<int64_t>(out.size()))), '\0');
  return out + data;
}

void GgufBuilder::write(const std::string& path) const { write_file(path, build()); }

std::vector<uint8_t> random_blocks(uint32_t type, int64_t n_blocks, uint32_t seed) {
  const smezo::GgufTypeTraits* t = smezo::gguf_type_traits(type);
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(static_cast<size_t>(n_blocks * t->block_bytes));
  for (auto& x : bytes) x = static_cast<uint8_t>(rng() & 0xff);
  std::vector<int> f16_fields;
  switch (type) {
    case smezo::GGUF_TYPE_Q4_1: case smezo::GGUF_TYPE_Q5_1: case smezo::GGUF_TYPE_Q4_K: case smezo::GGUF_TYPE_Q5_K:
      f16_fields = {0, 2};
      break;
    case smezo::GGUF_TYPE_Q6_K:
      f16_fields = {208};
      break;
    default:
      f16_fields = {0};
  }
  std::uniform_real_distribution<float> mag(0.002f, 0.2f);
  for (int64_t blk = 0; blk < n_blocks; blk++) {
    for (int off : f16_fields) {
      float v = mag(rng) * ((rng() & 1) ? 1.0f : -1.0f);
      uint16_t h = smezo::float_to_f16(v);
      std::memcpy(&bytes[static_cast<size_t>(blk * t->block_bytes + off)], &h, 2);
    }
  }
  return bytes;
}

}  // namespace smezo_test
