// Strict JSON parsing: duplicate keys and deep nesting refused (see json_read.h).
#include "formats/json_read.h"

#include <cfloat>
#include <cmath>
#include <limits>
#include <set>
#include <type_traits>
#include <vector>

#include "common/check.h"

namespace smezo {

using json = nlohmann::json;

json json_parse_strict(const char* begin, const char* end, const std::string& what) {
  // One set of keys per open object, innermost last.
  std::vector<std::set<std::string>> open_objects;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        SMEZO_REQUIRE(depth < kMaxJsonDepth, "%s: JSON nested deeper than %d levels",
                      what.c_str(), kMaxJsonDepth);
        if (event == json::parse_event_t::object_start) open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        open_objects.pop_back();
        break;
      case json::parse_event_t::key:
        SMEZO_REQUIRE(open_objects.back().insert(parsed.get<std::string>()).second,
                      "%s: key \"%s\" appears twice in one JSON object", what.c_str(),
                      printable(parsed.get<std::string>()).c_str());
        break;
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(begin, end, callback);
  } catch (const json::exception& e) {
    throw_error("%s: not valid JSON (%s)", what.c_str(), printable(e.what()).c_str());
  }
}

std::string json_brief(const json& v) {
  return printable(v.dump(-1, ' ', false, json::error_handler_t::replace), 120);
}

template <>
std::optional<int64_t> json_number<int64_t>(const json& v) {
  if (v.is_number_unsigned())
    return v.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()) ? std::optional<int64_t>(v.get<int64_t>())
                                                                              : std::nullopt;
  return v.is_number_integer() ? std::optional<int64_t>(v.get<int64_t>()) : std::nullopt;
}

template <>
std::optional<uint64_t> json_number<uint64_t>(const json& v) {
  return v.is_number_unsigned() ? std::optional<uint64_t>(v.get<uint64_t>()) : std::nullopt;
}

template <>
std::optional<float> json_number<float>(const json& v) {
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  return std::isfinite(d) && std::fabs(d) <= double(FLT_MAX) ? std::optional<float>(float(d)) : std::nullopt;
}

template <class T>
T json_number_at(const json& j, const char* key, const std::string& where) {
  const json& v = j.at(key);
  const std::optional<T> n = json_number<T>(v);
  SMEZO_REQUIRE(n.has_value(), "%s: \"%s\" is %s, not %s", where.c_str(), key, json_brief(v).c_str(),
                std::is_same<T, float>::value      ? "a finite number within float's range"
                : std::is_same<T, uint64_t>::value ? "an integer from 0 to 2^64-1"
                                                   : "an integer from -2^63 to 2^63-1");
  return *n;
}

template int64_t json_number_at<int64_t>(const json&, const char*, const std::string&);
template uint64_t json_number_at<uint64_t>(const json&, const char*, const std::string&);
template float json_number_at<float>(const json&, const char*, const std::string&);

}  // namespace smezo
