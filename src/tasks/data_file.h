// Your own data: one data file read into records (field name -> value) for a task spec (task_spec.h).
// Formats, by the file name's ending:
//   .jsonl .ndjson .json  JSON Lines: one JSON object per line; blank lines are skipped.
//                         Values: strings, numbers, booleans, lists of strings.
//   .csv                  RFC 4180 with a header row naming the columns: a double-quoted field
//                         may hold ',', '"' (as "") and line breaks. Every value is a string.
//   .tsv                  a header row, tab-separated fields, no quoting (GLUE's files): a
//                         field cannot hold a tab or a line break. Every value is a string.
// UTF-8 (a leading byte-order mark is skipped); "\r\n" line ends are fine.
// Strict: a non-JSON or non-object line, non-UTF-8 bytes, a NUL byte anywhere (JSON's parser would
// take it for the end of the line), a CSV/TSV row with the wrong field count, a header lacking a
// column the spec uses, a path that is not a regular file -> a one-line smezo::Error "<file>:<line>:
// <what>" (1-based; a multi-line CSV record by its first line). With a problem list (--check-data)
// every problem is collected and the bad rows are left out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace smezo {

enum DataFormat { DATA_JSONL, DATA_CSV, DATA_TSV };

// From the file name's ending (case-insensitive); anything else throws, naming the endings.
DataFormat data_format_of(const std::string& path);

struct DataRow {
  int64_t line = 0;       // 1-based line of the record's first byte
  nlohmann::json fields;  // a JSON object: field name -> value (CSV/TSV: strings)
};

struct DataFile {
  std::string path;
  DataFormat format = DATA_JSONL;
  std::vector<DataRow> rows;  // in file order
};

// The bytes of the regular file at path (`what` names it in errors); a FIFO or device is refused unopened.
std::string data_read_file(const std::string& path, const char* what);

// Reads path (columns: a CSV/TSV header's); problems == nullptr: the first throws, else collected.
DataFile data_file_read(const std::string& path, const std::vector<std::string>& columns,
                        std::vector<std::string>* problems = nullptr);

// A value as errors show it: JSON as JSON (json_brief), CSV/TSV strings quoted and made printable.
std::string data_value_brief(const nlohmann::json& v, DataFormat format);

// Offset of the first byte of s not in well-formed UTF-8; npos when all of s is UTF-8.
size_t data_first_non_utf8(const std::string& s);

// Writes rows as JSON Lines (keys in the order given): the whole file, or an error naming it.
void data_file_write_jsonl(const std::string& path, const std::vector<nlohmann::ordered_json>& rows);

}  // namespace smezo
