// Your own data: one data file read into records (field name -> value), before a task spec
// (task_spec.h) turns them into examples.
//
// Formats, by the file name's ending:
//   .jsonl .ndjson .json  JSON Lines: one JSON object per line; blank lines are skipped.
//                         Values: strings, numbers, booleans, lists of strings.
//   .csv                  RFC 4180: a header row names the columns; fields separated by ',',
//                         a field in double quotes may hold ',', '"' (doubled: "") and line
//                         breaks. Every value is a string.
//   .tsv                  a header row, fields separated by tabs, no quoting (GLUE's files):
//                         a field cannot hold a tab or a line break. Every value is a string.
// The file must be UTF-8 (a leading byte-order mark is skipped); "\r\n" line ends are fine.
//
// Strict: a line that is not JSON, a line that is not an object, bytes that are not UTF-8, a
// NUL byte anywhere (JSON's parser would take it for the end of the line), a CSV/TSV row with
// the wrong number of fields, a header without a column the spec uses, a path that is not a
// regular file (a directory, FIFO, device) -> a one-line smezo::Error "<file>:<line>: <what>"
// (line numbers 1-based; a CSV record spanning lines is named by its first line). With a
// problem list (--check-data) every problem of the file is collected and the bad rows are
// left out, instead of stopping at the first.
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

// The bytes of the regular file at path; `what` names it in errors ("data file", "task
// spec"). A directory, FIFO or device is refused before it is opened, naming what it is (a
// FIFO would block, /dev/zero never ends).
std::string data_read_file(const std::string& path, const char* what);

// Reads path. columns: fields a CSV/TSV header must name (checked on line 1; JSONL rows are
// checked field by field later, by the spec). problems == nullptr: the first problem throws;
// otherwise each problem is appended as one line and reading goes on with the next row.
DataFile data_file_read(const std::string& path, const std::vector<std::string>& columns,
                        std::vector<std::string>* problems = nullptr);

// A value as an error message shows it: JSON values as JSON (json_brief), CSV/TSV strings
// quoted with their bytes made printable.
std::string data_value_brief(const nlohmann::json& v, DataFormat format);

// Byte offset of the first byte in [0, s.size()) that does not belong to well-formed UTF-8,
// or std::string::npos when all of s is UTF-8.
size_t data_first_non_utf8(const std::string& s);

// Writes rows as JSON Lines (one object per line, keys in the order given), atomically
// enough for an export: the file is written whole or the error names it.
void data_file_write_jsonl(const std::string& path, const std::vector<nlohmann::ordered_json>& rows);

}  // namespace smezo
