// Small facts about paths and names, written once: whether a path is a regular file or a
// folder (following links, as stat does), what else it is, and whether a name ends with a
// suffix.
#pragma once

#include <string>

namespace smezo {

// stat() succeeds: a file, folder or anything else is there.
bool path_exists(const std::string& path);
// A regular file (or a link to one).
bool is_file(const std::string& path);
// A folder (or a link to one).
bool is_dir(const std::string& path);
// What is at path (following links), as a message says it: "a regular file", "a directory",
// "a FIFO", "a character device", "a block device", "a socket"; "" when nothing is there.
std::string path_kind(const std::string& path);
// s ends with suffix ("" ends every string).
bool ends_with(const std::string& s, const std::string& suffix);

}  // namespace smezo
