// safetensors reader/writer: bit-exact round trips for F32/F16/BF16, metadata, the writer's
// layout (8-byte aligned data, no leftover .tmp), and one test per corruption the reader must
// reject with a message naming the file and the tensor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/half.h"
#include "common/mapped_file.h"
#include "formats/safetensors.h"
#include "test_util.h"

using smezo::DType;
using smezo::SafetensorsEntry;
using smezo::SafetensorsFile;
using testing::HasSubstr;

using smezo_test::error_of;

namespace {


// A safetensors file assembled by hand: 8-byte length, header text, data bytes.
std::string raw_safetensors(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; i++) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::vector<uint16_t> to_halves(const std::vector<float>& v, DType dtype) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); i++)
    out[i] = dtype == smezo::DTYPE_F16 ? smezo::float_to_f16(v[i]) : smezo::float_to_bf16(v[i]);
  return out;
}

// Writes a hand-made file with one tensor entry `entry` (a JSON object text) and `data_bytes`
// of data, and returns the reader's error message.
std::string corrupt_error(const std::string& tag, const std::string& entry, int data_bytes,
                          std::string* path_out) {
  std::string path = smezo_test::make_temp_dir(tag) + "/bad.safetensors";
  *path_out = path;
  smezo_test::write_file(path, raw_safetensors("{\"layer.w\":" + entry + "}",
                                               std::string(static_cast<size_t>(data_bytes), 'x')));
  return error_of([&] { SafetensorsFile f(path); });
}

}  // namespace

TEST(Safetensors, RoundTripF32F16BF16BitExact) {
  std::string path = smezo_test::make_temp_dir("st_roundtrip") + "/t.safetensors";
  std::vector<float> a = smezo_test::random_floats(3 * 5, 1);
  std::vector<uint16_t> b = to_halves(smezo_test::random_floats(4 * 7, 2, -8.0f, 8.0f),
                                      smezo::DTYPE_F16);
  std::vector<uint16_t> c = to_halves(smezo_test::random_floats(2 * 3 * 3, 3), smezo::DTYPE_BF16);
  std::vector<float> scalar = {3.25f};
  std::vector<SafetensorsEntry> entries = {
      {"half.b", smezo::DTYPE_F16, {4, 7}, b.data()},   // odd byte count before the F32s
      {"f32.a", smezo::DTYPE_F32, {3, 5}, a.data()},
      {"bf16.c", smezo::DTYPE_BF16, {2, 3, 3}, c.data()},
      {"scalar", smezo::DTYPE_F32, {}, scalar.data()},
      {"empty", smezo::DTYPE_F16, {0, 3}, nullptr},
  };
  smezo::write_safetensors(path, entries, {});

  SafetensorsFile f(path);
  ASSERT_EQ(f.tensors().size(), entries.size());
  EXPECT_TRUE(f.metadata().empty());
  for (const SafetensorsEntry& e : entries) {
    SCOPED_TRACE(e.name);
    ASSERT_TRUE(f.has(e.name));
    const smezo::HostTensorView& v = f.tensor(e.name);
    EXPECT_EQ(v.name, e.name);
    EXPECT_EQ(v.dtype, e.dtype);
    EXPECT_EQ(v.shape, e.shape);
    EXPECT_EQ(v.file, path);
    int64_t nbytes = v.numel() * smezo::dtype_size(v.dtype);
    if (nbytes > 0) {
      EXPECT_EQ(std::memcmp(v.data, e.data, static_cast<size_t>(nbytes)), 0);
    }
    // the writer's layout keeps every tensor aligned to its element size
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data) % smezo::dtype_size(v.dtype), 0u);
  }
  std::vector<float> back(a.size());
  smezo::convert_to_f32(f.tensor("f32.a").data, smezo::DTYPE_F32, 15, back.data());
  EXPECT_EQ(back, a);
  EXPECT_THAT(error_of([&] { f.tensor("nope"); }), HasSubstr("'nope'"));
}

TEST(Safetensors, MetadataRoundTrip) {
  std::string path = smezo_test::make_temp_dir("st_meta") + "/m.safetensors";
  std::vector<float> w = smezo_test::random_floats(4, 7);
  std::map<std::string, std::string> meta = {{"format", "pt"}, {"step", "1200"}, {"note", "a b\"c"}};
  smezo::write_safetensors(path, {{"w", smezo::DTYPE_F32, {4}, w.data()}}, meta);
  SafetensorsFile f(path);
  EXPECT_EQ(f.metadata(), meta);
}

TEST(Safetensors, WriterLayoutMatchesFormat) {
  std::string dir = smezo_test::make_temp_dir("st_layout");
  std::string path = dir + "/l.safetensors";
  std::vector<uint16_t> h(3, 0x3c00);
  std::vector<float> w = smezo_test::random_floats(6, 8);
  smezo::write_safetensors(path, {{"h", smezo::DTYPE_BF16, {3}, h.data()},
                                  {"w", smezo::DTYPE_F32, {2, 3}, w.data()}},
                           {{"format", "pt"}});
  std::string bytes = smezo_test::read_file(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  EXPECT_EQ((8 + n) % 8, 0u);
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(header["__metadata__"]["format"], "pt");
  EXPECT_EQ(header["w"]["dtype"], "F32");
  EXPECT_EQ(header["w"]["shape"], nlohmann::json({2, 3}));
  EXPECT_EQ(header["w"]["data_offsets"], nlohmann::json({0, 24}));  // largest dtype first
  EXPECT_EQ(header["h"]["data_offsets"], nlohmann::json({24, 30}));
  EXPECT_EQ(bytes.size(), 8 + n + 30);  // tensors tile the data region exactly
  EXPECT_FALSE(std::ifstream(path + ".tmp").good());

  // overwriting an existing file replaces it
  smezo::write_safetensors(path, {{"w", smezo::DTYPE_F32, {6}, w.data()}}, {});
  SafetensorsFile f(path);
  EXPECT_EQ(f.tensors().size(), 1u);
  EXPECT_EQ(f.tensor("w").shape, std::vector<int64_t>{6});
}

TEST(Safetensors, WriterRejectsBadEntries) {
  std::string path = smezo_test::make_temp_dir("st_badwrite") + "/x.safetensors";
  float v = 1.0f;
  std::string msg = error_of([&] {
    smezo::write_safetensors(path, {{"a", smezo::DTYPE_F32, {1}, &v},
                                    {"a", smezo::DTYPE_F32, {1}, &v}}, {});
  });
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("'a'"));
  msg = error_of([&] { smezo::write_safetensors(path, {{"neg", smezo::DTYPE_F32, {-1}, &v}}, {}); });
  EXPECT_THAT(msg, HasSubstr("'neg'"));
  msg = error_of([&] {
    smezo::write_safetensors("/nonexistent_dir_smezo/x.safetensors",
                             {{"a", smezo::DTYPE_F32, {1}, &v}}, {});
  });
  EXPECT_THAT(msg, HasSubstr("cannot write safetensors file /nonexistent_dir_smezo/x.safetensors (creating it): No such "
                             "file or directory"));
}

// Names the format cannot hold: an empty name, and "__metadata__" (the header's own key).
TEST(Safetensors, WriterRejectsEmptyAndReservedNames) {
  std::string path = smezo_test::make_temp_dir("st_badname") + "/x.safetensors";
  float v = 1.0f;
  std::string msg = error_of([&] { smezo::write_safetensors(path, {{"", smezo::DTYPE_F32, {1}, &v}}, {}); });
  EXPECT_THAT(msg, HasSubstr("write_safetensors " + path + ": a tensor has an empty name"));
  msg = error_of([&] {
    smezo::write_safetensors(path, {{"__metadata__", smezo::DTYPE_F32, {1}, &v}}, {});
  });
  EXPECT_THAT(msg, HasSubstr("'__metadata__' is reserved and cannot name a tensor"));
  EXPECT_THAT(msg, HasSubstr(path));
}

// A write that fails (the file-size limit standing in for a full disk), while writing a large
// tensor and, for a small file held in stdio's buffer, at the flush: a one-line error naming
// the file, the step and the limit, no temporary file left, the previous file intact.
TEST(Safetensors, FailedWriteIsNamedAndLeavesTheOldFile) {
  const std::string dir = smezo_test::make_temp_dir("st_fsize");
  const std::string path = dir + "/x.safetensors";
  float v = 1.0f;
  smezo::write_safetensors(path, {{"old", smezo::DTYPE_F32, {1}, &v}}, {});
  const std::string old_bytes = smezo_test::read_file(path);
  std::vector<float> big(16384, 2.0f), small(16, 3.0f);
  std::string msg = smezo_test::error_under_file_size_limit(4096, [&] {
    smezo::write_safetensors(path, {{"w", smezo::DTYPE_F32, {16384}, big.data()}}, {});
  });
  EXPECT_THAT(msg, HasSubstr("cannot write safetensors file " + path + " (writing tensor 'w'): File too large"));
  EXPECT_THAT(msg, HasSubstr("---> HINT: a file-size limit stops the file growing (see 'ulimit -f')"));
  EXPECT_TRUE(smezo_test::is_one_line(msg));
  EXPECT_EQ(smezo_test::read_file(path), old_bytes);
  EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0);
  msg = smezo_test::error_under_file_size_limit(16, [&] {
    smezo::write_safetensors(path, {{"w", smezo::DTYPE_F32, {16}, small.data()}}, {});
  });
  EXPECT_THAT(msg, HasSubstr("cannot write safetensors file " + path + " (flushing): File too large"));
  EXPECT_EQ(smezo_test::read_file(path), old_bytes);
  EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0);
}

TEST(Safetensors, MissingFile) {
  std::string path = smezo_test::make_temp_dir("st_missing") + "/absent.safetensors";
  std::string msg = error_of([&] { SafetensorsFile f(path); });
  EXPECT_THAT(msg, HasSubstr("cannot open safetensors file " + path));
  EXPECT_THAT(msg, HasSubstr("No such file"));
}

TEST(Safetensors, MappedFileIsMovableAndMapsBytes) {
  std::string path = smezo_test::make_temp_dir("st_map") + "/f.bin";
  smezo_test::write_file(path, "hello");
  auto m = smezo::MappedFile::open(path);
  EXPECT_EQ(m->size(), 5);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m->data()), 5), "hello");
  smezo::MappedFile moved = std::move(*m);
  EXPECT_EQ(moved.size(), 5);
  EXPECT_EQ(moved.path(), path);
  EXPECT_EQ(m->data(), nullptr);
  EXPECT_THAT(error_of([&] { smezo::MappedFile::open(smezo_test::make_temp_dir("st_dir")); }),
              HasSubstr("directory"));
}

TEST(Safetensors, RejectsFileShorterThan8Bytes) {
  std::string path = smezo_test::make_temp_dir("st_short") + "/s.safetensors";
  smezo_test::write_file(path, "abc");
  std::string msg = error_of([&] { SafetensorsFile f(path); });
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("8-byte"));
}

TEST(Safetensors, RejectsHeaderLengthPastEnd) {
  std::string path = smezo_test::make_temp_dir("st_hlen") + "/h.safetensors";
  std::string bytes = raw_safetensors("{}", "");
  bytes[0] = 100;  // claims a 100-byte header, the file has 2
  smezo_test::write_file(path, bytes);
  std::string msg = error_of([&] { SafetensorsFile f(path); });
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("header length 100"));
}

TEST(Safetensors, RejectsMalformedJson) {
  std::string path = smezo_test::make_temp_dir("st_json") + "/j.safetensors";
  smezo_test::write_file(path, raw_safetensors("{\"w\": {\"dtype\": \"F32\",}}", ""));
  std::string msg = error_of([&] { SafetensorsFile f(path); });
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("not valid JSON"));
}

TEST(Safetensors, RejectsMissingFields) {
  std::string path;
  std::string msg = corrupt_error("st_nodtype", R"({"shape":[1],"data_offsets":[0,4]})", 4, &path);
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("'layer.w'"));
  EXPECT_THAT(msg, HasSubstr("dtype"));
  msg = corrupt_error("st_noshape", R"({"dtype":"F32","data_offsets":[0,4]})", 4, &path);
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("'layer.w'"));
  EXPECT_THAT(msg, HasSubstr("shape"));
  msg = corrupt_error("st_nooff", R"({"dtype":"F32","shape":[1]})", 4, &path);
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("'layer.w'"));
  EXPECT_THAT(msg, HasSubstr("data_offsets"));
}

TEST(Safetensors, RejectsOffsetsPastEndOfFile) {
  std::string path;
  std::string msg = corrupt_error("st_eof", R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})",
                                  12, &path);
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("'layer.w'"));
  EXPECT_THAT(msg, HasSubstr("past the end"));
}

TEST(Safetensors, RejectsBeginAfterEnd) {
  std::string path;
  std::string msg = corrupt_error("st_order", R"({"dtype":"F32","shape":[1],"data_offsets":[8,4]})",
                                  8, &path);
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("'layer.w'"));
  EXPECT_THAT(msg, HasSubstr("after end"));
}

TEST(Safetensors, RejectsSizeMismatch) {
  std::string path;
  std::string msg = corrupt_error("st_size", R"({"dtype":"BF16","shape":[2,3],"data_offsets":[0,8]})",
                                  8, &path);
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("'layer.w'"));
  EXPECT_THAT(msg, HasSubstr("needs 12"));
}

TEST(Safetensors, RejectsNegativeDimension) {
  std::string path;
  std::string msg = corrupt_error("st_negdim", R"({"dtype":"F32","shape":[-1,4],"data_offsets":[0,0]})",
                                  0, &path);
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("'layer.w'"));
  EXPECT_THAT(msg, HasSubstr("non-negative"));
}

TEST(Safetensors, RejectsUnsupportedDtype) {
  for (const char* dtype : {"I32", "F64", "U8"}) {
    std::string path;
    std::string msg = corrupt_error(
        "st_dtype", std::string(R"({"dtype":")") + dtype + R"(","shape":[1],"data_offsets":[0,4]})",
        4, &path);
    EXPECT_THAT(msg, HasSubstr(path));
    EXPECT_THAT(msg, HasSubstr("tensor 'layer.w' has dtype " + std::string(dtype)));
    EXPECT_THAT(msg, HasSubstr("F32, F16 and BF16"));
  }
}

TEST(Safetensors, RejectsNonStringMetadata) {
  std::string path = smezo_test::make_temp_dir("st_badmeta") + "/m.safetensors";
  smezo_test::write_file(path, raw_safetensors(R"({"__metadata__":{"step":3}})", ""));
  std::string msg = error_of([&] { SafetensorsFile f(path); });
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("'step'"));
}

// --- strictness: what the format's reference implementation refuses, refused here too

namespace {

// A two-tensor header (a: F32 [2], b: F32 [2]) with the given offsets, padded with `pad`.
std::string two_tensor_header(const std::string& a_off, const std::string& b_off,
                              const std::string& pad = "") {
  return "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":" + a_off +
         "},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":" + b_off + "}}" + pad;
}

std::string open_error(const std::string& tag, const std::string& bytes, std::string* path) {
  *path = smezo_test::make_temp_dir(tag) + "/x.safetensors";
  smezo_test::write_file(*path, bytes);
  return error_of([&] { SafetensorsFile f(*path); });
}

}  // namespace

// A header length 1..4 bytes short still parsed (the JSON ends inside the padding) and shifted
// every tensor's data by that much: 148 mutants loaded garbage with exit 0.
TEST(Safetensors, RejectsHeaderLengthAFewBytesShort) {
  const std::string header = two_tensor_header("[0,8]", "[8,16]", "    ");
  const std::string data = "0123456789abcdef";
  std::string ok_path = smezo_test::make_temp_dir("st_hshort") + "/ok.safetensors";
  smezo_test::write_file(ok_path, raw_safetensors(header, data));
  SafetensorsFile ok(ok_path);
  EXPECT_EQ(std::memcmp(ok.tensor("b").data, "89abcdef", 8), 0);
  for (int short_by = 1; short_by <= 4; short_by++) {
    std::string bytes = raw_safetensors(header, data);
    bytes[0] = static_cast<char>(header.size() - short_by);
    std::string path;
    std::string msg = open_error("st_hshort", bytes, &path);
    EXPECT_THAT(msg, HasSubstr(path)) << short_by;
    EXPECT_THAT(msg, HasSubstr(std::to_string(short_by) + " bytes after the last tensor"));
    EXPECT_THAT(msg, HasSubstr("header length (" + std::to_string(header.size() - short_by) +
                               ") is wrong"));
  }
}

TEST(Safetensors, RejectsOffsetsThatDoNotTileTheData) {
  struct Case {
    const char* tag;
    std::string a, b;
    int data_bytes;
    const char* expect;
  } cases[] = {
      {"overlap", "[0,8]", "[4,12]", 12, "tensor 'b': data_offsets [4, 12] overlap tensor 'a' "
                                         "(which ends at 8)"},
      {"alias", "[0,8]", "[0,8]", 8, "tensor 'b': data_offsets [0, 8] overlap tensor 'a'"},
      {"hole", "[0,8]", "[12,20]", 20, "tensor 'b': data_offsets [12, 20] leave a gap of 4 bytes "
                                       "after tensor 'a'"},
      {"start", "[4,12]", "[12,20]", 20, "tensor 'a': data_offsets [4, 12], but the first tensor "
                                         "must begin at offset 0"},
      {"trailing", "[0,8]", "[8,16]", 19, "3 bytes after the last tensor"},
      {"past_end", "[0,8]", "[8,16]", 12, "tensor 'b': data_offsets end 16 is past the end"},
  };
  for (const Case& c : cases) {
    std::string path;
    std::string msg = open_error(std::string("st_tile_") + c.tag,
                                 raw_safetensors(two_tensor_header(c.a, c.b),
                                                 std::string(static_cast<size_t>(c.data_bytes), 'x')),
                                 &path);
    EXPECT_THAT(msg, HasSubstr(path)) << c.tag;
    EXPECT_THAT(msg, HasSubstr(c.expect)) << c.tag;
  }
  // out of order in the header but tiling the data: fine (the reference sorts by offset);
  // zero-byte tensors may share an offset
  std::string path = smezo_test::make_temp_dir("st_tile_ok") + "/ok.safetensors";
  smezo_test::write_file(path, raw_safetensors(
      "{\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
      "\"e1\":{\"dtype\":\"F16\",\"shape\":[0],\"data_offsets\":[8,8]},"
      "\"e2\":{\"dtype\":\"BF16\",\"shape\":[3,0],\"data_offsets\":[8,8]},"
      "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", std::string(16, 'y')));
  SafetensorsFile f(path);
  EXPECT_EQ(f.tensors().size(), 4u);
}

TEST(Safetensors, HeaderIsOneObjectPaddedWithSpacesOnly) {
  const std::string data(16, 'z');
  for (const std::string& p : {std::string("\n"), std::string("\t"), std::string(1, '\0'),
                               std::string("x"), std::string(" \n ")}) {
    std::string path;
    std::string msg = open_error("st_pad", raw_safetensors(two_tensor_header("[0,8]", "[8,16]", p), data),
                                 &path);
    EXPECT_THAT(msg, HasSubstr("not one JSON object padded with spaces")) << smezo::printable(p);
  }
  std::string path;
  EXPECT_THAT(open_error("st_lead", raw_safetensors(" " + two_tensor_header("[0,8]", "[8,16]"), data), &path),
              HasSubstr("must start with '{'"));
  EXPECT_THAT(open_error("st_array", raw_safetensors("[]", ""), &path), HasSubstr("must start with '{'"));
  EXPECT_THAT(open_error("st_twoobj", raw_safetensors("{}{}", ""), &path), HasSubstr("not valid JSON"));
}

TEST(Safetensors, RejectsDuplicateNamesAndDeepNesting) {
  std::string path;
  std::string msg = open_error(
      "st_dup", raw_safetensors("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                                "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                                std::string(8, 'd')), &path);
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("key \"a\" appears twice"));
  msg = open_error("st_dupmeta", raw_safetensors(R"({"__metadata__":{"k":"1"},"__metadata__":{"k":"2"}})", ""),
                   &path);
  EXPECT_THAT(msg, HasSubstr("\"__metadata__\" appears twice"));
  msg = open_error("st_dupkey", raw_safetensors(R"({"__metadata__":{"k":"1","k":"2"}})", ""), &path);
  EXPECT_THAT(msg, HasSubstr("\"k\" appears twice"));
  std::string deep = "{\"__metadata__\":" + std::string(100, '[') + std::string(100, ']') + "}";
  msg = open_error("st_deep", raw_safetensors(deep, ""), &path);
  EXPECT_THAT(msg, HasSubstr("nested deeper than 64 levels"));
}

TEST(Safetensors, RejectsHugeHeaderLengthAndShapes) {
  std::string bytes = raw_safetensors("{}", "");
  const uint64_t huge = 100000001;
  for (int i = 0; i < 8; i++) bytes[i] = static_cast<char>((huge >> (8 * i)) & 0xff);
  std::string path;
  EXPECT_THAT(open_error("st_bighdr", bytes, &path), HasSubstr("above the format's limit"));
  std::string msg;
  msg = corrupt_error("st_overflow",
                      R"({"dtype":"F32","shape":[4611686018427387904,8],"data_offsets":[0,0]})", 0, &path);
  EXPECT_THAT(msg, HasSubstr("'layer.w': shape [4611686018427387904,8] is too large"));
  msg = corrupt_error("st_overflow2", R"({"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]})",
                      0, &path);
  EXPECT_THAT(msg, HasSubstr("too large"));
  msg = corrupt_error("st_float_dim", R"({"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})", 8, &path);
  EXPECT_THAT(msg, HasSubstr("not a non-negative integer"));
  msg = corrupt_error("st_three_off", R"({"dtype":"F32","shape":[2],"data_offsets":[0,8,8]})", 8, &path);
  EXPECT_THAT(msg, HasSubstr("expected [begin, end]"));
}

TEST(Safetensors, MetadataIsStringToStringOnly) {
  std::string path;
  EXPECT_THAT(open_error("st_meta_obj", raw_safetensors(R"({"__metadata__":{"a":{"b":"c"}}})", ""), &path),
              HasSubstr("__metadata__ key 'a' is object, expected a string"));
  EXPECT_THAT(open_error("st_meta_arr", raw_safetensors(R"({"__metadata__":["x"]})", ""), &path),
              HasSubstr("__metadata__ is array"));
  // null metadata is the same as none (the reference reads it as absent)
  std::string ok = smezo_test::make_temp_dir("st_meta_null") + "/n.safetensors";
  smezo_test::write_file(ok, raw_safetensors(R"({"__metadata__":null})", ""));
  EXPECT_TRUE(SafetensorsFile(ok).metadata().empty());
}

// Bytes from the file reach messages escaped: no raw control characters on the terminal.
TEST(Safetensors, FileBytesInMessagesAreEscaped) {
  std::string path;
  std::string msg = open_error(
      "st_esc", raw_safetensors("{\"\\u001b[2Jevil\\n\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}",
                                std::string(8, 'e')), &path);
  EXPECT_THAT(msg, HasSubstr("tensor '\\x1b[2Jevil\\n' has dtype F64"));
  for (char c : msg) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << smezo::printable(msg);
  msg = open_error("st_esc_json", raw_safetensors("{\"a\x1b\x07\":1 }", ""), &path);
  EXPECT_THAT(msg, HasSubstr("not valid JSON"));
  for (char c : msg) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << smezo::printable(msg);
}
