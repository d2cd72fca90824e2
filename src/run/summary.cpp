// Implementation of the run summary writer and the atomic file write (see summary.h).
#include "run/summary.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "common/check.h"
#include "common/file_util.h"  // parent_dir

namespace smezo {

namespace {

// Writes bytes to fd (tmp, to become `path`); a failure removes tmp and names `path`.
void write_all(int fd, const std::string& bytes, const std::string& tmp, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw_write_error("write", path, err);
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace

void run_write_file_atomic(const std::string& path, const std::string& bytes) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw_write_error("create", tmp, errno);
  write_all(fd, bytes, tmp, path);
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw_write_error("write", path, err);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw_write_error(("rename " + tmp + " to").c_str(), path, err);
  }
  // Make the rename itself durable; failure here is not worth failing the run over.
  int dfd = ::open(parent_dir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void run_prepare_output_file(const std::string& path, const char* what) {
  const std::string folder = parent_dir(path);
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (ec) throw_write_error((std::string("create the folder of ") + what).c_str(), folder, ec.value());
  }
  SMEZO_REQUIRE(::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode), "%s %s is not a regular file", what,
                path.c_str());
  // The same temporary file run_write_file_atomic() will create, made and removed now.
  const std::string probe = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw_write_error((std::string("write ") + what).c_str(), path, errno);
  ::close(fd);
  ::unlink(probe.c_str());
}

void summary_add_standard_fields(nlohmann::json* summary) {
  SMEZO_REQUIRE(summary && summary->is_object(), "run summary must be a JSON object");
  nlohmann::json& s = *summary;
  if (!s.contains("written_at")) {
    std::time_t now = std::time(nullptr);
    std::tm tm_utc{};
    gmtime_r(&now, &tm_utc);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm_utc);
    s["written_at"] = buf;
  }
  if (!s.contains("hostname")) {
    char host[256] = {0};
    if (::gethostname(host, sizeof host - 1) == 0) s["hostname"] = host;
  }
  if (!s.contains("peak_host_rss_bytes")) {
    struct rusage ru {};
    if (::getrusage(RUSAGE_SELF, &ru) == 0) s["peak_host_rss_bytes"] = int64_t(ru.ru_maxrss) * 1024;
  }
}

void summary_write(const std::string& path, const nlohmann::json& summary) {
  SMEZO_REQUIRE(summary.is_object(), "run summary for %s must be a JSON object, got %s",
                path.c_str(), summary.type_name());
  std::string text = summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  run_write_file_atomic(path, text + "\n");
}

}  // namespace smezo
