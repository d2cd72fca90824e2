// Implementation of the error helpers declared in check.h.
#include "common/check.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
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

// The message without punctuation leading into the hint ("...; ---> HINT").
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

// Length (2..4) of the well-formed UTF-8 at s[i]; 0 if none or a C1 control (terminals obey those).
size_t utf8_sequence_length(const std::string& s, size_t i) {
  const unsigned char b0 = static_cast<unsigned char>(s[i]);
  size_t len;
  uint32_t cp;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    len = 2;
    cp = b0 & 0x1f;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    len = 3;
    cp = b0 & 0x0f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; k++) {
    const unsigned char b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min_cp[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  if (cp <= 0x9f) return 0;  // C1 control
  return len;
}

void append_escaped_byte(unsigned char b, std::string* out) {
  static const char hex[] = "0123456789abcdef";
  switch (b) {
    case '\n': *out += "\\n"; return;
    case '\t': *out += "\\t"; return;
    case '\r': *out += "\\r"; return;
    default:
      *out += "\\x";
      *out += hex[b >> 4];
      *out += hex[b & 15];
  }
}

// The backstop of throw_error: ASCII control bytes other than '\n' escaped.
std::string escape_controls(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const unsigned char b = static_cast<unsigned char>(c);
    if ((b < 0x20 && b != '\n') || b == 0x7f) append_escaped_byte(b, &out);
    else out += c;
  }
  return out;
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
  throw Error(escape_controls(s));
}

std::string printable(const std::string& bytes, size_t max_chars) {
  std::string out;
  size_t i = 0;
  while (i < bytes.size() && out.size() < max_chars) {
    const unsigned char b = static_cast<unsigned char>(bytes[i]);
    if (b >= 0x20 && b < 0x7f) {
      out += static_cast<char>(b);
      i++;
    } else if (size_t len = b >= 0x80 ? utf8_sequence_length(bytes, i) : 0) {
      out.append(bytes, i, len);
      i += len;
    } else {
      append_escaped_byte(b, &out);
      i++;
    }
  }
  if (i < bytes.size()) out += "...(" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

std::string write_error_hint(int err) {
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return "the disk (or your quota) is full: free space on it";
    case EFBIG:
      return "a file-size limit stops the file growing (see 'ulimit -f'): raise it";
    case EACCES:
    case EPERM:
    case EROFS:
      return "the folder or file is not writable by you: make it writable";
    case ENOENT:
      return "its folder does not exist: check the path";
    case ENOTDIR:
      return "a part of the path is a file, not a folder: choose another path";
    default:
      return "";
  }
}

void throw_write_error(const char* action, const std::string& path, int err) {
  throw WriteError(escape_controls(format_string("cannot %s %s: %s", action, path.c_str(), std::strerror(err))),
                   write_error_hint(err), err);
}

}  // namespace smezo
