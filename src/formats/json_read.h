// Strict JSON reading over nlohmann-json, for untrusted files:
//   - a key given twice is an error (nlohmann silently keeps the last, hiding corruption);
//   - nesting deeper than kMaxJsonDepth is an error (keeps recursive walks off the stack limit).
// Parse errors are one-line smezo::Errors naming the file, the parser's text made printable.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace smezo {

constexpr int kMaxJsonDepth = 64;

// One JSON value; errors read "<what>: not valid JSON (...)", e.g. what = "data.jsonl:12".
nlohmann::json json_parse_strict(const char* begin, const char* end, const std::string& what);

// A short printable rendering of v for an error message (at most ~120 characters).
std::string json_brief(const nlohmann::json& v);

}  // namespace smezo
