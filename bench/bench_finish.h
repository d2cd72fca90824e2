// The open and close of a bench run's --json file and verdict, shared by `smezo bench --kernel linear`
// (bench/linear_bench.cu) and `--kernel excess` (bench/excess_bench.cu): bench_open_json, then
// bench_finish runs the parts, closes the file even when a part throws, prints the validation line
// and returns the exit status (0 when every check passed).
#pragma once

#include <cstdio>
#include <string>

#include "common/check.h"

namespace smezo {
namespace bench {

// The --json file for writing, or nullptr when `path` is empty.
inline std::FILE* bench_open_json(const std::string& path) {
  if (path.empty()) return nullptr;
  std::FILE* f = std::fopen(path.c_str(), "w");
  SMEZO_REQUIRE(f != nullptr, "bench: cannot write --json %s", path.c_str());
  return f;
}

// Runs parts(), then closes json (also on a throw) and prints "validation: PASS (<passed>)" or FAIL.
template <typename Parts>
int bench_finish(std::FILE*& json, const bool& all_ok, const char* passed, Parts parts) {
  try {
    parts();
  } catch (...) {
    if (json) std::fclose(json);
    json = nullptr;
    throw;
  }
  if (json) std::fclose(json);
  json = nullptr;
  std::printf("\nvalidation: %s%s%s\n", all_ok ? "PASS (" : "FAIL (see FAIL lines above)", all_ok ? passed : "",
              all_ok ? ")" : "");
  std::fflush(stdout);
  return all_ok ? 0 : 1;
}

}  // namespace bench
}  // namespace smezo
