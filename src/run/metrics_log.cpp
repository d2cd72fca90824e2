// Implementation of the JSONL metrics log (see metrics_log.h).
#include "run/metrics_log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/check.h"
#include "common/file_util.h"
#include "common/input_file.h"
#include "run/summary.h"

namespace smezo {

namespace {

// The file's bytes; false when there is none (a regular file or nothing: input_read refuses the rest).
bool read_whole_file(const std::string& path, std::string* out) {
  if (!path_exists(path)) return false;
  *out = input_read(path, "metrics log", kInputTextMaxBytes);
  return true;
}

std::string dump_line(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

MetricsLog::MetricsLog(const std::string& path, bool append) : path_(path) {
  if (append) {
    // Cut a partial final line (crash mid-write) so the next line starts clean.
    std::string text;
    if (read_whole_file(path, &text) && !text.empty() && text.back() != '\n') {
      size_t keep = text.find_last_of('\n');
      keep = (keep == std::string::npos) ? 0 : keep + 1;
      if (::truncate(path.c_str(), static_cast<off_t>(keep)) != 0)
        throw_write_error("cut the partial last line of the metrics log", path, errno);
    }
  }
  f_ = std::fopen(path.c_str(), append ? "ab" : "wb");
  if (f_ == nullptr) throw_write_error("open the metrics log", path, errno);
}

MetricsLog::~MetricsLog() { close(); }

void MetricsLog::write(const nlohmann::json& record) {
  SMEZO_REQUIRE(f_ != nullptr, "metrics log %s is closed", path_.c_str());
  SMEZO_REQUIRE(record.is_object(), "metrics record for %s must be a JSON object, got %s",
                path_.c_str(), record.type_name());
  std::string line = dump_line(record);
  size_t n = std::fwrite(line.data(), 1, line.size(), f_);
  if (n != line.size() || std::fflush(f_) != 0) throw_write_error("write the metrics log", path_, errno);
}

void MetricsLog::close() {
  if (f_) {
    std::fclose(f_);
    f_ = nullptr;
  }
}

std::vector<nlohmann::json> metrics_log_read(const std::string& path) {
  const std::string text = input_read(path, "metrics log", kInputTextMaxBytes);
  std::vector<nlohmann::json> out;
  size_t pos = 0;
  int64_t line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // partial final line: ignored
    ++line_no;
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    SMEZO_REQUIRE(!j.is_discarded() && j.is_object(),
                  "metrics log %s line %lld is not a JSON object: '%.80s'", path.c_str(),
                  static_cast<long long>(line_no), line.c_str());
    out.push_back(std::move(j));
  }
  return out;
}

int64_t metrics_log_truncate_after(const std::string& path, int64_t step) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  std::vector<nlohmann::json> records = metrics_log_read(path);
  std::string kept;
  int64_t dropped = 0;
  for (const nlohmann::json& r : records) {
    auto it = r.find("step");
    if (it != r.end() && it->is_number() && it->get<double>() > static_cast<double>(step)) {
      ++dropped;
      continue;
    }
    kept += dump_line(r);
  }
  run_write_file_atomic(path, kept);
  return dropped;
}

}  // namespace smezo
