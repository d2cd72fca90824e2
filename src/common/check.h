// Error reporting for smezo: one exception type and one precondition macro.
//
// SMEZO_REQUIRE(cond, fmt, ...) stays on in release builds. It throws smezo::Error with a
// printf-formatted message that a user can act on (name the file, tensor, field or value).
// The CLI catches smezo::Error, prints "smezo: error: <message>" and exits non-zero; tests
// check the message with EXPECT_THROW / testing::HasSubstr.
//
// Every error is ONE line. Where a hint helps (what to do about it), end the message with
// " ---> HINT: <what to do>" (llm.c's marker); Error splits it off, so
//   message()  the problem alone (what summary.json's status records),
//   hint()     the advice alone, "" when none,
//   what()     "<message> ---> HINT: <hint>", or the message when there is no hint.
// Line breaks in a message (older code wrote "\n---> HINT: ...") are folded into spaces, so
// what() never spans lines.
//
// Bytes that come from a file (tensor names, JSON keys, parser messages quoting the input)
// go through printable() before they reach a message, so a corrupt or hostile file cannot
// put control characters on the user's terminal or a megabyte on one error line. As a
// backstop, throw_error escapes any ASCII control byte other than '\n' in the final text.
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

// A write to a file that the system refused (full disk, file-size limit, read-only folder):
// the message names the file, errno() says why, and the hint says what to do about that
// cause. Callers that know how to go on afterwards (smezo train: --resume) add to the hint.
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

// printf-style formatting into a std::string.
std::string format_string(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format_string_v(const char* fmt, va_list args);

[[noreturn]] void throw_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// bytes as they may appear in a one-line message: printable ASCII and well-formed UTF-8
// (other than C1 controls) as they are, "\n", "\t", "\r", and every other byte as "\xNN";
// longer than max_chars output characters, it is cut there and "...(N bytes)" added.
std::string printable(const std::string& bytes, size_t max_chars = 160);

}  // namespace smezo

#define SMEZO_REQUIRE(cond, ...)                  \
  do {                                            \
    if (!(cond)) ::smezo::throw_error(__VA_ARGS__); \
  } while (0)
