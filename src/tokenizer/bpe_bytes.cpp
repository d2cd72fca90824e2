// The byte-level alphabet and the UTF-8 helpers of the BPE tokenizer (see bpe_bytes.h).
#include "tokenizer/bpe_bytes.h"

#include <array>

namespace smezo {

namespace {

// Bytes that are printable in Latin-1 keep their own code point.
bool byte_is_printable(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); }

struct ByteAlphabet {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 512> from_cp{};  // every alphabet code point is below 0x144
  ByteAlphabet() {
    from_cp.fill(-1);
    uint32_t next_extra = 0x100;
    for (int b = 0; b < 256; b++) {
      to_cp[b] = byte_is_printable(b) ? static_cast<uint32_t>(b) : next_extra++;
      from_cp[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet table;
  return table;
}

}  // namespace

uint32_t bpe_byte_to_codepoint(uint8_t b) { return alphabet().to_cp[b]; }

int bpe_codepoint_to_byte(uint32_t cp) { return cp < 512 ? alphabet().from_cp[cp] : -1; }

void utf8_append(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Longest prefix of s[i..n) that could begin a valid sequence (Unicode table 3-7), and if complete.
static int utf8_valid_prefix(const unsigned char* s, size_t n, size_t i, bool* complete, uint32_t* cp) {
  *complete = false;
  const unsigned b0 = s[i];
  if (b0 < 0x80) {
    *complete = true;
    *cp = b0;
    return 1;
  }
  int len;
  unsigned lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlongs
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;  // 0x80..0xC1 and 0xF5..0xFF never start a sequence
  }
  uint32_t value = b0 & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  int got = 1;
  for (; got < len; got++) {
    if (i + got >= n) return got;
    const unsigned b = s[i + got];
    const unsigned min = got == 1 ? lo : 0x80, max = got == 1 ? hi : 0xBF;
    if (b < min || b > max) return got;
    value = (value << 6) | (b & 0x3F);
  }
  *complete = true;
  *cp = value;
  return len;
}

int utf8_decode_one(const char* s, size_t n, size_t i, uint32_t* cp) {
  bool complete = false;
  int len = utf8_valid_prefix(reinterpret_cast<const unsigned char*>(s), n, i, &complete, cp);
  return complete ? len : 0;
}

bool utf8_is_valid(const std::string& text) {
  uint32_t cp;
  for (size_t i = 0; i < text.size();) {
    int len = utf8_decode_one(text.data(), text.size(), i, &cp);
    if (len == 0) return false;
    i += static_cast<size_t>(len);
  }
  return true;
}

std::string utf8_sanitize(const std::string& text) {
  if (utf8_is_valid(text)) return text;
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size();) {
    bool complete = false;
    uint32_t cp = 0;
    int len = utf8_valid_prefix(s, text.size(), i, &complete, &cp);
    if (complete) {
      out.append(text, i, static_cast<size_t>(len));
      i += static_cast<size_t>(len);
    } else {
      utf8_append(0xFFFD, &out);
      i += static_cast<size_t>(len > 0 ? len : 1);  // the maximal subpart, at least one byte
    }
  }
  return out;
}

std::string bpe_token_bytes(const std::string& spelling) {
  std::string bytes;
  uint32_t cp;
  for (size_t i = 0; i < spelling.size();) {
    int len = utf8_decode_one(spelling.data(), spelling.size(), i, &cp);
    int b = len > 0 ? bpe_codepoint_to_byte(cp) : -1;
    if (b < 0) return spelling;  // not a byte-level spelling: the token is its own text
    bytes.push_back(static_cast<char>(b));
    i += static_cast<size_t>(len);
  }
  return bytes;
}

std::string bpe_bytes_to_spelling(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) utf8_append(bpe_byte_to_codepoint(b), &out);
  return out;
}

}  // namespace smezo
