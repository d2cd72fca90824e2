// Small facts about paths and names, written once: whether a path is a regular file or a
// folder (following links, as stat does), and whether a name ends with a suffix.
#pragma once

#include <string>

namespace smezo {

// stat() succeeds: a file, folder or anything else is there.
bool path_exists(const std::string& path);
// A regular file (or a link to one).
bool is_file(const std::string& path);
// A folder (or a link to one).
bool is_dir(const std::string& path);
// s ends with suffix ("" ends every string).
bool ends_with(const std::string& s, const std::string& suffix);

}  // namespace smezo
