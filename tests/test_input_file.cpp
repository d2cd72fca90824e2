// src/common/input_file.h, the one way smezo opens a file it reads: regular files only (a FIFO is
// refused without blocking, a device without being read), a size cap checked before a byte is read,
// and messages that name the file's role, its path and what it is.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>

#include <chrono>
#include <filesystem>

#include "common/input_file.h"
#include "common/mapped_file.h"
#include "test_util.h"

using smezo::input_read;
using smezo_test::error_of;
using smezo_test::make_temp_dir;
using smezo_test::write_file;
using testing::HasSubstr;

namespace {

double seconds_of(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST(InputFile, ReadsARegularFileWhole) {
  const std::string dir = make_temp_dir("input_file");
  write_file(dir + "/a.txt", std::string("one\ntwo\0three", 13));
  EXPECT_EQ(input_read(dir + "/a.txt", "seed log", 100), std::string("one\ntwo\0three", 13));
  write_file(dir + "/empty.txt", "");
  EXPECT_EQ(input_read(dir + "/empty.txt", "seed log", 0), "");
  const std::string big(100000, 'x');  // more than one read(2) may return
  write_file(dir + "/big.txt", big);
  EXPECT_EQ(input_read(dir + "/big.txt", "data file", 100000), big);
}

// A FIFO without a writer, a directory, /dev/zero and a socket: one line each, saying what the path
// is, within a second (the FIFO's open does not wait for a writer, /dev/zero is not read).
TEST(InputFile, RefusesWhatIsNotARegularFileAtOnce) {
  const std::string dir = make_temp_dir("input_file");
  const std::string fifo = dir + "/fifo", zero = dir + "/zero", sock = dir + "/sock";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(symlink("/dev/zero", zero.c_str()), 0);
  const std::pair<std::string, std::string> cases[] = {
      {fifo, "seed log " + fifo + " is a FIFO, not a regular file"},
      {dir, "seed log " + dir + " is a directory, not a regular file"},
      {zero, "seed log " + zero + " is a character device, not a regular file"},
  };
  for (const auto& [path, says] : cases) {
    std::string msg;
    EXPECT_LT(seconds_of([&] { msg = error_of([&] { input_read(path, "seed log", 1 << 20); }); }), 5.0) << path;
    EXPECT_THAT(msg, HasSubstr(says));
    EXPECT_THAT(msg, HasSubstr("not a regular file ---> HINT: smezo reads a"));
    EXPECT_THAT(msg, HasSubstr("whole: give a regular file (a pipe's or device's output: write it to a file first)"));
    EXPECT_TRUE(smezo_test::is_one_line(msg));
    // the mapped readers (models, tokenizers) refuse them the same way
    EXPECT_THAT(error_of([&] { smezo::MappedFile::open(path, "GGUF file"); }),
                HasSubstr("GGUF file " + path + " is a"));
  }
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  if (sock.size() < sizeof addr.sun_path && ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    EXPECT_THAT(error_of([&] { input_read(sock, "tokenizer", 1 << 20); }),
                HasSubstr("tokenizer " + sock + " is a socket, not a regular file"));
  }
  ::close(s);
  EXPECT_THAT(error_of([&] { input_read(dir + "/missing", "metrics log", 10); }),
              HasSubstr("cannot open metrics log " + dir + "/missing: No such file or directory"));
}

// A file above its reader's cap is refused from its size alone: a sparse 20 GB file in a blink.
TEST(InputFile, RefusesAFileAboveItsCapBeforeReadingIt) {
  const std::string dir = make_temp_dir("input_file");
  const std::string path = dir + "/huge.jsonl";
  write_file(path, "");
  ASSERT_EQ(::truncate(path.c_str(), int64_t{20} << 30), 0);
  std::string msg;
  EXPECT_LT(seconds_of([&] { msg = error_of([&] { input_read(path, "data file", smezo::kInputTextMaxBytes); }); }),
            2.0);
  EXPECT_THAT(msg, HasSubstr("data file " + path + " is 21474836480 bytes, more than the 1073741824 a data file "
                             "may be"));
  write_file(path, "12345");
  EXPECT_THAT(error_of([&] { input_read(path, "run summary", 4); }),
              HasSubstr("is 5 bytes, more than the 4 a run summary may be"));
}
