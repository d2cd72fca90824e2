// Strict JSON reading for untrusted files: a key given twice (nlohmann keeps the last) and nesting
// deeper than kMaxJsonDepth (stack) are errors; parse errors are one-line smezo::Errors naming the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace smezo {

constexpr int kMaxJsonDepth = 64;

// One JSON value; errors read "<what>: not valid JSON (...)", e.g. what = "data.jsonl:12".
nlohmann::json json_parse_strict(const char* begin, const char* end, const std::string& what);

// A number of an untrusted file as T (int64_t, uint64_t or float), or nullopt when v is not one: an
// integer T needs a JSON integer within its range, float a finite number within float's. v.get<T>()
// would cast a float such as 1e300 to an integer, or to float, out of range: undefined behaviour.
template <class T>
std::optional<T> json_number(const nlohmann::json& v);
template <>
std::optional<int64_t> json_number<int64_t>(const nlohmann::json& v);
template <>
std::optional<uint64_t> json_number<uint64_t>(const nlohmann::json& v);
template <>
std::optional<float> json_number<float>(const nlohmann::json& v);

// j.at(key) (a missing key throws json::out_of_range) read by json_number<T>; a value that is not
// one is an Error "<where>: \"<key>\" is <value>, not <an integer in T's range | a float>".
template <class T>
T json_number_at(const nlohmann::json& j, const char* key, const std::string& where);

// A short printable rendering of v for an error message (at most ~120 characters).
std::string json_brief(const nlohmann::json& v);

}  // namespace smezo
