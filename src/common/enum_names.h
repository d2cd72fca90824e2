// One name table per option enum: parsing, printing and error lists all come from it, in its order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/check.h"

namespace smezo {

template <typename E>
struct EnumName {
  E value;
  const char* name;
  bool listed = true;  // false: read, never offered or printed (an alias, or "auto" of the options)
};

template <typename E>
using EnumNames = std::vector<EnumName<E>>;

template <typename E>
std::optional<E> enum_find(const EnumNames<E>& names, const std::string& name) {
  for (const EnumName<E>& n : names)
    if (name == n.name) return n.value;
  return std::nullopt;
}

// The value's name: its first entry ("?" for a value the table lacks).
template <typename E>
const char* enum_name(const EnumNames<E>& names, E value) {
  for (const EnumName<E>& n : names)
    if (n.value == value) return n.name;
  return "?";
}

template <typename E>
bool enum_known(const EnumNames<E>& names, E value) {
  return enum_name(names, value)[0] != '?';
}

// The listed names, in order: what the command line offers.
template <typename E>
std::vector<std::string> enum_choices(const EnumNames<E>& names) {
  std::vector<std::string> out;
  for (const EnumName<E>& n : names)
    if (n.listed) out.push_back(n.name);
  return out;
}

// "a, b or c"
inline std::string enum_choice_list(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); i++) out += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return out;
}

// The value named `name`, else an error "unknown <what> 'name' (choose a, b or c)".
template <typename E>
E enum_parse(const EnumNames<E>& names, const std::string& name, const char* what) {
  if (const std::optional<E> value = enum_find(names, name)) return *value;
  throw_error("unknown %s '%s' (choose %s)", what, printable(name).c_str(),
              enum_choice_list(enum_choices(names)).c_str());
}

// For a cast int the table lacks: "unknown <what> 7 (choose a, b or c)".
template <typename E>
void enum_require_known(const EnumNames<E>& names, E value, const char* what) {
  SMEZO_REQUIRE(enum_known(names, value), "unknown %s %d (choose %s)", what, static_cast<int>(value),
                enum_choice_list(enum_choices(names)).c_str());
}

}  // namespace smezo
