// Locating the shared public assets (see assets.h).
#include "common/assets.h"

#include <unistd.h>

#include <cstdlib>

#include "common/file_util.h"

namespace smezo {

namespace {

std::string running_binary_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  return parent_dir(std::string(buf, static_cast<size_t>(n)));
}

}  // namespace

std::vector<std::string> assets_candidates() {
  const char* env = std::getenv("SMEZO_ASSETS");
  if (env && *env) return {env};
  std::vector<std::string> out = {"../shared/assets"};
  std::string dir = running_binary_dir();
  for (int up = 0; up < 4 && !dir.empty() && dir != "/"; up++, dir = parent_dir(dir)) {
    const std::string up_dir = parent_dir(dir);
    const std::string candidate = (up_dir == "/" ? "" : up_dir) + "/shared/assets";
    bool seen = false;
    for (const std::string& c : out) seen = seen || c == candidate;
    if (!seen) out.push_back(candidate);
  }
  return out;
}

std::string assets_dir() {
  const std::vector<std::string> candidates = assets_candidates();
  for (const std::string& c : candidates)
    if (is_dir(c)) return c;
  return candidates.front();
}

bool assets_found() { return is_dir(assets_dir()); }

std::string asset_path(const std::string& relative) { return assets_dir() + "/" + relative; }

std::string assets_search_note() {
  const char* env = std::getenv("SMEZO_ASSETS");
  if (env && *env) return "$SMEZO_ASSETS is " + std::string(env);
  std::string tried;
  const std::vector<std::string> candidates = assets_candidates();
  for (size_t i = 0; i < candidates.size(); i++)
    tried += (i == 0 ? "" : i + 1 == candidates.size() ? " and " : ", ") + candidates[i];
  return "smezo looked for the assets folder at " + tried;
}

}  // namespace smezo
