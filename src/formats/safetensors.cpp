// safetensors reader (validating, memory-mapped) and atomic writer. Format: safetensors.h.
#include "formats/safetensors.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/checked_int.h"
#include "common/mapped_file.h"
#include "formats/json_read.h"

namespace smezo {

namespace {

using json = nlohmann::json;

// The reference implementation's bound on the header (huggingface/safetensors: 100 MB).
constexpr int64_t kMaxHeaderBytes = 100000000;

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
  const std::optional<int64_t> i = json_number<int64_t>(v);
  return i && *i >= 0 ? *i : -1;
}

// One header entry, before its offsets are checked against the others.
struct Entry {
  HostTensorView view;
  int64_t begin = 0, end = 0;  // byte range in the data region
};

Entry parse_tensor_entry(const std::string& path, const std::string& name, const json& entry) {
  const char* p = path.c_str();
  const std::string shown = printable(name);
  const char* n = shown.c_str();
  SMEZO_REQUIRE(entry.is_object(), "safetensors file %s: tensor '%s': header entry is %s, "
                "expected an object with dtype, shape and data_offsets", p, n, entry.type_name());

  Entry out;
  HostTensorView& view = out.view;
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
                p, n, printable(dtype_str, 40).c_str());

  auto sh = entry.find("shape");
  SMEZO_REQUIRE(sh != entry.end(), "safetensors file %s: tensor '%s' has no shape field", p, n);
  SMEZO_REQUIRE(sh->is_array(), "safetensors file %s: tensor '%s': shape is %s, expected an "
                "array of dimensions", p, n, sh->type_name());
  for (const json& d : *sh) {
    int64_t dim = json_nonneg_int(d);
    SMEZO_REQUIRE(dim >= 0, "safetensors file %s: tensor '%s': shape %s has a dimension that "
                  "is not a non-negative integer", p, n, json_brief(*sh).c_str());
    view.shape.push_back(dim);
  }
  const int64_t numel = checked_numel(view.shape.data(), view.shape.size());
  int64_t nbytes = 0;
  SMEZO_REQUIRE(numel >= 0 && checked_mul(numel, dtype_size(view.dtype), &nbytes),
                "safetensors file %s: tensor '%s': shape %s is too large (its byte size "
                "overflows int64)", p, n, json_brief(*sh).c_str());

  auto off = entry.find("data_offsets");
  SMEZO_REQUIRE(off != entry.end(), "safetensors file %s: tensor '%s' has no data_offsets "
                "field", p, n);
  SMEZO_REQUIRE(off->is_array() && off->size() == 2, "safetensors file %s: tensor '%s': "
                "data_offsets is %s, expected [begin, end]", p, n, json_brief(*off).c_str());
  out.begin = json_nonneg_int((*off)[0]);
  out.end = json_nonneg_int((*off)[1]);
  SMEZO_REQUIRE(out.begin >= 0 && out.end >= 0, "safetensors file %s: tensor '%s': data_offsets "
                "%s must be two non-negative integers", p, n, json_brief(*off).c_str());
  SMEZO_REQUIRE(out.begin <= out.end, "safetensors file %s: tensor '%s': data_offsets begin %lld "
                "is after end %lld", p, n, static_cast<long long>(out.begin),
                static_cast<long long>(out.end));
  SMEZO_REQUIRE(out.end - out.begin == nbytes, "safetensors file %s: tensor '%s': data_offsets "
                "span %lld bytes but %s shape %s needs %lld", p, n,
                static_cast<long long>(out.end - out.begin), dtype_str.c_str(),
                json_brief(*sh).c_str(), static_cast<long long>(nbytes));
  return out;
}

// The tiling rule of safetensors.h. Zero-byte tensors may share an offset.
void check_tiling(const std::string& path, std::vector<Entry*>& entries, int64_t data_size,
                  uint64_t header_len) {
  const char* p = path.c_str();
  std::sort(entries.begin(), entries.end(), [](const Entry* a, const Entry* b) {
    if (a->begin != b->begin) return a->begin < b->begin;
    return a->end != b->end ? a->end < b->end : a->view.name < b->view.name;
  });
  int64_t expected = 0;
  const Entry* prev = nullptr;
  for (const Entry* e : entries) {
    if (e->begin != expected) {
      const std::string name = printable(e->view.name);
      SMEZO_REQUIRE(prev, "safetensors file %s: tensor '%s': data_offsets [%lld, %lld], but the "
                    "first tensor must begin at offset 0 of the data region; the header is "
                    "corrupt", p, name.c_str(), static_cast<long long>(e->begin),
                    static_cast<long long>(e->end));
      const std::string other = printable(prev->view.name);
      if (e->begin < expected)
        throw_error("safetensors file %s: tensor '%s': data_offsets [%lld, %lld] overlap tensor "
                    "'%s' (which ends at %lld); the header is corrupt", p, name.c_str(),
                    static_cast<long long>(e->begin), static_cast<long long>(e->end),
                    other.c_str(), static_cast<long long>(expected));
      throw_error("safetensors file %s: tensor '%s': data_offsets [%lld, %lld] leave a gap of "
                  "%lld bytes after tensor '%s' (which ends at %lld); the header is corrupt", p,
                  name.c_str(), static_cast<long long>(e->begin), static_cast<long long>(e->end),
                  static_cast<long long>(e->begin - expected), other.c_str(),
                  static_cast<long long>(expected));
    }
    expected = e->end;
    prev = e;
  }
  SMEZO_REQUIRE(expected <= data_size, "safetensors file %s: tensor '%s': data_offsets end %lld "
                "is past the end of the file (data region is %lld bytes); the file is truncated",
                p, printable(prev->view.name).c_str(), static_cast<long long>(expected),
                static_cast<long long>(data_size));
  SMEZO_REQUIRE(expected == data_size, "safetensors file %s: %lld bytes after the last tensor "
                "(data region is %lld bytes, the tensors cover %lld); the file has trailing "
                "bytes or its header length (%llu) is wrong", p,
                static_cast<long long>(data_size - expected), static_cast<long long>(data_size),
                static_cast<long long>(expected), static_cast<unsigned long long>(header_len));
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& meta) {
  std::map<std::string, std::string> out;
  if (meta.is_null()) return out;
  SMEZO_REQUIRE(meta.is_object(), "safetensors file %s: __metadata__ is %s, expected an object "
                "of strings", path.c_str(), meta.type_name());
  for (auto it = meta.begin(); it != meta.end(); ++it) {
    SMEZO_REQUIRE(it->is_string(), "safetensors file %s: __metadata__ key '%s' is %s, expected "
                  "a string", path.c_str(), printable(it.key()).c_str(), it->type_name());
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

// Closes and removes tmp, then throws a WriteError naming path and the failed step.
[[noreturn]] void fail_write(std::FILE* f, const std::string& tmp, const std::string& path,
                             const std::string& what, int err) {
  if (f) std::fclose(f);
  std::remove(tmp.c_str());
  throw WriteError(format_string("cannot write safetensors file %s (%s): %s", path.c_str(),
                                 printable(what).c_str(), std::strerror(err)),
                   write_error_hint(err), err);
}

}  // namespace

// --- SafetensorsFile

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  mapping_ = MappedFile::open(path, "safetensors file");
  const char* p = path.c_str();
  const int64_t size = mapping_->size();
  SMEZO_REQUIRE(size >= 8, "safetensors file %s is %lld bytes, shorter than the 8-byte header "
                "length; the file is truncated or not safetensors", p,
                static_cast<long long>(size));
  const uint8_t* base = mapping_->data();
  uint64_t header_len = read_u64_le(base);
  SMEZO_REQUIRE(header_len <= kMaxHeaderBytes, "safetensors file %s: header length %llu is above "
                "the format's limit of %lld bytes; the file is corrupt or not safetensors", p,
                static_cast<unsigned long long>(header_len),
                static_cast<long long>(kMaxHeaderBytes));
  SMEZO_REQUIRE(header_len <= static_cast<uint64_t>(size - 8), "safetensors file %s: header "
                "length %llu runs past the end of the file (%lld bytes); the file is truncated "
                "or not safetensors", p, static_cast<unsigned long long>(header_len),
                static_cast<long long>(size));

  const char* hbegin = reinterpret_cast<const char*>(base + 8);
  const char* hend = hbegin + header_len;
  while (hend > hbegin && hend[-1] == ' ') hend--;
  SMEZO_REQUIRE(hend > hbegin && hbegin[0] == '{' && hend[-1] == '}', "safetensors file %s: "
                "the %llu-byte header is not one JSON object padded with spaces (it must start "
                "with '{' and end with '}' then spaces only); the file is corrupt or its header "
                "length is wrong", p, static_cast<unsigned long long>(header_len));
  json header = json_parse_strict(hbegin, hend, "safetensors file " + path + ": header");
  SMEZO_REQUIRE(header.is_object(), "safetensors file %s: header is a JSON %s, expected an "
                "object", p, header.type_name());

  const int64_t data_offset = 8 + static_cast<int64_t>(header_len);
  const uint8_t* data_region = base + data_offset;
  const int64_t data_size = size - data_offset;
  std::vector<Entry> entries;
  entries.reserve(header.size());
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      metadata_ = parse_metadata(path, *it);
      continue;
    }
    entries.push_back(parse_tensor_entry(path, it.key(), *it));
  }
  std::vector<Entry*> order;
  for (Entry& e : entries) order.push_back(&e);
  check_tiling(path, order, data_size, header_len);
  for (Entry& e : entries) {
    e.view.data = data_region + e.begin;
    e.view.mapping = mapping_.get();
    e.view.nbytes = e.end - e.begin;
    tensors_.emplace(e.view.name, std::move(e.view));
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

namespace {

// The checked write plan: every tensor's place in the file, and the padded header text.
struct WritePlan {
  std::vector<size_t> order;  // indices into the specs, in file order
  std::string header;         // JSON, space-padded so the data region starts at a multiple of 8
  int64_t data_bytes = 0;
};

WritePlan plan_write(const std::string& path, const std::vector<SafetensorsSpec>& tensors,
                     const std::map<std::string, std::string>& metadata) {
  const char* p = path.c_str();
  std::set<std::string> names;
  for (const SafetensorsSpec& t : tensors) {
    SMEZO_REQUIRE(!t.name.empty(), "write_safetensors %s: a tensor has an empty name", p);
    SMEZO_REQUIRE(t.name != "__metadata__", "write_safetensors %s: '__metadata__' is reserved "
                  "and cannot name a tensor", p);
    SMEZO_REQUIRE(names.insert(t.name).second, "write_safetensors %s: tensor '%s' is given "
                  "twice", p, t.name.c_str());
    for (int64_t d : t.shape)
      SMEZO_REQUIRE(d >= 0, "write_safetensors %s: tensor '%s' has negative dimension %lld", p,
                    t.name.c_str(), static_cast<long long>(d));
  }
  // Largest element size first, then by name: every tensor starts aligned to its element.
  WritePlan plan;
  for (size_t i = 0; i < tensors.size(); i++) plan.order.push_back(i);
  std::sort(plan.order.begin(), plan.order.end(), [&](size_t ia, size_t ib) {
    const SafetensorsSpec &a = tensors[ia], &b = tensors[ib];
    if (dtype_size(a.dtype) != dtype_size(b.dtype)) return dtype_size(a.dtype) > dtype_size(b.dtype);
    return a.name < b.name;
  });
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  for (size_t i : plan.order) {
    const SafetensorsSpec& t = tensors[i];
    const int64_t nbytes = shape_numel(t.shape) * dtype_size(t.dtype);
    header[t.name] = {{"dtype", dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {plan.data_bytes, plan.data_bytes + nbytes}}};
    plan.data_bytes += nbytes;
  }
  try {
    plan.header = header.dump();
  } catch (const json::exception& e) {
    throw_error("write_safetensors %s: a tensor name or metadata string is not valid UTF-8 (%s)",
                p, e.what());
  }
  while ((8 + plan.header.size()) % 8 != 0) plan.header.push_back(' ');
  return plan;
}

}  // namespace

int64_t safetensors_file_bytes(const std::vector<SafetensorsSpec>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  const WritePlan plan = plan_write("(size estimate)", tensors, metadata);
  return 8 + static_cast<int64_t>(plan.header.size()) + plan.data_bytes;
}

void write_safetensors_streamed(const std::string& path, const std::vector<SafetensorsSpec>& tensors,
                                const std::map<std::string, std::string>& metadata,
                                const SafetensorsFill& fill) {
  const WritePlan plan = plan_write(path, tensors, metadata);
  char len_bytes[8];
  put_u64_le(plan.header.size(), len_bytes);
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) fail_write(nullptr, tmp, path, "creating it", errno);
  if (std::fwrite(len_bytes, 1, 8, f) != 8 ||
      std::fwrite(plan.header.data(), 1, plan.header.size(), f) != plan.header.size())
    fail_write(f, tmp, path, "writing the header", errno);
  std::vector<char> bytes;
  for (size_t i : plan.order) {
    const SafetensorsSpec& t = tensors[i];
    const size_t nbytes = static_cast<size_t>(shape_numel(t.shape) * dtype_size(t.dtype));
    bytes.resize(nbytes);
    try {
      fill(i, bytes.data());
    } catch (...) {  // the producer refused (a non-finite weight, ...): no half file stays
      std::fclose(f);
      std::remove(tmp.c_str());
      throw;
    }
    if (nbytes > 0 && std::fwrite(bytes.data(), 1, nbytes, f) != nbytes)
      fail_write(f, tmp, path, "writing tensor '" + t.name + "'", errno);
  }
  if (std::fflush(f) != 0) fail_write(f, tmp, path, "flushing", errno);
  if (fsync(fileno(f)) != 0) fail_write(f, tmp, path, "fsync", errno);
  if (std::fclose(f) != 0) fail_write(nullptr, tmp, path, "closing", errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw_write_error(("rename " + tmp + " to").c_str(), path, err);
  }
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsSpec> specs;
  for (const SafetensorsEntry& t : tensors) {
    SMEZO_REQUIRE(t.data != nullptr || shape_numel(t.shape) == 0,
                  "write_safetensors %s: tensor '%s' has no data", path.c_str(), t.name.c_str());
    specs.push_back({t.name, t.dtype, t.shape});
  }
  write_safetensors_streamed(path, specs, metadata, [&](size_t i, char* out) {
    const size_t nbytes = static_cast<size_t>(shape_numel(specs[i].shape) * dtype_size(specs[i].dtype));
    if (nbytes > 0) std::memcpy(out, tensors[i].data, nbytes);
  });
}

}  // namespace smezo
