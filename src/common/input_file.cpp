// Opening and reading the files smezo takes from a user (see input_file.h).
#include "common/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/check.h"
#include "common/file_util.h"

namespace smezo {

std::string input_mode_kind(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "neither a file nor a directory";
}

namespace {

[[noreturn]] void throw_not_regular(const std::string& path, const char* what, const std::string& kind) {
  throw_error("%s %s is %s, not a regular file ---> HINT: smezo reads a %s whole: give a regular file (a pipe's or "
              "device's output: write it to a file first)", what, printable(path).c_str(), kind.c_str(), what);
}

}  // namespace

int input_open(const std::string& path, const char* what, int64_t* size) {
  // O_NONBLOCK: opening a FIFO waits for a writer otherwise; it is cleared once the file is known regular
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const std::string kind = path_kind(path);  // a socket cannot be opened at all
    if (!kind.empty() && kind != "a regular file" && kind != "a directory") throw_not_regular(path, what, kind);
    throw_error("cannot open %s %s: %s", what, printable(path).c_str(), std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw_error("cannot stat %s %s: %s", what, printable(path).c_str(), std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_not_regular(path, what, input_mode_kind(st.st_mode));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  *size = static_cast<int64_t>(st.st_size);
  return fd;
}

std::string input_read(const std::string& path, const char* what, int64_t max_bytes) {
  int64_t size = 0;
  const int fd = input_open(path, what, &size);
  auto too_big = [&](const char* how) {
    ::close(fd);
    throw_error("%s %s is %s%lld bytes, more than the %lld a %s may be ---> HINT: is it the file you meant? smezo "
                "reads a %s whole, into memory", what, printable(path).c_str(), how, static_cast<long long>(size),
                static_cast<long long>(max_bytes), what, what);
  };
  if (size > max_bytes) too_big("");
  std::string bytes(static_cast<size_t>(size), '\0');
  size_t done = 0;
  for (;;) {  // to the end, which a file still being written may have moved
    if (done == bytes.size()) {
      if (static_cast<int64_t>(bytes.size()) > max_bytes) {
        size = static_cast<int64_t>(bytes.size());
        too_big("at least ");
      }
      bytes.resize(bytes.size() + 4096);
    }
    const ssize_t n = ::read(fd, &bytes[done], bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw_error("cannot read %s %s: %s", what, printable(path).c_str(), std::strerror(err));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

}  // namespace smezo
