// A numeric option's allowed values, said once for the library and the command line (they agree).
#pragma once

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace smezo {

struct ValueRange {
  bool integer = false;
  double lo = -HUGE_VAL, hi = HUGE_VAL;  // infinite: no bound on that side
  bool lo_open = false, hi_open = false;

  static ValueRange integers_from(double lo) { return {true, lo}; }
  static ValueRange at_least(double lo) { return {false, lo}; }
  static ValueRange above(double lo) { return {false, lo, HUGE_VAL, true}; }
  bool contains(double v) const;  // finite, within the bounds (and whole, for integers)
  std::string describe() const;   // "integer >= 1", "> 0", "in [0, 1)"
};

// "0.001", "2e-06", "1e+30": the shortest text that reads back as v.
std::string number_text(double v);

// One option's rule: its command-line name, its range, and how to read it from the options.
template <typename Options>
struct OptionRule {
  const char* option;  // "--batch"
  ValueRange range;
  double (*value)(const Options&);
};

// Where checked values came from, so a message names what the user gave: an option of the command
// line, or a field of a file (a seed log's run header, an adapter's config). The same checks run
// on both; only the names differ.
struct ValueOrigin {
  std::string file;  // "": the command line
  std::vector<std::pair<std::string, std::string>> fields = {};  // option -> the file's field, where not
                                                                  // the option's own name ("--lora-r" -> "r")
  std::string hint = {};  // what to do about a bad value from the file ("" for none)
  // "--lora-r" on the command line; "FILE: field \"r\"" from a file.
  std::string name(const std::string& option) const;
  // Throws "<name(option)> <problem>", with the hint.
  [[noreturn]] void fail(const std::string& option, const std::string& problem) const;
};

// Throws "--batch must be an integer >= 1, got 0" (or the field's name, from origin).
void require_in_range(const std::string& option, const ValueRange& range, double value,
                      const ValueOrigin& origin = {});

template <typename Options>
void check_option_rules(const std::vector<OptionRule<Options>>& rules, const Options& o,
                        const ValueOrigin& origin = {}) {
  for (const OptionRule<Options>& r : rules) require_in_range(r.option, r.range, r.value(o), origin);
}

}  // namespace smezo
