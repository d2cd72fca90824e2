// The one number format for accuracies and losses (see number_format.h).
#include "run/number_format.h"

#include <cmath>

#include "common/check.h"
#include "common/half.h"  // float_bits

namespace smezo {

std::string format_accuracy(double fraction) {
  if (!std::isfinite(fraction) || fraction < 0) return "-";
  return format_string("%.4f", fraction);
}

std::string format_loss(double x) {
  if (!std::isfinite(x)) return std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf");
  const double a = std::fabs(x);
  if (a != 0 && (a < 1e-3 || a >= 1e4)) return format_string("%.3e", x);
  return format_string("%.4f", x);
}

std::string float_hex_bits(float f) { return format_string("%08x", float_bits(f)); }

}  // namespace smezo
