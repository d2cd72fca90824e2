// Command-line option parsing (see args.h).
#include "cli/args.h"

#include <cerrno>
#include <cstdlib>

#include "common/check.h"

namespace smezo {

Args::Args(int argc, char** argv, int first, const std::set<std::string>& switches) {
  for (int i = first; i < argc; i++) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || a.size() == 2) {
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (switches.count(name)) {
      value = "1";
    } else {
      SMEZO_REQUIRE(i + 1 < argc, "option --%s needs a value", name.c_str());
      value = argv[++i];
    }
    SMEZO_REQUIRE(!values_.count(name), "option --%s given twice", name.c_str());
    values_[name] = value;
  }
}

bool Args::has(const std::string& name) const { return values_.count(name) != 0; }

std::string Args::str(const std::string& name, const std::string& fallback) {
  used_.insert(name);
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

int64_t Args::integer(const std::string& name, int64_t fallback) {
  used_.insert(name);
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  SMEZO_REQUIRE(errno == 0 && end && *end == '\0' && !it->second.empty(),
                "option --%s expects an integer, got '%s'", name.c_str(), it->second.c_str());
  return v;
}

double Args::number(const std::string& name, double fallback) {
  used_.insert(name);
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(it->second.c_str(), &end);
  SMEZO_REQUIRE(errno == 0 && end && *end == '\0' && !it->second.empty(),
                "option --%s expects a number, got '%s'", name.c_str(), it->second.c_str());
  return v;
}

bool Args::flag(const std::string& name) {
  used_.insert(name);
  auto it = values_.find(name);
  if (it == values_.end()) return false;
  SMEZO_REQUIRE(it->second == "1" || it->second == "true" || it->second == "0" || it->second == "false",
                "option --%s is a switch (true/false), got '%s'", name.c_str(), it->second.c_str());
  return it->second == "1" || it->second == "true";
}

void Args::require_all_used() const {
  for (const auto& kv : values_)
    SMEZO_REQUIRE(used_.count(kv.first), "unknown option --%s (see 'smezo help')", kv.first.c_str());
}

}  // namespace smezo
