// Locating the shared public assets.
#include "common/assets.h"

#include <cstdlib>

namespace smezo {

std::string assets_dir() {
  const char* env = std::getenv("SMEZO_ASSETS");
  if (env && *env) return env;
  return "../shared/assets";
}

std::string asset_path(const std::string& relative) { return assets_dir() + "/" + relative; }

}  // namespace smezo
