// Opening a file smezo reads from a user: every reader goes through input_open (or input_read,
// or MappedFile::open, which uses it), so every input is refused the same way:
//   - anything but a regular file ("seed log X is a FIFO, not a regular file"), without blocking
//     on a FIFO (opened O_NONBLOCK) and without reading a device that never ends (/dev/zero);
//   - a file larger than what its reader takes, before a byte is read ("data file X is 21474836480
//     bytes, more than the 1073741824 a data file may be"), so a huge file is not read whole;
//   - a file that cannot be opened: "cannot open seed log X: No such file or directory".
// `what` names the file's role in messages ("seed log", "data file", "tokenizer").
#pragma once

#include <cstdint>
#include <string>

namespace smezo {

// The size caps of the readers (what one run can need, with a wide margin).
constexpr int64_t kInputTextMaxBytes = int64_t{1} << 30;      // data files, seed logs, metrics, tokenizers
constexpr int64_t kInputSettingsMaxBytes = int64_t{64} << 20;  // small JSON files: specs, settings, configs

// A read-only descriptor of the regular file `path` (O_CLOEXEC), its size in *size; throws
// smezo::Error otherwise, saying what the path is. The caller closes it.
int input_open(const std::string& path, const char* what, int64_t* size);

// The whole regular file `path`, refused when larger than max_bytes (or if it grows past it).
std::string input_read(const std::string& path, const char* what, int64_t max_bytes);

// For messages: "a regular file", "a directory", "a FIFO", ... of a stat mode.
std::string input_mode_kind(unsigned mode);

}  // namespace smezo
