// The text of `smezo --version` (see version.cpp).
#pragma once

#include <string>

namespace smezo {

// "smezo 0.1.0 (commit 39b9767a1c2d)"; the commit is baked in at build time.
std::string version_text();

}  // namespace smezo
