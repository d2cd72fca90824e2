// Implementation of the error helpers declared in check.h.
#include "common/check.h"

#include <cstdio>
#include <vector>

namespace smezo {

std::string format_string_v(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n < 0) return fmt;
  std::vector<char> buf(static_cast<size_t>(n) + 1);
  std::vsnprintf(buf.data(), buf.size(), fmt, args);
  return std::string(buf.data(), static_cast<size_t>(n));
}

std::string format_string(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = format_string_v(fmt, args);
  va_end(args);
  return s;
}

void throw_error(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = format_string_v(fmt, args);
  va_end(args);
  throw Error(s);
}

}  // namespace smezo
