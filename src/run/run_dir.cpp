// The run folder: lock, kind, and cleanup of interrupted writes (see run_dir.h).
#include "run/run_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/check.h"

namespace smezo {

namespace fs = std::filesystem;

namespace {

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// The pid of "<name>.tmp.<pid>", or 0 when `name` has no such suffix.
long temp_pid(const std::string& name) {
  const size_t at = name.rfind(".tmp.");
  if (at == std::string::npos || at == 0) return 0;
  const std::string digits = name.substr(at + 5);
  if (!all_digits(digits) || digits.size() > 9) return 0;
  return std::stol(digits);
}

bool process_alive(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

}  // namespace

RunDirLock::RunDirLock(RunDirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

RunDirLock& RunDirLock::operator=(RunDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

RunDirLock run_dir_lock(const std::string& dir) {
  RunDirLock lock;
  lock.fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  SMEZO_REQUIRE(lock.fd_ >= 0, "cannot open the run folder %s: %s", dir.c_str(), std::strerror(errno));
  if (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    SMEZO_REQUIRE(err != EWOULDBLOCK, "another smezo train is writing %s ---> HINT: wait for it to end, or "
                  "choose another --out", dir.c_str());
    throw_error("cannot lock the run folder %s: %s", dir.c_str(), std::strerror(err));
  }
  return lock;
}

bool run_dir_is_temporary(const std::string& name) {
  if (name == "checkpoint.tmp" || name == "checkpoint.old") return true;
  if (temp_pid(name) == 0) return false;
  // only the run's own files: a folder may hold other things (tools/claim/zo_grid.py's run.log)
  const std::string base = name.substr(0, name.rfind(".tmp."));
  return base == "seed_log.txt" || base == "metrics.jsonl" || base == "summary.json" || base == "plot.svg" ||
         base == "mask.json";
}

RunDirKind run_dir_kind(const std::string& dir, std::string* example) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return RUN_DIR_NOTHING;
  SMEZO_REQUIRE(fs::is_directory(dir, ec), "--out %s is a file, not a run folder", dir.c_str());
  if (fs::exists(dir + "/seed_log.txt", ec)) return RUN_DIR_RUN;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!run_dir_is_temporary(name)) {
      if (example) *example = name;
      return RUN_DIR_OTHER;
    }
  }
  SMEZO_REQUIRE(!ec, "cannot list the run folder %s: %s", dir.c_str(), ec.message().c_str());
  return RUN_DIR_NOTHING;
}

std::vector<std::string> run_dir_clean(const std::string& dir) {
  std::vector<std::string> done;
  std::error_code ec;
  const std::string ckpt = dir + "/checkpoint", old = dir + "/checkpoint.old";
  if (fs::exists(old, ec) && !fs::exists(ckpt, ec)) {
    // killed between "checkpoint -> checkpoint.old" and "checkpoint.tmp -> checkpoint"
    fs::rename(old, ckpt, ec);
    SMEZO_REQUIRE(!ec, "cannot restore %s as %s: %s", old.c_str(), ckpt.c_str(), ec.message().c_str());
    done.push_back("checkpoint.old (restored as checkpoint)");
  }
  std::vector<fs::path> leftovers;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
    if (run_dir_is_temporary(e.path().filename().string())) leftovers.push_back(e.path());
  for (const fs::path& p : leftovers) {
    fs::remove_all(p, ec);
    SMEZO_REQUIRE(!ec, "cannot remove the leftover %s: %s", p.c_str(), ec.message().c_str());
    done.push_back(p.filename().string());
  }
  return done;
}

void remove_stale_temp_files_of(const std::string& path) {
  const fs::path p(path);
  const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string prefix = p.filename().string() + ".tmp.";
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const fs::directory_entry& e : fs::directory_iterator(parent, ec)) {
    const std::string name = e.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const long pid = temp_pid(name);
    if (pid > 0 && !process_alive(pid)) stale.push_back(e.path());
  }
  for (const fs::path& s : stale) fs::remove(s, ec);
}

}  // namespace smezo
