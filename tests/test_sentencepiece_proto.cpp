// The minimal protobuf reader of sentencepiece .model files (tokenizer/sentencepiece_proto.h):
// the three real models read as libsentencepiece reads them, a hand-written model whose unknown
// fields of every wire type are skipped, and each malformed file refused naming the file and fault.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sentencepiece_processor.h>

#include "common/assets.h"
#include "test_util.h"
#include "tokenizer/sentencepiece_proto.h"

using namespace smezo;
using smezo_test::error_of;
using testing::HasSubstr;

namespace {

// Protobuf wire format, enough to write a ModelProto by hand.
std::string varint(uint64_t v) {
  std::string out;
  do {
    out += static_cast<char>((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  return out;
}
std::string key(uint32_t number, uint32_t wire) { return varint(uint64_t{number} << 3 | wire); }
std::string bytes_field(uint32_t number, const std::string& bytes) {
  return key(number, 2) + varint(bytes.size()) + bytes;
}
std::string varint_field(uint32_t number, uint64_t v) { return key(number, 0) + varint(v); }
std::string float_field(uint32_t number, float f) {
  std::string out = key(number, 5);
  out.append(reinterpret_cast<const char*>(&f), 4);
  return out;
}
std::string fixed64_field(uint32_t number) { return key(number, 1) + std::string(8, '\x5a'); }

std::string written(const std::string& bytes) {
  const std::string path = smezo_test::make_temp_dir("sp_proto") + "/m.model";
  smezo_test::write_file(path, bytes);
  return path;
}

int piece_type(const sentencepiece::SentencePieceProcessor& sp, int id) {
  if (sp.IsUnknown(id)) return SP_PIECE_UNKNOWN;
  if (sp.IsControl(id)) return SP_PIECE_CONTROL;
  if (sp.IsUnused(id)) return SP_PIECE_UNUSED;
  if (sp.IsByte(id)) return SP_PIECE_BYTE;
  return -1;  // normal or user-defined: the processor does not tell them apart
}

}  // namespace

TEST(SentencepieceProto, RealModelsReadAsLibsentencepieceReadsThem) {
  for (const char* name : {"tokenizers/llama2.model", "tokenizers/mistral-7b-v0.1.model",
                           "tokenizers/tinystories-512.model"}) {
    const std::string path = asset_path(name);
    sentencepiece::SentencePieceProcessor sp;
    ASSERT_TRUE(sp.Load(path).ok()) << path;
    const SentencepieceModelInfo info = read_sentencepiece_model_info(path);
    ASSERT_EQ(static_cast<int>(info.pieces.size()), sp.GetPieceSize()) << name;
    int differences = 0;
    for (int id = 0; id < sp.GetPieceSize(); ++id) {
      const SentencepieceModelInfo::Piece& p = info.pieces[id];
      const int type = piece_type(sp, id);
      differences += p.piece != sp.IdToPiece(id) || p.score != sp.GetScore(id) ||
                     (type >= 0 ? p.type != type : p.type != SP_PIECE_NORMAL && p.type != SP_PIECE_USER_DEFINED);
    }
    EXPECT_EQ(differences, 0) << name;
    EXPECT_EQ(info.model_type, 2) << name;  // all three are BPE models
  }
}

TEST(SentencepieceProto, HandWrittenModelSkipsUnknownFieldsOfEveryWireType) {
  const std::string unknown = varint_field(9, 300) + fixed64_field(10) + bytes_field(11, "xyz") + float_field(12, 1.5f);
  const std::string pieces =
      bytes_field(1, bytes_field(1, "<unk>") + float_field(2, 0.0f) + varint_field(3, SP_PIECE_UNKNOWN)) +
      bytes_field(1, unknown + bytes_field(1, "\xe2\x96\x81the") + float_field(2, -3.25f)) +
      bytes_field(1, varint_field(3, SP_PIECE_BYTE) + bytes_field(1, "<0x41>") + unknown);
  const std::string trainer = bytes_field(2, unknown + varint_field(3, 4));
  const std::string normalizer = bytes_field(3, bytes_field(1, "identity") + varint_field(3, 0) + unknown +
                                                    varint_field(4, 0));
  const SentencepieceModelInfo info = read_sentencepiece_model_info(written(unknown + pieces + trainer + normalizer));
  ASSERT_EQ(info.pieces.size(), 3u);
  EXPECT_EQ(info.pieces[0].piece, "<unk>");
  EXPECT_EQ(info.pieces[0].type, SP_PIECE_UNKNOWN);
  EXPECT_EQ(info.pieces[1].piece, "\xe2\x96\x81the");
  EXPECT_EQ(info.pieces[1].score, -3.25f);
  EXPECT_EQ(info.pieces[1].type, SP_PIECE_NORMAL);  // absent: the proto's default
  EXPECT_EQ(info.pieces[2].piece, "<0x41>");
  EXPECT_EQ(info.pieces[2].type, SP_PIECE_BYTE);
  EXPECT_EQ(info.model_type, 4);
  EXPECT_EQ(info.normalizer, "identity");
  EXPECT_FALSE(info.add_dummy_prefix);
  EXPECT_FALSE(info.remove_extra_whitespaces);
}

TEST(SentencepieceProto, MalformedFilesAreRefusedNamingTheFileAndTheFault) {
  const std::string good_piece = bytes_field(1, bytes_field(1, "a") + float_field(2, -1.0f));
  const std::pair<std::string, std::string> cases[] = {
      {"\x0a", "truncated sentencepiece model (a varint runs past the end)"},
      {good_piece + std::string(10, '\x80') + "\x01", "malformed sentencepiece model (a varint longer than 10 bytes)"},
      {good_piece + key(1, 2) + varint(5) + "ab", "truncated sentencepiece model (field 1 of 5 bytes)"},
      {good_piece + key(9, 1) + "abc", "truncated sentencepiece model"},
      {good_piece + key(9, 3), "malformed sentencepiece model (wire type 3)"},
      // a score whose 4 bytes end past its piece's message: refused before they are read
      {bytes_field(1, bytes_field(1, "a") + key(2, 5) + "ab"), "truncated sentencepiece model"},
      {"", "a sentencepiece model without pieces"},
      {bytes_field(2, varint_field(3, 2)), "a sentencepiece model without pieces"},
  };
  for (const auto& [bytes, says] : cases) {
    const std::string path = written(bytes);
    const std::string message = error_of([&] { read_sentencepiece_model_info(path); });
    EXPECT_THAT(message, HasSubstr(says)) << says;
    EXPECT_THAT(message, HasSubstr(path)) << says;
  }
  const std::string missing = smezo_test::make_temp_dir("sp_proto") + "/absent.model";
  EXPECT_THAT(error_of([&] { read_sentencepiece_model_info(missing); }),
              HasSubstr("cannot open sentencepiece model " + missing + ": No such file or directory"));
  // not a regular file: refused by the readers' common opening (common/input_file.h)
  EXPECT_THAT(error_of([&] { read_sentencepiece_model_info(smezo_test::make_temp_dir("sp_proto")); }),
              HasSubstr("is a directory, not a regular file"));
}
