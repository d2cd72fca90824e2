// Error reporting for smezo: one exception type and one precondition macro.
// SMEZO_REQUIRE(cond, fmt, ...) stays on in release builds and throws smezo::Error with a
// printf-formatted message naming the file, tensor, field or value; the CLI prints "smezo: error: ...".
// Every error is ONE line (line breaks fold into spaces). An optional " ---> HINT: <what to do>"
// suffix is split off: message() the problem alone, hint() the advice or "", what() both joined.
// Bytes from a file go through printable() before they reach a message, so a hostile file cannot put
// control characters or a megabyte on the terminal; throw_error also escapes any ASCII control byte
// but '\n' in the final text.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <stdexcept>
#include <utility>
#include <string>

namespace smezo {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& text);
  Error(const std::string& message, const std::string& hint);
  const std::string& message() const { return message_; }
  const std::string& hint() const { return hint_; }

 private:
  Error(std::pair<std::string, std::string> parts);
  std::string message_, hint_;
};

// A write the system refused (full disk, size limit, read-only): names the file; err(): the errno.
class WriteError : public Error {
 public:
  WriteError(const std::string& message, const std::string& hint, int err) : Error(message, hint), err_(err) {}
  int err() const { return err_; }

 private:
  int err_;
};

// What to do about a write that failed with errno `err`: "" for a cause with no general fix.
std::string write_error_hint(int err);
// Throws WriteError "cannot <action> <path>: <strerror(err)>" with write_error_hint(err).
[[noreturn]] void throw_write_error(const char* action, const std::string& path, int err);

// The one-line text of an error message and hint: "<message> ---> HINT: <hint>".
std::string error_join_hint(const std::string& message, const std::string& hint);

std::string format_string(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format_string_v(const char* fmt, va_list args);

[[noreturn]] void throw_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Printable ASCII and well-formed UTF-8 (not C1 controls) kept, "\n", "\t", "\r" and other bytes as
// "\xNN"; cut at max_chars output characters with "...(N bytes)" added.
std::string printable(const std::string& bytes, size_t max_chars = 160);

}  // namespace smezo

#define SMEZO_REQUIRE(cond, ...)                  \
  do {                                            \
    if (!(cond)) ::smezo::throw_error(__VA_ARGS__); \
  } while (0)
