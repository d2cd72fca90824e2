// Where the public assets (tokenizers, stories260K, task data) live: $SMEZO_ASSETS when set, otherwise
// the first existing folder of:
//   1. ../shared/assets relative to the working directory (smezo run from the repository root);
//   2. <the binary's folder (/proc/self/exe) or one of its next three parents>/../shared/assets.
// When none exists, assets_dir() returns candidate 1, so opening a file there names it.
#pragma once

#include <string>
#include <vector>

namespace smezo {

std::string assets_dir();
// assets_dir() + "/" + relative, e.g. asset_path("models/stories260K.bin").
std::string asset_path(const std::string& relative);
bool assets_found();
// The folders tried, in order (just $SMEZO_ASSETS when it is set).
std::vector<std::string> assets_candidates();
// For errors: "smezo looked for the assets folder at A, B and ...", or "$SMEZO_ASSETS is DIR".
std::string assets_search_note();

}  // namespace smezo
