// Run summary JSON, and the atomic file write every run output uses.
//
// summary_write() writes a caller-built nlohmann::json to `path` atomically: the bytes go to
// "<path>.tmp.<pid>", are fsync'ed, and the temp file is renamed over `path` (then the folder
// is fsync'ed). A crash leaves either the old file or the new one, never half of one, plus at
// worst the temporary file (run/run_dir.h removes those); a failed write removes it.
// summary_add_standard_fields() fills in the fields every summary carries (time, host, peak
// host memory) without overwriting keys the caller already set.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace smezo {

// Atomically replace `path` with `bytes` (tmp + fsync + rename + fsync of the folder).
// Throws smezo::Error naming the path and the system error on failure.
void run_write_file_atomic(const std::string& path, const std::string& bytes);

// Readies an output file a command writes (every --out/--examples-out/--json FILE of every
// command goes through here, before any work): creates path's missing parent folders (as
// `mkdir -p`; a run folder is created the same way), then fails now, naming `what` and `path`
// (e.g. "--out", "eval.json"), when run_write_file_atomic(path) could not create its temporary
// file there, or when path exists and is not a regular file.
void run_prepare_output_file(const std::string& path, const char* what);

// Adds, where absent: "written_at" (UTC, ISO 8601), "hostname", "peak_host_rss_bytes".
void summary_add_standard_fields(nlohmann::json* summary);

// Writes `summary` (must be a JSON object) as pretty JSON (2-space indent, trailing newline),
// atomically. Non-finite numbers are written as null (JSON has no NaN).
void summary_write(const std::string& path, const nlohmann::json& summary);

}  // namespace smezo
