// The scale-patched GGUF (formats/gguf_patch.h) and the file SHA-256 (common/sha256.h).
//  - Random fixture GGUFs with a tensor of every block type smezo reads, random patches: the file
//    re-read by smezo's reader has the same size and every byte of the base but the scale fields,
//    each scale is the f16 rounding (nearest even) of the patch, and the decoded weights equal the
//    base's decoded with those rounded scales in place (gguf_dequantize_scaled), bit for bit.
//  - SmolLM2's Q4_1 file, every quantised tensor's scales times a seeded factor in 1 ± 5e-2.
//  - The refusals: one line, naming file and tensor, with a hint; no output and no temporary left.
//  - SHA-256: the FIPS 180-2 test vectors (appendix B) and a file larger than one read chunk.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sha2.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "common/check.h"
#include "common/file_util.h"
#include "common/half.h"
#include "common/mapped_file.h"
#include "common/sha256.h"
#include "formats/gguf.h"
#include "formats/gguf_dequant.h"
#include "formats/gguf_patch.h"
#include "test_gguf_writer.h"
#include "test_util.h"

using namespace smezo;
using smezo_test::error_of;
using testing::HasSubstr;

namespace {

const uint32_t kBlockTypes[] = {GGUF_TYPE_Q8_0, GGUF_TYPE_Q4_0, GGUF_TYPE_Q4_1, GGUF_TYPE_Q5_0,
                                GGUF_TYPE_Q5_1, GGUF_TYPE_Q4_K, GGUF_TYPE_Q5_K, GGUF_TYPE_Q6_K};

// Where a type's f16 d and m/dmin lie in a block (-1: none); the spec of gguf_patch.h, restated.
int d_at(uint32_t type) { return type == GGUF_TYPE_Q6_K ? 208 : 0; }
int m_at(uint32_t type) {
  return (type == GGUF_TYPE_Q4_1 || type == GGUF_TYPE_Q5_1 || type == GGUF_TYPE_Q4_K || type == GGUF_TYPE_Q5_K)
             ? 2 : -1;
}

float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_float(h);
}

// A GGUF with metadata, an F32 norm and one 2-row tensor of every block type, alignment 64.
std::string random_fixture(const std::string& dir, uint32_t seed) {
  smezo_test::GgufBuilder b;
  b.alignment = 64;
  b.add_u32("general.alignment", 64);
  b.add_string("general.name", "scale patch fixture");
  b.add_string_array("tokenizer.ggml.tokens", {"<s>", "a", "b"});
  b.add_f32_tensor("norm.weight", {32}, smezo_test::random_floats(32, seed, -1.0f, 1.0f));
  for (uint32_t type : kBlockTypes) {
    const GgufTypeTraits* t = gguf_type_traits(type);
    const int64_t per_row = t->block_size == 256 ? 2 : 3, rows = 2;
    std::vector<uint8_t> blocks = smezo_test::random_blocks(type, per_row * rows, seed + type);
    b.add_tensor({std::string("w.") + t->name, type,
                  {static_cast<uint64_t>(per_row * t->block_size), static_cast<uint64_t>(rows)},
                  std::string(blocks.begin(), blocks.end())});
  }
  const std::string path = dir + "/base.gguf";
  b.write(path);
  return path;
}

// Scales near the file's (times 1 ± 5e-2, so most move by more than an f16 step), seeded.
GgufScalePatch random_patch(const GgufTensorInfo& t, bool with_m, std::mt19937* rng) {
  const GgufTypeTraits* tr = gguf_type_traits(t.type);
  std::uniform_real_distribution<float> factor(0.95f, 1.05f);
  GgufScalePatch p{t.name, {}, {}};
  for (int64_t b = 0; b < t.numel / tr->block_size; b++) {
    const uint8_t* blk = t.data + b * tr->block_bytes;
    p.d.push_back(f16_at(blk + d_at(t.type)) * factor(*rng));
    if (with_m && m_at(t.type) >= 0) p.m.push_back(f16_at(blk + m_at(t.type)) * factor(*rng));
  }
  return p;
}

// Checks `out` against `base` and the patches: the claims of the file's header comment.
void expect_patched(const std::string& base_path, const std::string& out_path,
                    const std::vector<GgufScalePatch>& patches) {
  std::shared_ptr<GgufFile> base = GgufFile::open(base_path), out = GgufFile::open(out_path);
  ASSERT_EQ(base->file_size(), out->file_size());
  std::vector<bool> scale_byte(static_cast<size_t>(base->file_size()), false);
  for (const GgufScalePatch& p : patches) {
    const GgufTensorInfo* bt = base->find_tensor(p.tensor);
    const GgufTensorInfo* ot = out->find_tensor(p.tensor);
    ASSERT_TRUE(bt && ot) << p.tensor;
    ASSERT_EQ(bt->offset, ot->offset);
    const GgufTypeTraits* tr = gguf_type_traits(bt->type);
    std::vector<float> d16, m16;
    for (size_t b = 0; b < p.d.size(); b++) {
      const uint8_t* blk = ot->data + b * tr->block_bytes;
      d16.push_back(f16_to_float(float_to_f16(p.d[b])));
      EXPECT_EQ(f16_at(blk + d_at(bt->type)), d16.back()) << p.tensor << " block " << b;
      for (int k = 0; k < 2; k++) scale_byte[bt->offset + b * tr->block_bytes + d_at(bt->type) + k] = true;
      if (p.m.empty()) continue;
      m16.push_back(f16_to_float(float_to_f16(p.m[b])));
      EXPECT_EQ(f16_at(blk + m_at(bt->type)), m16.back()) << p.tensor << " block " << b;
      for (int k = 0; k < 2; k++) scale_byte[bt->offset + b * tr->block_bytes + m_at(bt->type) + k] = true;
    }
    // smezo's decoder reads the patched file as the base with the rounded scales in place.
    std::vector<float> want(bt->numel), got(bt->numel);
    gguf_dequantize_scaled(bt->type, bt->data, bt->numel, want.data(),
                           {d16.data(), m16.empty() ? nullptr : m16.data()});
    gguf_dequantize(ot->type, ot->data, ot->numel, got.data());
    EXPECT_TRUE(smezo_test::same_bits(want, got)) << p.tensor;
  }
  const uint8_t* a = base->mapping()->data();
  const uint8_t* b = out->mapping()->data();
  int64_t differing = 0;
  for (int64_t i = 0; i < base->file_size(); i++) differing += !scale_byte[i] && a[i] != b[i];
  EXPECT_EQ(differing, 0) << "bytes outside the patched scale fields differ from the base";
}

TEST(GgufScalePatch, EveryBlockTypeIsPatchedInPlace) {
  const std::string dir = smezo_test::make_temp_dir("gguf_patch");
  const std::string base = random_fixture(dir, smezo_test::base_seed());
  std::shared_ptr<GgufFile> f = GgufFile::open(base);
  std::mt19937 rng(smezo_test::base_seed() + 1);
  std::vector<GgufScalePatch> patches;
  for (const GgufTensorInfo& t : f->tensors())
    if (t.type != GGUF_TYPE_F32) patches.push_back(random_patch(t, true, &rng));
  ASSERT_EQ(patches.size(), std::size(kBlockTypes));
  write_scale_patched_gguf(base, dir + "/out.gguf", patches);
  expect_patched(base, dir + "/out.gguf", patches);
  EXPECT_FALSE(path_exists(dir + "/out.gguf.tmp"));
  // The scales did move: a patch that rounds back to the file's would prove nothing.
  EXPECT_NE(smezo_test::read_file(base), smezo_test::read_file(dir + "/out.gguf")) << smezo_test::seed_note();
}

TEST(GgufScalePatch, EmptyMKeepsTheFilesAndUnpatchedTensorsStay) {
  const std::string dir = smezo_test::make_temp_dir("gguf_patch_m");
  const std::string base = random_fixture(dir, smezo_test::base_seed() + 7);
  std::shared_ptr<GgufFile> f = GgufFile::open(base);
  std::mt19937 rng(smezo_test::base_seed() + 8);
  // d alone of the types with an m, and nothing at all for the others.
  std::vector<GgufScalePatch> patches;
  for (uint32_t type : {GGUF_TYPE_Q4_1, GGUF_TYPE_Q4_K})
    patches.push_back(random_patch(*f->find_tensor(std::string("w.") + gguf_type_name(type)), false, &rng));
  write_scale_patched_gguf(base, dir + "/out.gguf", patches);
  expect_patched(base, dir + "/out.gguf", patches);
  // No patch at all: a byte-for-byte copy.
  write_scale_patched_gguf(base, dir + "/copy.gguf", {});
  EXPECT_EQ(smezo_test::read_file(base), smezo_test::read_file(dir + "/copy.gguf"));
}

TEST(GgufScalePatch, SmolLM2EveryQuantisedTensor) {
  const std::string base = smezo_test::smollm2_path();
  if (base.empty()) GTEST_SKIP() << "SmolLM2 GGUF absent (weights/fetch_smollm2.sh)";
  const std::string dir = smezo_test::make_temp_dir("gguf_patch_smollm2");
  std::shared_ptr<GgufFile> f = GgufFile::open(base);
  std::mt19937 rng(smezo_test::base_seed());
  std::vector<GgufScalePatch> patches;
  for (const GgufTensorInfo& t : f->tensors()) {
    if (!gguf_block_quantized(t.type)) continue;
    patches.push_back(random_patch(t, true, &rng));
  }
  ASSERT_GE(patches.size(), 200u);
  write_scale_patched_gguf(base, dir + "/out.gguf", patches);
  expect_patched(base, dir + "/out.gguf", patches);
}

struct Refusal {
  std::string message, hint;
};

Refusal refusal_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return {e.message(), e.hint()};
  }
  ADD_FAILURE() << "nothing thrown";
  return {};
}

TEST(GgufScalePatch, RefusesWithOneLineAndAHint) {
  const std::string dir = smezo_test::make_temp_dir("gguf_patch_errors");
  const std::string base = random_fixture(dir, smezo_test::base_seed() + 3);
  const std::string out = dir + "/out.gguf";
  const std::string q41 = "w.Q4_1", q8 = "w.Q8_0";
  const int64_t n41 = GgufFile::open(base)->find_tensor(q41)->numel / 32;
  const std::vector<float> ones(static_cast<size_t>(n41), 1.0f);
  auto patch = [&](std::vector<GgufScalePatch> p) { return [&base, &out, p] { write_scale_patched_gguf(base, out, p); }; };
  std::string truncated = dir + "/truncated.gguf";
  std::string bytes = smezo_test::read_file(base);
  smezo_test::write_file(truncated, bytes.substr(0, bytes.size() - 100));
  const std::vector<std::pair<Refusal, std::vector<std::string>>> cases = {
      {refusal_of(patch({{"norm.weight", {1.0f}, {}}})), {"'norm.weight'", "F32", "which has no block scales"}},
      {refusal_of(patch({{q41, {1.0f, 2.0f}, {}}})), {"'w.Q4_1'", "6 blocks but the patch has 2 d values"}},
      {refusal_of(patch({{q41, ones, {1.0f}}})), {"'w.Q4_1'", "6 blocks but the patch has 1 m values"}},
      {refusal_of(patch({{q8, std::vector<float>(6, 1.0f), std::vector<float>(6, 1.0f)}})), {"'w.Q8_0'", "which has no m/dmin, but the patch has 6 m values"}},
      {refusal_of(patch({{"blk.0.attn_q.weight", {1.0f}, {}}})), {"no tensor 'blk.0.attn_q.weight' in the file"}},
      {refusal_of(patch({{q41, std::vector<float>(6, 1e6f), {}}})), {"'w.Q4_1' block 0", "has no finite f16"}},
      {refusal_of(patch({{q41, ones, {}}, {q41, ones, {}}})), {"is patched twice"}},
      {refusal_of([&] { write_scale_patched_gguf(truncated, out, {}); }), {"the base is not a readable GGUF", "truncated.gguf", "truncated"}},
      {refusal_of([&] { write_scale_patched_gguf(base, base, {}); }), {"is the base itself"}},
  };
  for (const auto& [r, needles] : cases) {
    EXPECT_TRUE(smezo_test::is_one_line(r.message + r.hint));
    EXPECT_FALSE(r.hint.empty()) << r.message;
    if (needles[0] != "is the base itself" && needles[0] != "is patched twice" && needles[0] != "the base is not a readable GGUF") {
      EXPECT_THAT(r.message, HasSubstr(base)) << "names the file";
    }
    for (const std::string& n : needles) EXPECT_THAT(r.message, HasSubstr(n));
  }
  EXPECT_FALSE(path_exists(out));
  EXPECT_FALSE(path_exists(out + ".tmp"));
  // a tensor the base does not have: the hint names the command that lists the base's tensors
  EXPECT_THAT(refusal_of(patch({{"blk.0.attn_q.weight", {1.0f}, {}}})).hint,
              HasSubstr("the patch was made for another base GGUF; `smezo info --model " + base + "` lists its"));
}

// The export's own file operations, refused with the path and the system's reason, and nothing left behind:
// the temporary cannot be created (its folder is missing), or the result cannot take the out path (a folder
// with a file in it is there).
TEST(GgufScalePatch, ACreateOrRenameThatFailsIsNamed) {
  const std::string dir = smezo_test::make_temp_dir("gguf_patch_io");
  const std::string base = random_fixture(dir, smezo_test::base_seed() + 7);
  const Refusal create = refusal_of([&] { write_scale_patched_gguf(base, dir + "/missing/out.gguf", {}); });
  EXPECT_THAT(create.message, HasSubstr("cannot create " + dir + "/missing/out.gguf.tmp: No such file or directory"));
  EXPECT_FALSE(create.hint.empty());
  const std::string taken = dir + "/taken.gguf";
  std::filesystem::create_directories(taken);
  smezo_test::write_file(taken + "/keep", "a file in the folder the result should replace");
  const Refusal rename = refusal_of([&] { write_scale_patched_gguf(base, taken, {}); });
  EXPECT_THAT(rename.message, HasSubstr("cannot rename " + taken + ".tmp to " + taken + ": "));
  EXPECT_TRUE(smezo_test::is_one_line(rename.message + rename.hint));
  EXPECT_FALSE(path_exists(taken + ".tmp"));
  EXPECT_EQ(smezo_test::read_file(taken + "/keep"), "a file in the folder the result should replace");
}

TEST(GgufScalePatch, AFailedWriteLeavesNoFile) {
  const std::string dir = smezo_test::make_temp_dir("gguf_patch_full");
  const std::string base = random_fixture(dir, smezo_test::base_seed() + 5);
  const std::string err = smezo_test::error_under_file_size_limit(
      1000, [&] { write_scale_patched_gguf(base, dir + "/out.gguf", {}); });
  EXPECT_THAT(err, HasSubstr("out.gguf.tmp"));
  EXPECT_FALSE(path_exists(dir + "/out.gguf"));
  EXPECT_FALSE(path_exists(dir + "/out.gguf.tmp"));
}

TEST(FileSha256, FipsVectors) {
  const std::string dir = smezo_test::make_temp_dir("sha256");
  const std::vector<std::pair<std::string, std::string>> vectors = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      // a million 'a': most of a read chunk
      {std::string(1000000, 'a'), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
  for (const auto& [text, hex] : vectors) {
    smezo_test::write_file(dir + "/f", text);
    EXPECT_EQ(file_sha256_hex(dir + "/f"), hex) << text.size() << " bytes";
  }
  // Longer than one read chunk (1 MiB): the digest of the chunks equals libmd's of the bytes.
  std::string big(3u << 20, '\0');
  std::mt19937 rng(smezo_test::base_seed());
  for (char& c : big) c = static_cast<char>(rng());
  smezo_test::write_file(dir + "/big", big);
  char want[SHA256_DIGEST_STRING_LENGTH];
  SHA256Data(reinterpret_cast<const uint8_t*>(big.data()), big.size(), want);
  EXPECT_EQ(file_sha256_hex(dir + "/big"), std::string(want));
}

TEST(FileSha256, RefusesWhatIsNotARegularFile) {
  const std::string dir = smezo_test::make_temp_dir("sha256_errors");
  EXPECT_THAT(error_of([&] { file_sha256_hex(dir + "/absent"); }), HasSubstr("absent"));
  EXPECT_THAT(error_of([&] { file_sha256_hex(dir); }), HasSubstr("directory"));
}

}  // namespace
