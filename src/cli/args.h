// Command-line options: "--name value" pairs and positional arguments, with typed getters that
// name the option in their errors, and a check that every option given was understood.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace smezo {

class Args {
 public:
  // Parses argv[first..argc). Options are "--name value" or "--name=value"; names listed in
  // switches take no value ("--resume").
  Args(int argc, char** argv, int first, const std::set<std::string>& switches = {});

  bool has(const std::string& name) const;
  std::string str(const std::string& name, const std::string& fallback);
  int64_t integer(const std::string& name, int64_t fallback);
  double number(const std::string& name, double fallback);
  bool flag(const std::string& name);
  const std::vector<std::string>& positional() const { return positional_; }
  // Throws for any option that no getter asked about (a typo must not pass silently).
  void require_all_used() const;

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> used_;
  std::vector<std::string> positional_;
};

}  // namespace smezo
