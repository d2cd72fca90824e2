// Where the public assets (tokenizers, stories260K, task data) live.
//
// $SMEZO_ASSETS when set (used as given). Otherwise the first existing folder of:
//   1. ../shared/assets relative to the working directory (the layout beside every checkout,
//      when smezo runs from the repository root);
//   2. <a folder holding the running binary, or one of its next three parents>/../shared/assets
//      (found through /proc/self/exe, so build/smezo works from any working directory).
// When none exists, assets_dir() returns candidate 1, and whatever is opened there fails with
// an error naming the file; assets_search_note() says where the search looked.
#pragma once

#include <string>
#include <vector>

namespace smezo {

std::string assets_dir();
// assets_dir() + "/" + relative, e.g. asset_path("models/stories260K.bin").
std::string asset_path(const std::string& relative);
// Whether assets_dir() exists.
bool assets_found();
// The folders tried, in order (just $SMEZO_ASSETS when it is set).
std::vector<std::string> assets_candidates();
// One clause for errors about a missing default asset: "smezo looked for the assets folder at
// ../shared/assets, /opt/x/../shared/assets and ...", or "$SMEZO_ASSETS is DIR".
std::string assets_search_note();

}  // namespace smezo
