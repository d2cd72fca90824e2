// Error reporting for smezo: one exception type and one precondition macro.
//
// SMEZO_REQUIRE(cond, fmt, ...) stays on in release builds. It throws smezo::Error with a
// printf-formatted message that a user can act on (name the file, tensor, field or value).
// The CLI catches smezo::Error, prints "smezo: error: <message>" and exits non-zero; tests
// check the message with EXPECT_THROW / testing::HasSubstr.
#pragma once

#include <cstdarg>
#include <stdexcept>
#include <string>

namespace smezo {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// printf-style formatting into a std::string.
std::string format_string(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format_string_v(const char* fmt, va_list args);

[[noreturn]] void throw_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace smezo

#define SMEZO_REQUIRE(cond, ...)                  \
  do {                                            \
    if (!(cond)) ::smezo::throw_error(__VA_ARGS__); \
  } while (0)
