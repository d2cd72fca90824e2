// Run summary JSON, and the atomic file write every run output uses: "<path>.tmp.<pid>", fsync'ed and
// renamed over `path`, then the folder fsync'ed: a crash leaves the old file or the new one, at worst
// beside the temporary (run_dir.h removes those); a failed write removes it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace smezo {

// Atomically replaces `path` with `bytes`; throws smezo::Error naming the path and the system error.
void run_write_file_atomic(const std::string& path, const std::string& bytes);

// Readies an output file before any work (mkdir -p); throws naming `what`, `path` if it cannot be written.
void run_prepare_output_file(const std::string& path, const char* what);

// Adds, where absent: "written_at" (UTC, ISO 8601), "hostname", "peak_host_rss_bytes".
void summary_add_standard_fields(nlohmann::json* summary);

// Writes `summary` (a JSON object) atomically as 2-space-indented JSON; non-finite numbers as null.
void summary_write(const std::string& path, const nlohmann::json& summary);

}  // namespace smezo
