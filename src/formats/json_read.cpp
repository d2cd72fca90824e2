// Strict JSON parsing: duplicate keys and deep nesting refused (see json_read.h).
#include "formats/json_read.h"

#include <set>
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

}  // namespace smezo
