// Numeric option ranges (see value_range.h).
#include "common/value_range.h"

#include <sstream>

#include "common/check.h"

namespace smezo {

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

bool ValueRange::contains(double v) const {
  if (!std::isfinite(v) || (integer && v != std::floor(v))) return false;
  return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
}

std::string ValueRange::describe() const {
  const std::string kind = integer ? "integer " : "";
  auto text = [this](double v) { return integer ? format_string("%.0f", v) : number_text(v); };
  if (std::isinf(hi)) return kind + (lo_open ? "> " : ">= ") + text(lo);
  return kind + "in " + (lo_open ? "(" : "[") + text(lo) + ", " + text(hi) + (hi_open ? ")" : "]");
}

std::string ValueOrigin::name(const std::string& option) const {
  if (file.empty()) return option;
  std::string field = option.compare(0, 2, "--") == 0 ? option.substr(2) : option;
  for (char& c : field) c = c == '-' ? '_' : c;
  for (const auto& [opt, f] : fields)
    if (opt == option) field = f;
  return format_string("%s: field \"%s\"", printable(file, 200).c_str(), field.c_str());
}

void ValueOrigin::fail(const std::string& option, const std::string& problem) const {
  throw Error(name(option) + " " + problem, hint);
}

void require_in_range(const std::string& option, const ValueRange& range, double value, const ValueOrigin& origin) {
  if (range.contains(value)) return;
  const std::string got = range.integer && std::isfinite(value) ? format_string("%.0f", value) : number_text(value);
  const char* article = range.integer ? "an " : std::isfinite(value) ? "" : "a finite number ";
  origin.fail(option, format_string("must be %s%s, got %s", article, range.describe().c_str(), got.c_str()));
}

}  // namespace smezo
