// Small facts about paths (following links, as stat does) and names, and a list cut at a separator.
#pragma once

#include <string>
#include <vector>

namespace smezo {

bool path_exists(const std::string& path);  // anything is there
bool is_file(const std::string& path);
bool is_dir(const std::string& path);
// For messages: "a regular file", "a directory", "a FIFO", ...; "" when nothing is there.
std::string path_kind(const std::string& path);
bool ends_with(const std::string& s, const std::string& suffix);
// path made absolute against the working directory, "." and ".." folded; "" stays "".
std::string absolute_path(const std::string& path);
// The folder a path names its last part in: "a/b" -> "a", "b" -> ".", "/b" -> "/".
std::string parent_dir(const std::string& path);
// text cut at each sep: "a,,b" -> {"a", "", "b"}; "" -> {}.
std::vector<std::string> split_on(const std::string& text, char sep);

}  // namespace smezo
