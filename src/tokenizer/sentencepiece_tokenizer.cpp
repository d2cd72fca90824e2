// The sentencepiece tokenizer (LLaMA-1/2, Mistral, TinyStories) over libsentencepiece.
#include <sentencepiece_processor.h>

#include <cstdio>
#include <exception>

#include "common/check.h"
#include "common/input_file.h"
#include "tokenizer/tokenizer.h"

// Silences libsentencepiece's INFO/WARNING lines: not in its public header, so declared weak.
namespace sentencepiece {
namespace logging {
void SetMinLogLevel(int v) __attribute__((weak));
}  // namespace logging
}  // namespace sentencepiece

namespace smezo {

namespace {

constexpr int kSentencepieceLogError = 2;  // sentencepiece's LOG_ERROR: INFO (0) and WARNING (1) stay quiet

void quiet_sentencepiece_logging() {
  if (&sentencepiece::logging::SetMinLogLevel != nullptr)
    sentencepiece::logging::SetMinLogLevel(kSentencepieceLogError);
}

class SentencepieceTokenizer : public Tokenizer {
 public:
  explicit SentencepieceTokenizer(const std::string& path) {
    quiet_sentencepiece_logging();
    const std::string bytes = input_read(path, "tokenizer", kInputTextMaxBytes);  // a regular file, bounded
    sentencepiece::util::Status status;
    try {
      status = sp_.LoadFromSerializedProto(bytes);
    } catch (const std::exception& e) {
      // Its trie builder throws on some malformed models (e.g. an empty piece).
      throw_error("%s is not a sentencepiece model: %s", path.c_str(), printable(e.what()).c_str());
    }
    SMEZO_REQUIRE(status.ok(), "%s is not a sentencepiece model: %s", path.c_str(),
                  printable(status.ToString()).c_str());
  }

  std::vector<int32_t> encode(const std::string& text, bool add_bos) const override {
    std::vector<int> ids;
    auto status = sp_.Encode(text, &ids);
    SMEZO_REQUIRE(status.ok(), "sentencepiece could not encode text: %s",
                  printable(status.ToString()).c_str());
    std::vector<int32_t> out;
    if (add_bos) out.push_back(bos_id());
    out.insert(out.end(), ids.begin(), ids.end());
    return out;
  }

  std::string decode(const std::vector<int32_t>& tokens) const override {
    std::vector<int> ids;
    for (int32_t t : tokens)
      if (t != bos_id() && t != eos_id()) ids.push_back(t);
    std::string text;
    auto status = sp_.Decode(ids, &text);
    SMEZO_REQUIRE(status.ok(), "sentencepiece could not decode: %s",
                  printable(status.ToString()).c_str());
    return text;
  }

  // As llama2.c's decode(): '▁' as spaces, <0xNN> pieces as the byte, no leading space after BOS.
  std::string decode_piece(int32_t prev, int32_t token) const override {
    SMEZO_REQUIRE(token >= 0 && token < vocab_size(), "token id %d outside the tokenizer's %lld",
                  token, (long long)vocab_size());
    if (sp_.IsControl(token)) return "";
    std::string piece = sp_.IdToPiece(token);
    if (sp_.IsByte(token)) {
      unsigned value = 0;
      if (std::sscanf(piece.c_str(), "<0x%02X>", &value) == 1) return std::string(1, static_cast<char>(value));
    }
    std::string out;
    const std::string space_mark = "\xe2\x96\x81";  // U+2581
    for (size_t i = 0; i < piece.size();) {
      if (piece.compare(i, space_mark.size(), space_mark) == 0) {
        out += ' ';
        i += space_mark.size();
      } else {
        out += piece[i++];
      }
    }
    if (prev == bos_id() && !out.empty() && out[0] == ' ') out.erase(0, 1);
    return out;
  }

  int64_t vocab_size() const override { return sp_.GetPieceSize(); }
  int32_t bos_id() const override { return sp_.bos_id(); }
  int32_t eos_id() const override { return sp_.eos_id(); }
  int32_t unk_id() const { return sp_.unk_id(); }
  std::string piece(int32_t id) const { return id >= 0 ? sp_.IdToPiece(id) : std::string(); }

 private:
  sentencepiece::SentencePieceProcessor sp_;
};

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece_tokenizer(const std::string& path) {
  return std::make_unique<SentencepieceTokenizer>(path);
}

SentencepieceSpecialPieces sentencepiece_special_pieces(const std::string& path) {
  const SentencepieceTokenizer sp(path);
  return {sp.piece(sp.bos_id()), sp.piece(sp.eos_id()), sp.piece(sp.unk_id())};
}

}  // namespace smezo
