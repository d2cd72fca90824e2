// Small facts about paths (following links, as stat does) and names.
#pragma once

#include <string>

namespace smezo {

bool path_exists(const std::string& path);  // anything is there
bool is_file(const std::string& path);
bool is_dir(const std::string& path);
// For messages: "a regular file", "a directory", "a FIFO", ...; "" when nothing is there.
std::string path_kind(const std::string& path);
bool ends_with(const std::string& s, const std::string& suffix);
// path made absolute against the working directory, "." and ".." folded; "" stays "".
std::string absolute_path(const std::string& path);

}  // namespace smezo
