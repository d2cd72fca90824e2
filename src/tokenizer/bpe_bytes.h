// Bytes and characters for the byte-level BPE tokenizer (GPT-2, OPT, SmolLM2).
//
// Byte-level alphabet: GPT-2's vocabularies spell every byte as one printable Unicode
// character, so that a token is a plain string. Bytes that are printable in Latin-1
// ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand for themselves; the other 68 bytes
// (controls, space, U+00AD, ...) take U+0100, U+0101, ... in increasing byte order. So the
// space 0x20 is 'Ġ' (U+0120) and the newline 0x0A is 'Ċ' (U+010A).
//
// Invalid UTF-8: the tokenizer first replaces each invalid sequence of its input with U+FFFD,
// one per "maximal subpart" (Unicode ch. 3, U+FFFD substitution of maximal subparts), which
// is what Python's bytes.decode("utf-8", "replace") and Rust's String::from_utf8_lossy do. A
// Hugging Face tokenizer only ever sees text decoded that way, so ids match HF's.
#pragma once

#include <cstdint>
#include <string>

namespace smezo {

// The code point that spells byte b in the byte-level alphabet.
uint32_t bpe_byte_to_codepoint(uint8_t b);
// The byte a code point spells, or -1 when it is not in the byte-level alphabet.
int bpe_codepoint_to_byte(uint32_t cp);

// UTF-8 of one code point (cp <= 0x10FFFF) appended to out.
void utf8_append(uint32_t cp, std::string* out);
// Decodes the UTF-8 sequence at s[i..n) into *cp and returns its length, or returns 0 when
// the bytes there do not start a valid sequence (*cp is then unspecified).
int utf8_decode_one(const char* s, size_t n, size_t i, uint32_t* cp);
// text with each maximal invalid subpart replaced by U+FFFD (see above); valid text is
// returned unchanged.
std::string utf8_sanitize(const std::string& text);
// Whether text is valid UTF-8 (no surrogates, no overlongs, nothing above U+10FFFF).
bool utf8_is_valid(const std::string& text);

// The bytes a vocabulary token spells: each character mapped through the byte-level alphabet
// when all of its characters are in it, else the token's own UTF-8 (as Hugging Face's
// ByteLevel decoder does for added tokens such as "<|im_start|>").
std::string bpe_token_bytes(const std::string& spelling);
// The byte-level spelling of raw bytes (each byte as its alphabet character, in UTF-8).
std::string bpe_bytes_to_spelling(const std::string& bytes);

}  // namespace smezo
