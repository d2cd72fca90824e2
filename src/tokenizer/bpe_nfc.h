// Unicode NFC (UAX #15) for tokenizer.json's normalizer {"type": "NFC"} (Qwen2, Qwen2.5, Qwen3):
// canonical decomposition, canonical ordering of combining marks, canonical composition, with the
// tables of nfc_tables.h (tools/fixtures/make_nfc_table.py) and Hangul's arithmetic. A text with no
// code point NFC may change (almost all text) is returned as it is after one table scan.
#pragma once

#include <cstdint>
#include <string>

namespace smezo {

// NFC of valid UTF-8 text (utf8_sanitize first: bpe_bytes.h).
std::string nfc_normalize(const std::string& text);

// The byte offset of the first code point in text that NFC may change, or -1; *cp gets it.
int64_t nfc_first_unsafe(const std::string& text, uint32_t* cp);

}  // namespace smezo
