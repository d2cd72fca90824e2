// Implementation of the error helpers declared in check.h.
#include "common/check.h"

#include <cstdio>
#include <utility>
#include <vector>

namespace smezo {

namespace {

constexpr const char* kHintMarker = "---> HINT:";

// Each line break, with the blanks around it, becomes one space; the ends are trimmed.
std::string one_line(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); i++) {
    const char c = text[i];
    if (c != '\n' && c != '\r') {
      out += c;
      continue;
    }
    while (!out.empty() && (out.back() == ' ' || out.back() == '\t')) out.pop_back();
    while (i + 1 < text.size() && (text[i + 1] == ' ' || text[i + 1] == '\t' || text[i + 1] == '\n' ||
                                   text[i + 1] == '\r'))
      i++;
    if (!out.empty()) out += ' ';
  }
  const size_t first = out.find_first_not_of(" \t"), last = out.find_last_not_of(" \t");
  return first == std::string::npos ? "" : out.substr(first, last - first + 1);
}

// The message without the punctuation that used to lead into the hint ("...; ---> HINT").
std::string trim_message(std::string m) {
  while (!m.empty() && (m.back() == ' ' || m.back() == ';' || m.back() == ',')) m.pop_back();
  return m;
}

std::pair<std::string, std::string> split_hint(const std::string& text) {
  const std::string flat = one_line(text);
  const size_t at = flat.find(kHintMarker);
  if (at == std::string::npos) return {flat, ""};
  return {trim_message(flat.substr(0, at)), one_line(flat.substr(at + std::string(kHintMarker).size()))};
}

}  // namespace

std::string error_join_hint(const std::string& message, const std::string& hint) {
  return hint.empty() ? message : message + " " + kHintMarker + " " + hint;
}

Error::Error(std::pair<std::string, std::string> parts)
    : std::runtime_error(error_join_hint(parts.first, parts.second)),
      message_(std::move(parts.first)),
      hint_(std::move(parts.second)) {}

Error::Error(const std::string& text) : Error(split_hint(text)) {}

Error::Error(const std::string& message, const std::string& hint)
    : Error(std::make_pair(trim_message(one_line(message)), one_line(hint))) {}

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
