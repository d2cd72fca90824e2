// Strict JSON reading for the files smezo reads (config.json, safetensors headers and
// indexes, task data rows), over nlohmann-json.
//
// Stricter than nlohmann's defaults in two ways that matter for untrusted files:
//   - a key given twice in one object is an error (nlohmann keeps the last silently; a
//     doubled tensor name or config field would otherwise hide a corruption);
//   - nesting deeper than kMaxJsonDepth is an error (no file smezo reads nests beyond 6, and
//     a bound keeps every recursive walk, e.g. dump() for a message, off the stack limit).
// Parse errors become one-line smezo::Errors naming the file, with the parser's text made
// printable (it quotes the input).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace smezo {

constexpr int kMaxJsonDepth = 64;

// Parses [begin, end) as one JSON value. `what` names the input in errors, e.g.
// "config /m/config.json" or "data.jsonl:12"; errors read "<what>: not valid JSON (...)".
nlohmann::json json_parse_strict(const char* begin, const char* end, const std::string& what);

// A short printable rendering of v for an error message (at most ~120 characters).
std::string json_brief(const nlohmann::json& v);

}  // namespace smezo
