// SHA-256 of a file's bytes (libmd's, the BSD message-digest library: Debian's libmd-dev). It names
// the base GGUF of a --tune scales run in the seed log (base_sha256) and in the export's sidecar, so
// a resume, a replay or a reader can tell that a file is the one the run started from.
#pragma once

#include <string>

namespace smezo {

// The lowercase hex SHA-256 (64 characters) of the regular file `path`, read in chunks (constant
// memory); throws smezo::Error naming the file when it cannot be opened or read (input_open's rules).
std::string file_sha256_hex(const std::string& path);

}  // namespace smezo
