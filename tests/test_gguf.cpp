// GGUF container reader: every metadata value type, the typed accessors, the tensor table
// and alignment, and one clear smezo::Error for each kind of malformed file (built by the
// tests' GGUF writer, tests/test_gguf_writer.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "common/check.h"
#include "formats/gguf.h"
#include "test_gguf_writer.h"
#include "test_util.h"

using smezo::GgufFile;
using smezo_test::GgufBuilder;
using smezo_test::GgufTestTensor;
using testing::AllOf;
using testing::HasSubstr;

namespace {

std::string write_gguf(const std::string& bytes, const std::string& tag = "gguf") {
  std::string path = smezo_test::make_temp_dir(tag) + "/model.gguf";
  smezo_test::write_file(path, bytes);
  return path;
}

std::string open_error(const std::string& bytes) {
  std::string path = write_gguf(bytes, "gguf_bad");
  std::string msg = smezo_test::error_of([&] { GgufFile::open(path); });
  EXPECT_THAT(msg, HasSubstr(path)) << "the message must name the file";
  EXPECT_TRUE(smezo_test::is_one_line(msg));
  return msg;
}

// A small well-formed file with a bit of everything; used as the base for corruptions.
GgufBuilder sample_builder() {
  GgufBuilder b;
  b.add_string("general.architecture", "llama");
  b.add_u32("llama.block_count", 2);
  b.add_string_array("tokenizer.ggml.tokens", {"<unk>", "a", "bc"});
  GgufTestTensor q8;
  q8.name = "blk.0.q8";
  q8.type = smezo::GGUF_TYPE_Q8_0;
  q8.dims = {32, 2};
  q8.bytes = std::string(2 * 34, '\x11');
  b.add_tensor(q8);
  b.add_f32_tensor("norm", {3}, {1.5f, -2.0f, 0.25f});
  return b;
}

}  // namespace

TEST(Gguf, ReadsEveryMetadataValueType) {
  using namespace smezo_test;
  GgufBuilder b;
  b.version = 2;  // version 2 has the same layout as 3
  b.add_raw("t.u8", 0, gguf_u8(200));
  b.add_raw("t.i8", 1, gguf_u8(0xfb));  // -5
  b.add_raw("t.u16", 2, std::string("\x34\x12", 2));
  b.add_raw("t.i16", 3, std::string("\xfe\xff", 2));  // -2
  b.add_u32("t.u32", 4000000000u);
  b.add_i32("t.i32", -123456);
  b.add_f32("t.f32", 0.375f);
  b.add_bool("t.bool", true);
  b.add_string("t.string", "héllo");
  b.add_u64("t.u64", 1ull << 40);
  b.add_raw("t.i64", 11, gguf_u64(static_cast<uint64_t>(-7ll)));
  double d = -2.5e-3;
  std::string d_bytes(8, '\0');
  std::memcpy(&d_bytes[0], &d, 8);
  b.add_raw("t.f64", 12, d_bytes);
  b.add_string_array("t.strings", {"", "ab", "Ġthe"});
  b.add_i32_array("t.ints", {-1, 0, 7});
  b.add_f32_array("t.floats", {0.5f, -1.25f});
  b.add_raw("t.u8s", 9, gguf_u32(0) + gguf_u64(3) + std::string("\x01\x02\xff", 3));
  b.add_raw("t.bools", 9, gguf_u32(7) + gguf_u64(2) + std::string("\x00\x01", 2));
  // an array of two arrays of u32
  b.add_raw("t.nested", 9,
            gguf_u32(9) + gguf_u64(2) + gguf_u32(4) + gguf_u64(1) + gguf_u32(5) + gguf_u32(4) +
                gguf_u64(2) + gguf_u32(6) + gguf_u32(7));
  std::string path = write_gguf(b.build());
  auto f = GgufFile::open(path);
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->metadata().size(), 18u);
  EXPECT_EQ(f->metadata()[0].key, "t.u8");  // file order
  EXPECT_EQ(f->get_u32("t.u8"), 200u);
  EXPECT_EQ(f->get_i64("t.i8"), -5);
  EXPECT_EQ(f->get_u32("t.u16"), 0x1234u);
  EXPECT_EQ(f->get_i64("t.i16"), -2);
  EXPECT_EQ(f->get_u32("t.u32"), 4000000000u);
  EXPECT_EQ(f->get_i64("t.i32"), -123456);
  EXPECT_EQ(f->get_f32("t.f32"), 0.375f);
  EXPECT_TRUE(f->get_bool("t.bool"));
  EXPECT_EQ(f->get_string("t.string"), "héllo");
  EXPECT_EQ(f->get_i64("t.u64"), 1ll << 40);
  EXPECT_EQ(f->get_i64("t.i64"), -7);
  EXPECT_FLOAT_EQ(f->get_f32("t.f64"), -2.5e-3f);
  EXPECT_EQ(f->get_string_array("t.strings"), (std::vector<std::string>{"", "ab", "Ġthe"}));
  EXPECT_EQ(f->get_i64_array("t.ints"), (std::vector<int64_t>{-1, 0, 7}));
  EXPECT_EQ(f->get_i64_array("t.u8s"), (std::vector<int64_t>{1, 2, 255}));
  EXPECT_EQ(f->get_f32_array("t.floats"), (std::vector<float>{0.5f, -1.25f}));
  const smezo::GgufValue* bools = f->find("t.bools");
  ASSERT_TRUE(bools);
  EXPECT_EQ(bools->elem_type, smezo::GGUF_VALUE_BOOL);
  EXPECT_EQ(bools->count, 2u);
  const smezo::GgufValue* nested = f->find("t.nested");
  ASSERT_TRUE(nested);
  ASSERT_EQ(nested->items.size(), 2u);
  EXPECT_EQ(nested->items[1].count, 2u);
  uint32_t last;
  std::memcpy(&last, nested->items[1].raw + 4, 4);
  EXPECT_EQ(last, 7u);
  EXPECT_FALSE(f->has("t.absent"));
  EXPECT_EQ(f->find("t.absent"), nullptr);
  EXPECT_TRUE(f->tensors().empty());
}

TEST(Gguf, TypedAccessorsRefuseMissingKeysAndWrongTypes) {
  GgufBuilder b = sample_builder();
  b.add_i32("t.negative", -1);
  b.add_f32("t.float", 2.0f);
  std::string path = write_gguf(b.build());
  auto f = GgufFile::open(path);
  EXPECT_THAT(smezo_test::error_of([&] { f->get_u32("llama.absent"); }),
              HasSubstr("GGUF metadata key 'llama.absent' is missing"));
  EXPECT_THAT(smezo_test::error_of([&] { f->get_u32("general.architecture"); }),
              HasSubstr("'general.architecture' is string, expected an unsigned integer"));
  EXPECT_THAT(smezo_test::error_of([&] { f->get_string("llama.block_count"); }),
              HasSubstr("'llama.block_count' is u32, expected a string"));
  EXPECT_THAT(smezo_test::error_of([&] { f->get_i64_array("tokenizer.ggml.tokens"); }),
              HasSubstr("is array of string, expected an array of integers"));
  EXPECT_THAT(smezo_test::error_of([&] { f->get_u32("t.negative"); }),
              HasSubstr("'t.negative' = -1 is out of range for a u32"));
  EXPECT_THAT(smezo_test::error_of([&] { f->get_f32("t.negative"); }), HasSubstr("expected a float"));
  EXPECT_THAT(smezo_test::error_of([&] { f->get_bool("t.float"); }), HasSubstr("expected a bool"));
  // fallbacks apply to absent keys only
  EXPECT_EQ(f->get_u32_or("llama.absent", 17), 17u);
  EXPECT_EQ(f->get_u32_or("llama.block_count", 17), 2u);
  EXPECT_EQ(f->get_string_or("absent", "x"), "x");
  EXPECT_EQ(f->get_f32_or("absent", 1.5f), 1.5f);
  EXPECT_TRUE(f->get_bool_or("absent", true));
  EXPECT_THROW_MSG(f->get_u32_or("general.architecture", 1),
                   "GGUF metadata key 'general.architecture' is string, expected an unsigned integer");
}

TEST(Gguf, TensorTableAndAlignment) {
  for (int64_t alignment : {32, 64, 8}) {
    GgufBuilder b = sample_builder();
    b.alignment = alignment;
    if (alignment != 32) b.add_u32("general.alignment", static_cast<uint32_t>(alignment));
    std::string path = write_gguf(b.build());
    auto f = GgufFile::open(path);
    EXPECT_EQ(f->alignment(), alignment);
    EXPECT_EQ(f->data_offset() % alignment, 0);
    ASSERT_EQ(f->tensors().size(), 2u);
    const smezo::GgufTensorInfo* q8 = f->find_tensor("blk.0.q8");
    ASSERT_TRUE(q8);
    EXPECT_EQ(q8->type, smezo::GGUF_TYPE_Q8_0);
    EXPECT_EQ(q8->dims, (std::vector<int64_t>{32, 2}));
    EXPECT_EQ(q8->row_major_shape(), (std::vector<int64_t>{2, 32}));
    EXPECT_EQ(q8->numel, 64);
    EXPECT_EQ(q8->nbytes, 68);
    EXPECT_EQ(q8->offset, f->data_offset());
    EXPECT_EQ(q8->data[0], 0x11);
    const smezo::GgufTensorInfo* norm = f->find_tensor("norm");
    ASSERT_TRUE(norm);
    EXPECT_EQ(norm->offset % alignment, 0);
    EXPECT_EQ(norm->offset, f->data_offset() + (68 + alignment - 1) / alignment * alignment);
    float v[3];
    std::memcpy(v, norm->data, sizeof v);
    EXPECT_EQ(v[0], 1.5f);
    EXPECT_EQ(v[2], 0.25f);
    EXPECT_EQ(f->find_tensor("absent"), nullptr);
  }
}

TEST(Gguf, EveryTruncationIsOneClearError) {
  const std::string good = sample_builder().build();
  // The last tensor's data is the file's tail, so every shorter prefix is malformed.
  const std::string path = smezo_test::make_temp_dir("gguf_trunc") + "/model.gguf";
  for (size_t n = 0; n < good.size(); n++) {
    smezo_test::write_file(path, good.substr(0, n));
    std::string msg = smezo_test::error_of([&] { GgufFile::open(path); });
    EXPECT_THAT(msg, HasSubstr(path)) << "prefix " << n;
  }
  smezo_test::write_file(path, good);
  EXPECT_NO_THROW(GgufFile::open(path));
}

TEST(Gguf, RefusesBadHeaders) {
  std::string good = sample_builder().build();
  std::string bad = good;
  bad[0] = 'X';
  EXPECT_THAT(open_error(bad), HasSubstr("not a GGUF file"));
  for (uint32_t v : {1u, 4u}) {
    GgufBuilder b = sample_builder();
    b.version = v;
    EXPECT_THAT(open_error(b.build()), HasSubstr("GGUF version " + std::to_string(v) + " is not supported"));
  }
  bad = good;
  std::memcpy(&bad[4], "\x00\x00\x00\x03", 4);
  EXPECT_THAT(open_error(bad), HasSubstr("big-endian"));
  GgufBuilder b = sample_builder();
  b.tensor_count_override = 1ll << 60;
  EXPECT_THAT(open_error(b.build()), HasSubstr("tensor count claims 1152921504606846976 entries"));
  b = sample_builder();
  b.kv_count_override = 1ll << 62;
  EXPECT_THAT(open_error(b.build()), HasSubstr("metadata key count claims"));
  b = sample_builder();
  b.kv_count_override = 4;  // one more than there are: the tensor table is read as a key
  EXPECT_THROW_MSG(GgufFile::open(write_gguf(b.build())),
                   "tensor #0 (name) is a string of 562949953421312 bytes at offset 201, which runs past the "
                   "end of the file (396 bytes); the GGUF is truncated or corrupt");
}

TEST(Gguf, RefusesBadMetadata) {
  using namespace smezo_test;
  GgufBuilder b;
  b.add_raw("t.s", 8, gguf_u64(1ull << 50) + "abc");
  EXPECT_THAT(open_error(b.build()), HasSubstr("metadata key 't.s' is a string of 1125899906842624 bytes"));
  b = GgufBuilder();
  b.add_raw("t.arr", 9, gguf_u32(8) + gguf_u64(1ull << 61));
  EXPECT_THAT(open_error(b.build()), HasSubstr("metadata key 't.arr' claims 2305843009213693952 entries"));
  b = GgufBuilder();
  b.add_raw("t.arr", 9, gguf_u32(4) + gguf_u64(3) + gguf_u32(1));  // 3 u32 claimed, 1 present
  EXPECT_THAT(open_error(b.build()), HasSubstr("'t.arr' claims 3 entries"));
  b = GgufBuilder();
  b.add_raw("t.strs", 9, gguf_u32(8) + gguf_u64(2) + gguf_string("ok") + gguf_u64(99) + "xy");
  EXPECT_THAT(open_error(b.build()), HasSubstr("metadata key 't.strs' element 1 is a string of 99 bytes"));
  b = GgufBuilder();
  b.add_raw("t.weird", 13, gguf_u32(0));
  EXPECT_THAT(open_error(b.build()), HasSubstr("metadata key 't.weird' has unknown value type 13"));
  b = GgufBuilder();
  b.add_raw("t.arr", 9, gguf_u32(42) + gguf_u64(0));
  EXPECT_THAT(open_error(b.build()), HasSubstr("'t.arr' is an array of unknown value type 42"));
  b = GgufBuilder();
  b.add_raw("t.b", 7, gguf_u8(2));
  EXPECT_THAT(open_error(b.build()), HasSubstr("'t.b' is a bool with byte value 2"));
  b = GgufBuilder();
  b.add_u32("t.k", 1);
  b.add_u32("t.k", 2);
  EXPECT_THAT(open_error(b.build()), HasSubstr("metadata key 't.k' appears twice"));
  b = GgufBuilder();
  std::string deep = gguf_u32(4) + gguf_u64(0);
  for (int i = 0; i < 6; i++) deep = gguf_u32(9) + gguf_u64(1) + deep;
  b.add_raw("t.deep", 9, deep);
  EXPECT_THAT(open_error(b.build()), HasSubstr("nests arrays more than"));
  for (uint32_t alignment : {0u, 3u, 48u}) {
    b = sample_builder();
    b.add_u32("general.alignment", alignment);
    EXPECT_THAT(open_error(b.build()), HasSubstr("'general.alignment' must be a power of two"));
  }
  b = sample_builder();
  b.add_string("general.alignment", "32");
  EXPECT_THAT(open_error(b.build()), HasSubstr("'general.alignment' must be a power of two"));
}

TEST(Gguf, RefusesBadTensorEntries) {
  auto with_tensor = [](GgufTestTensor t) {
    GgufBuilder b;
    b.add_f32_tensor("ok", {4}, {1, 2, 3, 4});
    b.add_tensor(t);
    return b.build();
  };
  GgufTestTensor t;
  t.name = "blk.0.w";
  t.type = smezo::GGUF_TYPE_F32;
  t.dims = {2, 2, 2, 2, 2};
  t.bytes = std::string(128, '\x01');
  EXPECT_THAT(open_error(with_tensor(t)), HasSubstr("tensor 'blk.0.w' has 5 dimensions; GGUF tensors have 1 to 4"));
  t.dims = {};
  EXPECT_THAT(open_error(with_tensor(t)), HasSubstr("tensor 'blk.0.w' has 0 dimensions"));
  t.dims = {4, 0};
  EXPECT_THAT(open_error(with_tensor(t)), HasSubstr("tensor 'blk.0.w' dimension 1 is 0"));
  t.dims = {1ull << 40, 1ull << 40};
  EXPECT_THAT(open_error(with_tensor(t)), HasSubstr("tensor 'blk.0.w' dimension 1 is 1099511627776"));
  t.dims = {4, 4};
  t.type = 99;
  EXPECT_THAT(open_error(with_tensor(t)), HasSubstr("tensor 'blk.0.w' has tensor type unknown (99), which smezo does not read"));
  t.type = 11;
  EXPECT_THAT(open_error(with_tensor(t)), HasSubstr("has tensor type Q3_K (11)"));
  t.type = smezo::GGUF_TYPE_Q8_0;
  t.dims = {33, 2};
  EXPECT_THAT(open_error(with_tensor(t)),
              HasSubstr("tensor 'blk.0.w' has type Q8_0 (blocks of 32) but its innermost dimension 33"));
  t.type = smezo::GGUF_TYPE_Q6_K;
  t.dims = {128, 2};
  EXPECT_THAT(open_error(with_tensor(t)), HasSubstr("Q6_K (blocks of 256)"));
  // data past the end of the file
  t.type = smezo::GGUF_TYPE_F32;
  t.dims = {4, 4};
  t.bytes = std::string(60, '\x01');  // 64 needed
  EXPECT_THAT(open_error(with_tensor(t)),
              HasSubstr("tensor 'blk.0.w' (F32, 64 bytes at data offset 32) extends past the end"));
  t.bytes = std::string(64, '\x01');
  t.offset_override = 1ll << 62;
  EXPECT_THAT(open_error(with_tensor(t)), HasSubstr("tensor 'blk.0.w' (F32, 64 bytes at data offset 4611686018427387904)"));
  t.offset_override = 36;
  EXPECT_THAT(open_error(with_tensor(t)), HasSubstr("starts at data offset 36, which is not a multiple of the alignment 32"));
  t.offset_override = 0;  // on top of "ok"
  EXPECT_THAT(open_error(with_tensor(t)), AllOf(HasSubstr("tensor 'ok' (16 bytes at byte "),
                                                HasSubstr(") runs into tensor 'blk.0.w' at byte ")));
  // the gguf fuzzer's input (its scale patch grew the file): attn_q's dimension grown into attn_k
  EXPECT_THAT(smezo_test::error_of([] { GgufFile::open("tests/fuzz/corpus/gguf/overlapping_tensors.gguf"); }),
              HasSubstr("tensor 'blk.0.attn_q.weight' (700 bytes at byte 2912) runs into tensor "
                        "'blk.0.attn_k.weight' at byte 3552; the GGUF's tensor table is corrupt"));
  t.offset_override = -1;
  t.name = "ok";
  EXPECT_THAT(open_error(with_tensor(t)), HasSubstr("tensor 'ok' appears twice"));
}

// Random byte corruptions of a good file: each either opens or is refused with a
// smezo::Error; nothing else (no crash, no other exception, no giant allocation). A
// libFuzzer run with ASan/UBSan over the same reader found nothing in 150k inputs.
TEST(Gguf, RandomCorruptionsOpenOrFailCleanly) {
  const std::string good = sample_builder().build();
  const std::string path = smezo_test::make_temp_dir("gguf_mut") + "/model.gguf";
  std::mt19937 rng(77);
  int refused = 0;
  for (int trial = 0; trial < 500; trial++) {
    std::string bytes = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; i++) bytes[rng() % bytes.size()] = static_cast<char>(rng() & 0xff);
    smezo_test::write_file(path, bytes);
    try {
      auto f = GgufFile::open(path);
      for (const smezo::GgufTensorInfo& t : f->tensors()) ASSERT_LE(t.offset + t.nbytes, f->file_size());
    } catch (const smezo::Error& e) {
      refused++;
      ASSERT_THAT(e.what(), HasSubstr(path));
    }
  }
  EXPECT_GT(refused, 50);   // the corruptions do hit the structure
}
