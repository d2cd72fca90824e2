// Strict JSON reading for untrusted files: a key given twice (nlohmann keeps the last) and nesting
// deeper than kMaxJsonDepth (stack) are errors; parse errors are one-line smezo::Errors naming the file.
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
