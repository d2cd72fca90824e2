// Data files (src/tasks/data_file.h): JSON Lines, CSV (RFC 4180 quoting) and TSV read into
// records in order with their line numbers; every malformed input is a one-line error naming
// the file and line; the collecting mode (--check-data) reports all problems of a file.
// Inputs are random strings from a seeded generator (SMEZO_TEST_SEED), written by a reference
// writer in the test and read back: the records must come back byte for byte. What is not a
// regular file (a directory, a FIFO, /dev/zero) is refused before it is opened.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "common/check.h"
#include "tasks/data_file.h"
#include "tasks/task_spec.h"
#include "test_util.h"

using namespace smezo;
using nlohmann::json;
using smezo_test::error_of;
using testing::HasSubstr;

namespace {

// Random UTF-8 text holding the characters that matter to the formats: separators, quotes,
// braces, spaces, line breaks (unless forbidden), accented letters and an emoji.
std::string random_text(std::mt19937& rng, bool line_breaks, bool tabs) {
  static const std::vector<std::string> pieces = {"a", "Z", "7", " ", ",", "\"", "'", "{", "}", "\\", "é", "ß",
                                                  "中", "😀", "\n", "\r\n", "\t", "x y", ";"};
  std::string s;
  const int n = 1 + static_cast<int>(rng() % 12);
  while (static_cast<int>(s.size()) < n) {
    const std::string& p = pieces[rng() % pieces.size()];
    if ((!line_breaks && (p == "\n" || p == "\r\n")) || (!tabs && p == "\t")) continue;
    s += p;
  }
  return s;
}

// RFC 4180: quote every field that holds ',', '"', or a line break; double the quotes.
std::string csv_field(const std::string& f) {
  if (f.find_first_of(",\"\r\n") == std::string::npos) return f;
  std::string q = "\"";
  for (char c : f) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

class DataFileTest : public testing::Test {
 protected:
  void SetUp() override { dir_ = smezo_test::make_temp_dir("data_file"); }
  std::string put(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    smezo_test::write_file(path, bytes);
    return path;
  }
  std::string dir_;
};

}  // namespace

TEST_F(DataFileTest, JsonLinesComeBackInOrderWithTheirLines) {
  std::mt19937 rng(static_cast<uint32_t>(smezo_test::mixed_seed(241)));
  std::vector<json> written;
  std::vector<int64_t> lines;
  std::string text;
  int64_t line = 0;
  for (int i = 0; i < 40; i++) {
    if (rng() % 4 == 0) {  // blank lines are skipped, yet counted
      text += rng() % 2 ? "\n" : "  \r\n";
      line++;
    }
    json r = {{"text", random_text(rng, true, true)},
              {"n", static_cast<int64_t>(rng() % 1000) - 500},
              {"flag", rng() % 2 == 0},
              {"refs", {random_text(rng, true, true), random_text(rng, false, false)}}};
    text += r.dump() + (rng() % 2 ? "\n" : "\r\n");
    written.push_back(r);
    lines.push_back(++line);
  }
  const DataFile f = data_file_read(put("d.jsonl", "\xef\xbb\xbf" + text), {});
  EXPECT_EQ(f.format, DATA_JSONL);
  ASSERT_EQ(f.rows.size(), written.size()) << smezo_test::seed_note();
  for (size_t i = 0; i < written.size(); i++) {
    EXPECT_EQ(f.rows[i].fields, written[i]) << i << " " << smezo_test::seed_note();
    EXPECT_EQ(f.rows[i].line, lines[i]) << i;
  }
}

TEST_F(DataFileTest, CsvQuotingRoundTrips) {
  std::mt19937 rng(static_cast<uint32_t>(smezo_test::mixed_seed(242)));
  const std::vector<std::string> header = {"sentence", "label", "note, quoted"};
  std::string text;
  for (size_t k = 0; k < header.size(); k++) text += (k ? "," : "") + csv_field(header[k]);
  text += "\r\n";
  int64_t line = 2;
  std::vector<std::vector<std::string>> written;
  std::vector<int64_t> lines;
  for (int i = 0; i < 60; i++) {
    std::vector<std::string> row;
    std::string rendered;
    for (size_t k = 0; k < header.size(); k++) {
      row.push_back(random_text(rng, true, true));
      rendered += (k ? "," : "") + csv_field(row.back());
    }
    // a quoted "\r\n" inside a field reads back as "\n" (lines are split on "\n", and "\r"
    // before it is a line end): compare against that
    for (std::string& f : row)
      for (size_t p; (p = f.find("\r\n")) != std::string::npos;) f.erase(p, 1);
    written.push_back(row);
    lines.push_back(line);
    for (char c : rendered) line += c == '\n';
    text += rendered + "\n";
    line++;
  }
  const DataFile f = data_file_read(put("d.csv", text), {"sentence", "label"});
  ASSERT_EQ(f.rows.size(), written.size()) << smezo_test::seed_note();
  for (size_t i = 0; i < written.size(); i++) {
    for (size_t k = 0; k < header.size(); k++)
      EXPECT_EQ(f.rows[i].fields.at(header[k]).get<std::string>(), written[i][k]) << i << "," << k << " "
                                                                                   << smezo_test::seed_note();
    EXPECT_EQ(f.rows[i].line, lines[i]) << i;
  }
}

TEST_F(DataFileTest, TsvSplitsOnTabsAndKeepsQuotes) {
  std::mt19937 rng(static_cast<uint32_t>(smezo_test::mixed_seed(243)));
  std::string text = "sentence\tlabel\n";
  std::vector<std::pair<std::string, std::string>> written;
  for (int i = 0; i < 30; i++) {
    written.push_back({random_text(rng, false, false), std::to_string(rng() % 2)});
    text += written.back().first + "\t" + written.back().second + "\n";
  }
  const DataFile f = data_file_read(put("d.TSV", text), {"sentence"});
  EXPECT_EQ(f.format, DATA_TSV);
  ASSERT_EQ(f.rows.size(), written.size());
  for (size_t i = 0; i < written.size(); i++) {
    EXPECT_EQ(f.rows[i].fields.at("sentence"), written[i].first) << i << " " << smezo_test::seed_note();
    EXPECT_EQ(f.rows[i].fields.at("label"), written[i].second) << i;
    EXPECT_EQ(f.rows[i].line, static_cast<int64_t>(i) + 2);
  }
}

TEST(DataFileUtf8, FindsTheFirstByteThatIsNotUtf8) {
  EXPECT_EQ(data_first_non_utf8("plain, é 中 😀"), std::string::npos);
  EXPECT_EQ(data_first_non_utf8("caf\xe9!"), 3u);           // Latin-1 é
  EXPECT_EQ(data_first_non_utf8("ab\xc0\xaf"), 2u);         // overlong '/'
  EXPECT_EQ(data_first_non_utf8("x\xed\xa0\x80"), 1u);      // a UTF-16 surrogate
  EXPECT_EQ(data_first_non_utf8("\xf4\x90\x80\x80"), 0u);   // past U+10FFFF
  EXPECT_EQ(data_first_non_utf8("ok\xe4\xb8"), 2u);         // cut short
  EXPECT_EQ(data_first_non_utf8("\x80"), 0u);               // a lone continuation byte
}

TEST_F(DataFileTest, EachBadInputIsOneLineNamingFileAndLine) {
  const std::string kNul(1, '\0');
  struct Case {
    const char* name;
    std::string bytes;
    std::string expected;  // after "<path>"
  };
  const std::string ok = "{\"a\": \"x\"}\n";
  const Case cases[] = {
      {"notjson.jsonl", ok + ok + "{\"a\": \n", ":3: malformed JSON line"},
      {"array.jsonl", ok + "[1, 2]\n", ":2: expected a JSON object, got [1,2]"},
      {"latin1.jsonl", ok + "{\"a\": \"caf\xe9\"}\n", ":2: byte 0xe9 at column 11 is not UTF-8"},
      {"utf16.jsonl", std::string("\xff\xfe{\0\"\0", 6), ":1: the file is UTF-16"},
      {"latin1.csv", "a,b\nx,caf\xe9\n", ":2: byte 0xe9 at column 6 is not UTF-8"},
      {"latin1_in_quotes.csv", "a,b\nx,\"two\nlin\xe9s\"\n", ":3: byte 0xe9 at column 4 is not UTF-8"},
      {"fields.csv", "a,b\n1,2\n1,2,3\n", ":3: expected 2 comma-separated fields (the header's), got 3"},
      {"column.csv", "a,c\n1,2\n", ":1: the header has no column \"b\" (columns: \"a\", \"c\"; separated by commas)"},
      {"twice.csv", "a,b,a\n1,2,3\n", ":1: the header names column \"a\" twice"},
      {"unclosed.csv", "a,b\n1,\"open\n2,3\n", ":2: a quoted field is not closed before the end of the file"},
      {"stray.csv", "a,b\n1,x\"y\n", ":2: stray '\"' in a field"},
      {"fields.tsv", "a\tb\n1\t2\n1\n", ":3: expected 2 tab-separated fields (the header's), got 1"},
      {"empty.csv", "", " is empty (expected a header row"},
      // a NUL after a record would end the line for JSON's parser; after a space it is garbage
      {"nul_after.jsonl", ok + "{\"a\": \"x\"}" + kNul + "{junk\n", ":2: byte 0x00 (NUL) at column 11"},
      {"junk_after.jsonl", ok + "{\"a\": \"x\"} {junk\n", ":2: malformed JSON line"},
      {"nul_first.jsonl", kNul + ok, ":1: byte 0x00 (NUL) at column 1"},
      {"nul.csv", "a,b\nx,y" + kNul + "z\n", ":2: byte 0x00 (NUL) at column 4"},
      {"nul_in_quotes.csv", "a,b\nx,\"two\nli" + kNul + "nes\"\n", ":3: byte 0x00 (NUL) at column 3"},
      {"nul.tsv", "a\tb\nx\t" + kNul + "\n", ":2: byte 0x00 (NUL) at column 3"},
  };
  for (const Case& c : cases) {
    const std::string path = put(c.name, c.bytes);
    const std::string msg = error_of([&] { data_file_read(path, {"a", "b"}); });
    EXPECT_THAT(msg, HasSubstr(path + c.expected)) << c.name;
    EXPECT_TRUE(smezo_test::is_one_line(msg)) << c.name;
  }
  EXPECT_THAT(error_of([&] { data_file_read(put("d.txt", "x"), {}); }), HasSubstr("unknown data file format"));
  EXPECT_THAT(error_of([&] { data_file_read(dir_ + "/missing.jsonl", {}); }),
              HasSubstr("cannot open data file " + dir_ + "/missing.jsonl"));
}

TEST_F(DataFileTest, CollectingModeReportsEveryProblemAndKeepsTheGoodRows) {
  const std::string path = put("mixed.jsonl", "{\"a\": \"1\"}\nnot json\n{\"a\": \"2\"}\n[3]\n\n{\"a\": \"\xff\"}\n"
                                              "{\"a\": \"4\"}\n");
  std::vector<std::string> problems;
  const DataFile f = data_file_read(path, {}, &problems);
  ASSERT_EQ(problems.size(), 3u) << testing::PrintToString(problems);
  EXPECT_THAT(problems[0], HasSubstr(path + ":2: malformed JSON line"));
  EXPECT_THAT(problems[1], HasSubstr(path + ":4: expected a JSON object"));
  EXPECT_THAT(problems[2], HasSubstr(path + ":6: byte 0xff"));
  ASSERT_EQ(f.rows.size(), 3u);
  EXPECT_EQ(f.rows[2].fields.at("a"), "4");
  EXPECT_EQ(f.rows[2].line, 7);
  // the same file without a problem list stops at the first
  EXPECT_THAT(error_of([&] { data_file_read(path, {}); }), HasSubstr(path + ":2:"));
  const std::string csv = put("mixed.csv", "a,b\n1,2\n1\n3,4\n5,6,7\n");
  problems.clear();
  EXPECT_EQ(data_file_read(csv, {"a"}, &problems).rows.size(), 2u);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_THAT(problems[0], HasSubstr(csv + ":3:"));
  EXPECT_THAT(problems[1], HasSubstr(csv + ":5:"));
}

// A directory, a FIFO and a character device as a data file or a task spec: one line saying
// what the path is. The FIFO and /dev/zero (a link named .jsonl) go through the command under
// a timeout, so the test ends even if they were opened: the open of a FIFO blocks until a
// writer comes, and /dev/zero never ends.
TEST_F(DataFileTest, WhatIsNotARegularFileIsRefusedSayingWhatItIs) {
  const std::string folder = dir_ + "/folder.jsonl";
  std::filesystem::create_directory(folder);
  std::string msg = error_of([&] { data_file_read(folder, {}); });
  EXPECT_THAT(msg, HasSubstr("data file " + folder + " is a directory, not a regular file"));
  EXPECT_TRUE(smezo_test::is_one_line(msg));
  msg = error_of([&] { task_spec_read(folder); });
  EXPECT_THAT(msg, HasSubstr("task spec " + folder + " is a directory, not a regular file"));
  std::vector<std::string> problems;
  data_file_read(folder, {}, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], HasSubstr("is a directory"));

  const std::string fifo = dir_ + "/fifo.jsonl", zero = dir_ + "/zero.jsonl";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(symlink("/dev/zero", zero.c_str()), 0);
  const std::string spec = put("s.json", R"({"name": "s", "prompt": "{t}", "candidates": [" a", " b"],
      "label": {"field": "l"}})");
  const std::string check = "timeout 60 " + smezo_test::smezo_binary() + " train --check-data";
  const std::pair<std::string, std::string> cases[] = {
      {" --task-spec " + spec + " --train-file " + fifo, "data file " + fifo + " is a FIFO, not a regular file"},
      {" --task-spec " + spec + " --train-file " + zero, "data file " + zero + " is a character device"},
      {" --task-spec " + fifo + " --train-file " + zero, "task spec " + fifo + " is a FIFO"},
      {" --task-spec " + zero + " --train-file " + fifo, "task spec " + zero + " is a character device"},
  };
  for (const auto& [args, says] : cases) {
    std::string out;
    EXPECT_EQ(smezo_test::run_command(check + args, &out), 1) << args << "\n" << out;  // 124: timed out
    EXPECT_THAT(out, HasSubstr(says)) << args;
  }
}
