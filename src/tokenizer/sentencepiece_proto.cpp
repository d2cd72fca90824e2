// A sentencepiece ModelProto's pieces and rules, by a minimal protobuf wire-format reader (see
// sentencepiece_proto.h). Unknown fields are skipped; a truncated or malformed field is an error.
#include "tokenizer/sentencepiece_proto.h"

#include <cstdint>
#include <cstring>

#include "common/check.h"
#include "common/input_file.h"

namespace smezo {

namespace {

// One message's bytes [p, end), read field by field.
struct ProtoReader {
  const uint8_t* p;
  const uint8_t* end;
  const std::string* file;  // for errors

  bool done() const { return p >= end; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      SMEZO_REQUIRE(p < end, "%s: truncated sentencepiece model (a varint runs past the end)", file->c_str());
      const uint8_t b = *p++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw_error("%s: malformed sentencepiece model (a varint longer than 10 bytes)", file->c_str());
  }
  // The next field's number and wire type; *bytes set for length-delimited fields.
  void field(uint32_t* number, uint32_t* wire, ProtoReader* bytes) {
    const uint64_t key = varint();
    *number = static_cast<uint32_t>(key >> 3);
    *wire = static_cast<uint32_t>(key & 7);
    if (*wire == 2) {
      const uint64_t n = varint();
      SMEZO_REQUIRE(n <= static_cast<uint64_t>(end - p), "%s: truncated sentencepiece model (field %u of %llu "
                    "bytes)", file->c_str(), *number, static_cast<unsigned long long>(n));
      *bytes = ProtoReader{p, p + n, file};
      p += n;
    }
  }
  void skip(uint32_t wire) {
    const int64_t fixed = wire == 1 ? 8 : wire == 5 ? 4 : -1;
    if (wire == 0) {
      varint();
    } else if (fixed > 0) {
      SMEZO_REQUIRE(end - p >= fixed, "%s: truncated sentencepiece model", file->c_str());
      p += fixed;
    } else if (wire != 2) {
      throw_error("%s: malformed sentencepiece model (wire type %u)", file->c_str(), wire);
    }
  }
};

SentencepieceModelInfo::Piece read_piece(ProtoReader r) {
  SentencepieceModelInfo::Piece piece;
  while (!r.done()) {
    uint32_t number, wire;
    ProtoReader bytes{nullptr, nullptr, r.file};
    r.field(&number, &wire, &bytes);
    if (number == 1 && wire == 2) {
      piece.piece.assign(reinterpret_cast<const char*>(bytes.p), static_cast<size_t>(bytes.end - bytes.p));
    } else if (number == 2 && wire == 5) {
      r.skip(5);  // checks that the 4 bytes are there before they are read
      std::memcpy(&piece.score, r.p - 4, 4);
    } else if (number == 3 && wire == 0) {
      piece.type = static_cast<int>(r.varint());
    } else {
      r.skip(wire);
    }
  }
  return piece;
}

// normalizer_spec (1 name, 3 add_dummy_prefix, 4 remove_extra_whitespaces) or trainer_spec (3 model_type).
void read_spec(ProtoReader r, bool normalizer, SentencepieceModelInfo* info) {
  while (!r.done()) {
    uint32_t number, wire;
    ProtoReader bytes{nullptr, nullptr, r.file};
    r.field(&number, &wire, &bytes);
    if (normalizer && number == 1 && wire == 2) {
      info->normalizer.assign(reinterpret_cast<const char*>(bytes.p), static_cast<size_t>(bytes.end - bytes.p));
    } else if (wire == 0 && (normalizer ? number == 3 || number == 4 : number == 3)) {
      const uint64_t v = r.varint();
      if (!normalizer) info->model_type = static_cast<int>(v);
      else if (number == 3) info->add_dummy_prefix = v != 0;
      else info->remove_extra_whitespaces = v != 0;
    } else {
      r.skip(wire);
    }
  }
}

}  // namespace

SentencepieceModelInfo read_sentencepiece_model_info(const std::string& path) {
  const std::string data = input_read(path, "sentencepiece model", kInputTextMaxBytes);
  const uint8_t* begin = reinterpret_cast<const uint8_t*>(data.data());
  ProtoReader r{begin, begin + data.size(), &path};
  SentencepieceModelInfo info;
  while (!r.done()) {
    uint32_t number, wire;
    ProtoReader bytes{nullptr, nullptr, &path};
    r.field(&number, &wire, &bytes);
    if (wire == 2 && number == 1) info.pieces.push_back(read_piece(bytes));
    else if (wire == 2 && (number == 2 || number == 3)) read_spec(bytes, number == 3, &info);
    else r.skip(wire);
  }
  SMEZO_REQUIRE(!info.pieces.empty(), "%s: a sentencepiece model without pieces", path.c_str());
  return info;
}

}  // namespace smezo
