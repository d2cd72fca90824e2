// Bytes and characters for the byte-level BPE tokenizer (GPT-2, OPT, SmolLM2).
// Byte-level alphabet: GPT-2 spells every byte as one printable character. Bytes printable in Latin-1
// ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand for themselves; the other 68 take U+0100, U+0101,
// ... in byte order (space 0x20 is 'Ġ' U+0120, newline 0x0A is 'Ċ' U+010A).
// Invalid UTF-8 becomes one U+FFFD per maximal subpart (Unicode ch. 3), as Python's
// decode("utf-8", "replace") does: the only text an HF tokenizer sees, so ids match HF's.
#pragma once

#include <cstdint>
#include <string>

namespace smezo {

uint32_t bpe_byte_to_codepoint(uint8_t b);
// The byte a code point spells, or -1 when it is not in the byte-level alphabet.
int bpe_codepoint_to_byte(uint32_t cp);

// UTF-8 of one code point (cp <= 0x10FFFF) appended to out.
void utf8_append(uint32_t cp, std::string* out);
// Length of the valid UTF-8 sequence at s[i..n), decoded into *cp; 0 when invalid.
int utf8_decode_one(const char* s, size_t n, size_t i, uint32_t* cp);
// text with each maximal invalid subpart replaced by U+FFFD.
std::string utf8_sanitize(const std::string& text);
// Whether text is valid UTF-8 (no surrogates, no overlongs, nothing above U+10FFFF).
bool utf8_is_valid(const std::string& text);

// Through the alphabet when every character is in it, else the token's own UTF-8 (as HF decodes).
std::string bpe_token_bytes(const std::string& spelling);
// The byte-level spelling of raw bytes (each byte as its alphabet character, in UTF-8).
std::string bpe_bytes_to_spelling(const std::string& bytes);

}  // namespace smezo
