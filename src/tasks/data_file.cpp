// Data files (JSON Lines, CSV, TSV) into records; see data_file.h for the formats and errors.
#include "tasks/data_file.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <unordered_set>

#include "common/check.h"
#include "common/file_util.h"
#include "common/input_file.h"
#include "formats/json_read.h"
#include "run/summary.h"  // run_write_file_atomic

namespace smezo {

using nlohmann::json;

// --- format and encoding

static bool has_extension(const std::string& path, const char* extension) {
  std::string lower = path;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ends_with(lower, extension);
}

DataFormat data_format_of(const std::string& path) {
  for (const char* jsonl : {".jsonl", ".ndjson", ".json"})
    if (has_extension(path, jsonl)) return DATA_JSONL;
  if (has_extension(path, ".csv")) return DATA_CSV;
  if (has_extension(path, ".tsv")) return DATA_TSV;
  throw_error("%s: unknown data file format ---> HINT: name the file .jsonl (JSON Lines), .csv or .tsv "
              "(a header row, then one record per row)", printable(path).c_str());
}

size_t data_first_non_utf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    size_t len = 0;
    uint32_t cp = 0, min = 0;
    if (c < 0x80) { i++; continue; }
    if ((c & 0xe0) == 0xc0) { len = 2; cp = c & 0x1f; min = 0x80; }
    else if ((c & 0xf0) == 0xe0) { len = 3; cp = c & 0x0f; min = 0x800; }
    else if ((c & 0xf8) == 0xf0) { len = 4; cp = c & 0x07; min = 0x10000; }
    else return i;
    if (i + len > n) return i;
    for (size_t k = 1; k < len; k++) {
      if ((p[i + k] & 0xc0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3f);
    }
    // overlong forms, UTF-16 surrogates and values past U+10FFFF are not UTF-8
    if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return i;
    i += len;
  }
  return std::string::npos;
}

std::string data_value_brief(const json& v, DataFormat format) {
  if (format != DATA_JSONL && v.is_string()) return "\"" + printable(v.get<std::string>(), 80) + "\"";
  return json_brief(v);
}

// --- reading

std::string data_read_file(const std::string& path, const char* what) {
  return input_read(path, what, kInputTextMaxBytes);
}

namespace {

// Where problems go: thrown at once, or collected (--check-data).
struct Problems {
  std::vector<std::string>* list;
  // Runs f; a smezo::Error it throws is collected (true: the row was bad) or rethrown.
  template <class F>
  bool bad(F&& f) {
    if (!list) { f(); return false; }
    try {
      f();
      return false;
    } catch (const Error& e) {
      list->push_back(e.what());
      return true;
    }
  }
};

// The file's lines (without "\n" or a final "\r"), after the UTF-8 byte-order mark; UTF-16/32 refused.
std::vector<std::string> split_lines(const std::string& path, std::string bytes) {
  auto starts = [&](const char* bom, size_t n) { return bytes.size() >= n && bytes.compare(0, n, bom, n) == 0; };
  SMEZO_REQUIRE(!starts("\xff\xfe", 2) && !starts("\xfe\xff", 2),
                "%s:1: the file is UTF-16 (it starts with a UTF-16 byte-order mark), not UTF-8 ---> HINT: "
                "convert it, e.g. iconv -f UTF-16 -t UTF-8 IN > OUT", printable(path).c_str());
  if (starts("\xef\xbb\xbf", 3)) bytes.erase(0, 3);
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t nl = bytes.find('\n', start);
    std::string line = bytes.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return lines;
}

// A line's bytes are text: UTF-8 and no NUL (JSON's parser would silently end the line there).
void require_text(const std::string& path, int64_t line_no, const std::string& line) {
  const size_t nul = line.find('\0');
  SMEZO_REQUIRE(nul == std::string::npos, "%s:%lld: byte 0x00 (NUL) at column %zu: a text file holds no NUL bytes "
                "(is it a binary file, or one cut short by a crash?) ---> HINT: remove the NUL bytes, e.g. "
                "tr -d '\\000' < IN > OUT", printable(path).c_str(), static_cast<long long>(line_no), nul + 1);
  const size_t at = data_first_non_utf8(line);
  SMEZO_REQUIRE(at == std::string::npos,
                "%s:%lld: byte 0x%02x at column %zu is not UTF-8 (is the file in another encoding?) ---> HINT: "
                "convert it, e.g. iconv -f LATIN1 -t UTF-8 IN > OUT",
                printable(path).c_str(), static_cast<long long>(line_no),
                static_cast<unsigned>(static_cast<unsigned char>(line[at])), at + 1);
}

bool is_blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

void read_jsonl(const std::vector<std::string>& lines, DataFile* out, Problems problems) {
  const std::string& path = out->path;
  for (size_t i = 0; i < lines.size(); i++) {
    const std::string& line = lines[i];
    const int64_t line_no = static_cast<int64_t>(i) + 1;
    if (is_blank(line)) continue;
    DataRow row;
    row.line = line_no;
    const bool bad = problems.bad([&] {
      require_text(path, line_no, line);
      row.fields = json_parse_strict(line.data(), line.data() + line.size(),
                                     format_string("%s:%lld: malformed JSON line", printable(path).c_str(),
                                                   static_cast<long long>(line_no)));
      SMEZO_REQUIRE(row.fields.is_object(), "%s:%lld: expected a JSON object, got %s", printable(path).c_str(),
                    static_cast<long long>(line_no), json_brief(row.fields).c_str());
    });
    if (!bad) out->rows.push_back(std::move(row));
  }
}

// One CSV record (RFC 4180) from lines[*i] (a quoted field may span lines); advances *i past it.
std::vector<std::string> csv_record(const std::string& path, const std::vector<std::string>& lines, size_t* i) {
  const int64_t first = static_cast<int64_t>(*i) + 1;
  std::vector<std::string> fields(1);
  std::string line = lines[*i];
  size_t p = 0;
  bool quoted = false, was_quoted = false;
  while (true) {
    if (p == line.size()) {
      if (!quoted) break;
      SMEZO_REQUIRE(*i + 1 < lines.size(), "%s:%lld: a quoted field is not closed before the end of the file",
                    printable(path).c_str(), static_cast<long long>(first));
      fields.back() += '\n';
      line = lines[++*i];
      require_text(path, static_cast<int64_t>(*i) + 1, line);
      p = 0;
      continue;
    }
    const char c = line[p++];
    if (quoted) {
      if (c != '"') fields.back() += c;
      else if (p < line.size() && line[p] == '"') { fields.back() += '"'; p++; }
      else quoted = false;
    } else if (c == ',') {
      fields.emplace_back();
      was_quoted = false;
    } else if (c == '"' && fields.back().empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else {
      SMEZO_REQUIRE(!was_quoted && c != '"',
                    "%s:%lld: stray '\"' in a field ---> HINT: a field holding '\"' is quoted whole and the quote "
                    "doubled: \"say \"\"hi\"\"\"", printable(path).c_str(), static_cast<long long>(*i + 1));
      fields.back() += c;
    }
  }
  ++*i;
  return fields;
}

std::vector<std::string> tsv_record(const std::vector<std::string>& lines, size_t* i) {
  const std::string& line = lines[(*i)++];
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  return fields;
}

std::vector<std::string> table_header(const std::string& path, const std::vector<std::string>& lines,
                                      DataFormat format, const std::vector<std::string>& columns) {
  SMEZO_REQUIRE(!lines.empty(), "%s is empty (expected a header row naming the columns, then the rows)",
                printable(path).c_str());
  require_text(path, 1, lines[0]);
  size_t i = 0;
  std::vector<std::string> header = format == DATA_CSV ? csv_record(path, lines, &i) : tsv_record(lines, &i);
  std::string names;  // for the messages: the first 20
  for (size_t k = 0; k < header.size() && k < 20; k++)
    names += (k == 0 ? "\"" : ", \"") + printable(header[k], 40) + "\"";
  if (header.size() > 20) names += format_string(", ... (%zu in all)", header.size());
  for (const std::string& c : columns) {
    const bool found = std::find(header.begin(), header.end(), c) != header.end();
    SMEZO_REQUIRE(found, "%s:1: the header has no column \"%s\" (columns: %s; separated by %s)",
                  printable(path).c_str(), printable(c).c_str(), names.c_str(),
                  format == DATA_CSV ? "commas" : "tabs");
  }
  std::unordered_set<std::string> seen;  // linear in the columns: a header of a million is read in a blink
  for (const std::string& h : header)
    SMEZO_REQUIRE(seen.insert(h).second, "%s:1: the header names column \"%s\" twice", printable(path).c_str(),
                  printable(h).c_str());
  return header;
}

void read_table(const std::vector<std::string>& lines, const std::vector<std::string>& columns, DataFile* out,
                Problems problems) {
  const std::string& path = out->path;
  const std::vector<std::string> header = table_header(path, lines, out->format, columns);
  size_t i = 1;
  while (i < lines.size()) {
    if (is_blank(lines[i])) { i++; continue; }
    DataRow row;
    row.line = static_cast<int64_t>(i) + 1;
    const size_t before = i;
    const bool bad = problems.bad([&] {
      require_text(path, row.line, lines[i]);
      std::vector<std::string> fields = out->format == DATA_CSV ? csv_record(path, lines, &i) : tsv_record(lines, &i);
      SMEZO_REQUIRE(fields.size() == header.size(), "%s:%lld: expected %zu %s fields (the header's), got %zu",
                    printable(path).c_str(), static_cast<long long>(row.line), header.size(),
                    out->format == DATA_CSV ? "comma-separated" : "tab-separated", fields.size());
      row.fields = json::object();
      for (size_t k = 0; k < header.size(); k++) row.fields[header[k]] = fields[k];
    });
    if (i == before) i++;  // a bad record: go on with the next line
    if (!bad) out->rows.push_back(std::move(row));
  }
}

}  // namespace

DataFile data_file_read(const std::string& path, const std::vector<std::string>& columns,
                        std::vector<std::string>* problems) {
  DataFile out;
  out.path = path;
  Problems sink{problems};
  sink.bad([&] {
    int64_t size = 0;
    ::close(input_open(path, "data file", &size));  // before the name's ending: say what it is
    out.format = data_format_of(path);
    const std::vector<std::string> lines = split_lines(path, data_read_file(path, "data file"));
    if (out.format == DATA_JSONL) read_jsonl(lines, &out, sink);
    else read_table(lines, columns, &out, sink);
  });
  return out;
}

void data_file_write_jsonl(const std::string& path, const std::vector<nlohmann::ordered_json>& rows) {
  std::string text;
  for (const nlohmann::ordered_json& r : rows) text += r.dump(-1, ' ', false) + '\n';
  run_write_file_atomic(path, text);  // a failed write leaves no temporary file
}

}  // namespace smezo
