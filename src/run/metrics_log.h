// JSONL metrics log: one JSON object per line (the caller's keys), e.g. {"step":120,"loss":0.6931}.
// Each line is one fwrite, flushed (fflush, not fsync), so `tail -f` and a crash see whole lines.
// Non-finite numbers are written as null; invalid UTF-8 is replaced.
// Resume: append=true cuts a crash's partial last line on open, so new lines never glue onto it;
// metrics_log_truncate_after() drops lines after the resumed step, so none is duplicated.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace smezo {

class MetricsLog {
 public:
  // append=false creates or empties `path`; append=true keeps what is there.
  MetricsLog(const std::string& path, bool append);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  // Writes `record` (must be a JSON object) as one line and flushes it.
  void write(const nlohmann::json& record);
  void close();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  FILE* f_ = nullptr;
};

// Reads every complete line back (a partial last one ignored); a non-object line throws naming it.
std::vector<nlohmann::json> metrics_log_read(const std::string& path);

// Rewrites `path` atomically without records whose "step" is > `step`; returns how many were dropped.
int64_t metrics_log_truncate_after(const std::string& path, int64_t step);

}  // namespace smezo
