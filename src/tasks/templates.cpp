// MeZO's prompt templates and verbalizers (see templates.h).
#include "tasks/templates.h"

#include "common/check.h"

namespace smezo {

// --- string helpers (Python semantics, ASCII whitespace only)

static bool is_py_space(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
         (u >= 0x1c && u <= 0x1f);
}

std::string template_strip_spaces(const std::string& s) {
  size_t b = s.find_first_not_of(' ');
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(' ');
  return s.substr(b, e - b + 1);
}

std::string template_lstrip_whitespace(const std::string& s) {
  size_t b = 0;
  while (b < s.size() && is_py_space(s[b])) b++;
  return s.substr(b);
}

std::string template_rstrip_whitespace(const std::string& s) {
  size_t e = s.size();
  while (e > 0 && is_py_space(s[e - 1])) e--;
  return s.substr(0, e);
}

std::string template_strip_whitespace(const std::string& s) {
  return template_rstrip_whitespace(template_lstrip_whitespace(s));
}

}  // namespace smezo
