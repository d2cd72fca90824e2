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

void require_in_range(const char* option, const ValueRange& range, double value) {
  if (range.contains(value)) return;
  const std::string got = range.integer && std::isfinite(value) ? format_string("%.0f", value) : number_text(value);
  const char* article = range.integer ? "an " : std::isfinite(value) ? "" : "a finite number ";
  throw_error("%s must be %s%s, got %s", option, article, range.describe().c_str(), got.c_str());
}

}  // namespace smezo
