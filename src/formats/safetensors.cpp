// safetensors reader (validating, memory-mapped) and atomic writer. Format: safetensors.h.
#include "formats/safetensors.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/mapped_file.h"

namespace smezo {

namespace {

using json = nlohmann::json;

// --- reading

bool dtype_from_name(const std::string& s, DType* out) {
  if (s == "F32") *out = DTYPE_F32;
  else if (s == "F16") *out = DTYPE_F16;
  else if (s == "BF16") *out = DTYPE_BF16;
  else return false;
  return true;
}

// A non-negative JSON integer, or -1 when v is not an integer (or is negative / too large).
int64_t json_nonneg_int(const json& v) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    return u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? -1
                                                                          : static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    return i < 0 ? -1 : i;
  }
  return -1;
}

HostTensorView parse_tensor_entry(const std::string& path, const std::string& name,
                                  const json& entry, const uint8_t* data_region,
                                  int64_t data_size) {
  const char* p = path.c_str();
  const char* n = name.c_str();
  SMEZO_REQUIRE(entry.is_object(), "safetensors file %s: tensor '%s': header entry is %s, "
                "expected an object with dtype, shape and data_offsets", p, n, entry.type_name());

  HostTensorView view;
  view.name = name;
  view.file = path;

  auto dt = entry.find("dtype");
  SMEZO_REQUIRE(dt != entry.end(), "safetensors file %s: tensor '%s' has no dtype field", p, n);
  SMEZO_REQUIRE(dt->is_string(), "safetensors file %s: tensor '%s': dtype is %s, expected a "
                "string", p, n, dt->type_name());
  std::string dtype_str = dt->get<std::string>();
  SMEZO_REQUIRE(dtype_from_name(dtype_str, &view.dtype),
                "safetensors file %s: tensor '%s' has dtype %s; smezo reads F32, F16 and BF16 "
                "(convert the checkpoint, e.g. torch: model.to(torch.bfloat16), and save again)",
                p, n, dtype_str.c_str());

  auto sh = entry.find("shape");
  SMEZO_REQUIRE(sh != entry.end(), "safetensors file %s: tensor '%s' has no shape field", p, n);
  SMEZO_REQUIRE(sh->is_array(), "safetensors file %s: tensor '%s': shape is %s, expected an "
                "array of dimensions", p, n, sh->type_name());
  int64_t numel = 1;
  for (const json& d : *sh) {
    int64_t dim = json_nonneg_int(d);
    SMEZO_REQUIRE(dim >= 0, "safetensors file %s: tensor '%s': shape %s has a dimension that "
                  "is not a non-negative integer", p, n, sh->dump().c_str());
    SMEZO_REQUIRE(dim == 0 || numel <= std::numeric_limits<int64_t>::max() / dim,
                  "safetensors file %s: tensor '%s': shape %s is too large", p, n,
                  sh->dump().c_str());
    numel *= dim;
    view.shape.push_back(dim);
  }
  int64_t elem = dtype_size(view.dtype);
  SMEZO_REQUIRE(numel <= std::numeric_limits<int64_t>::max() / elem,
                "safetensors file %s: tensor '%s': shape %s is too large", p, n,
                sh->dump().c_str());
  int64_t nbytes = numel * elem;

  auto off = entry.find("data_offsets");
  SMEZO_REQUIRE(off != entry.end(), "safetensors file %s: tensor '%s' has no data_offsets "
                "field", p, n);
  SMEZO_REQUIRE(off->is_array() && off->size() == 2, "safetensors file %s: tensor '%s': "
                "data_offsets is %s, expected [begin, end]", p, n, off->dump().c_str());
  int64_t begin = json_nonneg_int((*off)[0]);
  int64_t end = json_nonneg_int((*off)[1]);
  SMEZO_REQUIRE(begin >= 0 && end >= 0, "safetensors file %s: tensor '%s': data_offsets %s "
                "must be two non-negative integers", p, n, off->dump().c_str());
  SMEZO_REQUIRE(begin <= end, "safetensors file %s: tensor '%s': data_offsets begin %lld is "
                "after end %lld", p, n, static_cast<long long>(begin),
                static_cast<long long>(end));
  SMEZO_REQUIRE(end <= data_size, "safetensors file %s: tensor '%s': data_offsets end %lld is "
                "past the end of the file (data region is %lld bytes); the file is truncated",
                p, n, static_cast<long long>(end), static_cast<long long>(data_size));
  SMEZO_REQUIRE(end - begin == nbytes, "safetensors file %s: tensor '%s': data_offsets span "
                "%lld bytes but %s shape %s needs %lld", p, n,
                static_cast<long long>(end - begin), dtype_str.c_str(), sh->dump().c_str(),
                static_cast<long long>(nbytes));
  view.data = data_region + begin;
  return view;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& meta) {
  std::map<std::string, std::string> out;
  if (meta.is_null()) return out;
  SMEZO_REQUIRE(meta.is_object(), "safetensors file %s: __metadata__ is %s, expected an object "
                "of strings", path.c_str(), meta.type_name());
  for (auto it = meta.begin(); it != meta.end(); ++it) {
    SMEZO_REQUIRE(it->is_string(), "safetensors file %s: __metadata__ key '%s' is %s, expected "
                  "a string", path.c_str(), it.key().c_str(), it->type_name());
    out[it.key()] = it->get<std::string>();
  }
  return out;
}

uint64_t read_u64_le(const uint8_t* b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | b[i];
  return v;
}

// --- writing

void put_u64_le(uint64_t v, char* out) {
  for (int i = 0; i < 8; i++) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

int64_t shape_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Closes (if open) and removes the temporary file, then throws.
[[noreturn]] void fail_write(std::FILE* f, const std::string& tmp, const std::string& what,
                             int err) {
  if (f) std::fclose(f);
  std::remove(tmp.c_str());
  throw_error("cannot write safetensors file %s: %s: %s", tmp.c_str(), what.c_str(),
              std::strerror(err));
}

}  // namespace

// --- SafetensorsFile

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  mapping_ = MappedFile::open(path);
  const char* p = path.c_str();
  const int64_t size = mapping_->size();
  SMEZO_REQUIRE(size >= 8, "safetensors file %s is %lld bytes, shorter than the 8-byte header "
                "length; the file is truncated or not safetensors", p,
                static_cast<long long>(size));
  const uint8_t* base = mapping_->data();
  uint64_t header_len = read_u64_le(base);
  SMEZO_REQUIRE(header_len <= static_cast<uint64_t>(size - 8), "safetensors file %s: header "
                "length %llu runs past the end of the file (%lld bytes); the file is truncated "
                "or not safetensors", p, static_cast<unsigned long long>(header_len),
                static_cast<long long>(size));

  const char* hbegin = reinterpret_cast<const char*>(base + 8);
  json header;
  try {
    header = json::parse(hbegin, hbegin + header_len);
  } catch (const json::exception& e) {
    throw_error("safetensors file %s: header is not valid JSON (%s)", p, e.what());
  }
  SMEZO_REQUIRE(header.is_object(), "safetensors file %s: header is a JSON %s, expected an "
                "object", p, header.type_name());

  const int64_t data_offset = 8 + static_cast<int64_t>(header_len);
  const uint8_t* data_region = base + data_offset;
  const int64_t data_size = size - data_offset;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      metadata_ = parse_metadata(path, *it);
      continue;
    }
    tensors_.emplace(it.key(), parse_tensor_entry(path, it.key(), *it, data_region, data_size));
  }
}

const HostTensorView& SafetensorsFile::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  SMEZO_REQUIRE(it != tensors_.end(), "safetensors file %s has no tensor '%s'", path_.c_str(),
                name.c_str());
  return it->second;
}

std::shared_ptr<void> SafetensorsFile::keep_alive() const { return mapping_; }

// --- write_safetensors

void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const char* p = path.c_str();
  std::set<std::string> names;
  for (const SafetensorsEntry& t : tensors) {
    SMEZO_REQUIRE(!t.name.empty(), "write_safetensors %s: a tensor has an empty name", p);
    SMEZO_REQUIRE(t.name != "__metadata__", "write_safetensors %s: '__metadata__' is reserved "
                  "and cannot name a tensor", p);
    SMEZO_REQUIRE(names.insert(t.name).second, "write_safetensors %s: tensor '%s' is given "
                  "twice", p, t.name.c_str());
    for (int64_t d : t.shape)
      SMEZO_REQUIRE(d >= 0, "write_safetensors %s: tensor '%s' has negative dimension %lld", p,
                    t.name.c_str(), static_cast<long long>(d));
    SMEZO_REQUIRE(t.data != nullptr || shape_numel(t.shape) == 0,
                  "write_safetensors %s: tensor '%s' has no data", p, t.name.c_str());
  }

  // Largest element size first, then by name: every tensor starts aligned to its element.
  std::vector<const SafetensorsEntry*> order;
  for (const SafetensorsEntry& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const SafetensorsEntry* a, const SafetensorsEntry* b) {
    if (dtype_size(a->dtype) != dtype_size(b->dtype))
      return dtype_size(a->dtype) > dtype_size(b->dtype);
    return a->name < b->name;
  });

  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  int64_t offset = 0;
  for (const SafetensorsEntry* t : order) {
    int64_t nbytes = shape_numel(t->shape) * dtype_size(t->dtype);
    header[t->name] = {{"dtype", dtype_name(t->dtype)},
                       {"shape", t->shape},
                       {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {
    throw_error("write_safetensors %s: a tensor name or metadata string is not valid UTF-8 (%s)",
                p, e.what());
  }
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');
  char len_bytes[8];
  put_u64_le(text.size(), len_bytes);

  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) fail_write(nullptr, tmp, "cannot create it", errno);
  if (std::fwrite(len_bytes, 1, 8, f) != 8 || std::fwrite(text.data(), 1, text.size(), f) !=
      text.size())
    fail_write(f, tmp, "writing the header", errno);
  for (const SafetensorsEntry* t : order) {
    size_t nbytes = static_cast<size_t>(shape_numel(t->shape) * dtype_size(t->dtype));
    if (nbytes > 0 && std::fwrite(t->data, 1, nbytes, f) != nbytes)
      fail_write(f, tmp, "writing tensor '" + t->name + "'", errno);
  }
  if (std::fflush(f) != 0) fail_write(f, tmp, "flushing", errno);
  if (fsync(fileno(f)) != 0) fail_write(f, tmp, "fsync", errno);
  if (std::fclose(f) != 0) fail_write(nullptr, tmp, "closing", errno);
  if (std::rename(tmp.c_str(), p) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw_error("cannot rename %s to %s: %s", tmp.c_str(), p, std::strerror(err));
  }
}

}  // namespace smezo
