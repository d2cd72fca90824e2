// Implementation of the seed log reader and writer (format in seed_log.h).
#include "run/seed_log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "common/check.h"
#include "common/input_file.h"
#include "run/summary.h"

namespace smezo {

namespace {

const char* const kMagic = "# smezo seed log v1";
const char* const kMagicV2 = "# smezo seed log v2";  // steps of several probes

const char* magic_of(int version) { return version == 2 ? kMagicV2 : kMagic; }

std::string header_text(const nlohmann::json& header, int version) {
  return std::string(magic_of(version)) + "\n# " +
         header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// Parses a run of decimal digits into a uint64; false on empty, non-digit or overflow.
bool parse_u64(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

// Exactly 8 hex digits -> float32 bit pattern.
bool parse_bits(const std::string& s, float* out) {
  if (s.size() != 8) return false;
  uint32_t v = 0;
  for (char c : s) {
    uint32_t d;
    if (c >= '0' && c <= '9') d = static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f') d = static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = static_cast<uint32_t>(c - 'A' + 10);
    else return false;
    v = (v << 4) | d;
  }
  std::memcpy(out, &v, sizeof v);
  return true;
}

uint32_t float_bits(float x) {
  uint32_t v;
  std::memcpy(&v, &x, sizeof v);
  return v;
}

bool file_nonempty(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && st.st_size > 0;
}

}  // namespace

// --- record text

std::vector<SeedProbe> seed_record_probes(const SeedRecord& r) {
  std::vector<SeedProbe> probes{{r.seed, r.g}};
  probes.insert(probes.end(), r.more_probes.begin(), r.more_probes.end());
  return probes;
}

std::string seed_log_format_record(const SeedRecord& r) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%lld %llu %08x %08x", static_cast<long long>(r.step),
                static_cast<unsigned long long>(r.seed), float_bits(r.g), float_bits(r.lr));
  std::string line = buf;
  for (const SeedProbe& p : r.more_probes) {
    std::snprintf(buf, sizeof buf, " %llu %08x", static_cast<unsigned long long>(p.seed), float_bits(p.g));
    line += buf;
  }
  return line + "\n";
}

bool seed_log_parse_record(const std::string& line, SeedRecord* out, int version) {
  std::vector<std::string> field;
  size_t pos = 0;
  for (;;) {  // single spaces only: an empty field (two spaces, a leading or trailing one) fails below
    const size_t end = line.find(' ', pos);
    field.push_back(line.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  if (field.size() != 4 && !(version == 2 && field.size() > 4 && field.size() % 2 == 0)) return false;
  uint64_t step;
  if (!parse_u64(field[0], &step) || step > static_cast<uint64_t>(INT64_MAX)) return false;
  if (!parse_u64(field[1], &out->seed)) return false;
  if (!parse_bits(field[2], &out->g) || !parse_bits(field[3], &out->lr)) return false;
  out->step = static_cast<int64_t>(step);
  out->more_probes.clear();
  for (size_t i = 4; i < field.size(); i += 2) {
    SeedProbe p;
    if (!parse_u64(field[i], &p.seed) || !parse_bits(field[i + 1], &p.g)) return false;
    out->more_probes.push_back(p);
  }
  return true;
}

// --- reader

void seed_record_require_loggable(const SeedRecord& r, const std::string& path) {
  bool finite_g = std::isfinite(r.g);
  for (const SeedProbe& p : r.more_probes) finite_g = finite_g && std::isfinite(p.g);
  SMEZO_REQUIRE(std::isfinite(r.lr) && r.lr >= 0.0f && finite_g,
                "seed log %s: step %lld logs %s, which no run logs ---> HINT: the seed log was edited or damaged: "
                "replay or resume from the run's own copy", path.c_str(), static_cast<long long>(r.step),
                !finite_g ? "a gradient that is not finite"
                          : format_string("the learning rate %g (not a finite number >= 0)", r.lr).c_str());
}


SeedLog seed_log_read(const std::string& path) {
  std::string text = input_read(path, "seed log", kInputTextMaxBytes);
  SMEZO_REQUIRE(!text.empty(), "seed log %s is empty (not written by smezo train?)",
                path.c_str());
  SeedLog log;
  bool have_header = false;
  size_t pos = 0;
  int64_t line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    ++line_no;
    if (nl == std::string::npos) {  // crash mid-write: ignore, report
      log.partial_tail = true;
      log.partial_tail_line = line_no;
      break;
    }
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    log.complete_bytes = static_cast<int64_t>(pos);
    if (line_no == 1) {
      SMEZO_REQUIRE(line == kMagic || line == kMagicV2,
                    "%s line 1: not a smezo seed log (expected '%s' or '%s', found '%.60s')",
                    path.c_str(), kMagic, kMagicV2, line.c_str());
      log.version = line == kMagicV2 ? 2 : 1;
      continue;
    }
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (line.compare(0, 3, "# {") != 0) continue;  // comment
      SMEZO_REQUIRE(!have_header, "seed log %s line %lld: a second run header", path.c_str(),
                    static_cast<long long>(line_no));
      SMEZO_REQUIRE(log.records.empty(), "seed log %s line %lld: run header after the records",
                    path.c_str(), static_cast<long long>(line_no));
      log.header = nlohmann::json::parse(line.substr(2), nullptr, false);
      SMEZO_REQUIRE(!log.header.is_discarded() && log.header.is_object(),
                    "seed log %s line %lld: the run header is not a JSON object: '%.80s'",
                    path.c_str(), static_cast<long long>(line_no), line.c_str());
      have_header = true;
      log.header_line = line_no;
      continue;
    }
    SeedRecord r;
    SMEZO_REQUIRE(seed_log_parse_record(line, &r, log.version),
                  "seed log %s line %lld is malformed: '%.80s' (expected 'step seed g lr'%s, "
                  "g and lr as 8 hex digits)",
                  path.c_str(), static_cast<long long>(line_no), line.c_str(),
                  log.version == 2 ? " and ' seed g' per further probe" : "");
    SMEZO_REQUIRE(have_header, "seed log %s line %lld: a record before the run header",
                  path.c_str(), static_cast<long long>(line_no));
    if (!log.records.empty()) {
      int64_t want = log.records.back().step + 1;
      SMEZO_REQUIRE(r.step == want,
                    "seed log %s line %lld: step %lld follows step %lld (steps must be "
                    "consecutive; was the file edited or two runs mixed?)",
                    path.c_str(), static_cast<long long>(line_no),
                    static_cast<long long>(r.step), static_cast<long long>(want - 1));
    }
    log.records.push_back(r);
  }
  SMEZO_REQUIRE(have_header, "seed log %s has no run header line ('# {...}')", path.c_str());
  return log;
}

std::string seed_log_header_where(const SeedLog& log, const std::string& path) {
  return format_string("%s line %lld", path.c_str(), static_cast<long long>(log.header_line));
}

// --- writer

SeedLogWriter SeedLogWriter::create(const std::string& path, const nlohmann::json& header,
                                    int64_t flush_every, int version) {
  SMEZO_REQUIRE(version == 1 || version == 2, "seed log %s: no format version %d (1 or 2)", path.c_str(), version);
  SMEZO_REQUIRE(header.is_object(), "seed log header for %s must be a JSON object, got %s",
                path.c_str(), header.type_name());
  SMEZO_REQUIRE(!file_nonempty(path),
                "seed log %s already exists ---> HINT: continue that run (smezo train --resume), or "
                "write the new one elsewhere (another --out)",
                path.c_str());
  SeedLogWriter w;
  w.path_ = path;
  w.header_ = header;
  w.version_ = version;
  w.flush_every_ = flush_every;
  run_write_file_atomic(path, header_text(header, version));
  w.f_ = std::fopen(path.c_str(), "ab");
  if (w.f_ == nullptr) throw_write_error("open the seed log", path, errno);
  return w;
}

SeedLogWriter SeedLogWriter::open_append(const std::string& path, int64_t flush_every) {
  SeedLog log = seed_log_read(path);
  if (log.partial_tail) {
    if (::truncate(path.c_str(), static_cast<off_t>(log.complete_bytes)) != 0)
      throw_write_error("cut the partial last line of the seed log", path, errno);
  }
  SeedLogWriter w;
  w.path_ = path;
  w.header_ = log.header;
  w.version_ = log.version;
  w.flush_every_ = flush_every;
  w.has_records_ = !log.records.empty();
  w.last_step_ = w.has_records_ ? log.records.back().step : 0;
  w.f_ = std::fopen(path.c_str(), "ab");
  if (w.f_ == nullptr) throw_write_error("open the seed log", path, errno);
  return w;
}

SeedLogWriter::SeedLogWriter(SeedLogWriter&& o) noexcept { *this = std::move(o); }

SeedLogWriter& SeedLogWriter::operator=(SeedLogWriter&& o) noexcept {
  if (this != &o) {
    try {
      close();
    } catch (...) {
    }
    path_ = std::move(o.path_);
    f_ = o.f_;
    o.f_ = nullptr;
    header_ = std::move(o.header_);
    version_ = o.version_;
    flush_every_ = o.flush_every_;
    unflushed_ = o.unflushed_;
    has_records_ = o.has_records_;
    last_step_ = o.last_step_;
  }
  return *this;
}

SeedLogWriter::~SeedLogWriter() {
  try {
    close();
  } catch (...) {
  }
}

void SeedLogWriter::append(const SeedRecord& r) {
  SMEZO_REQUIRE(f_ != nullptr, "seed log %s is closed", path_.c_str());
  SMEZO_REQUIRE(!has_records_ || r.step == last_step_ + 1,
                "seed log %s: appending step %lld after step %lld (steps must be consecutive)",
                path_.c_str(), static_cast<long long>(r.step),
                static_cast<long long>(last_step_));
  SMEZO_REQUIRE(r.step >= 0, "seed log %s: negative step %lld", path_.c_str(),
                static_cast<long long>(r.step));
  SMEZO_REQUIRE(r.more_probes.empty() || version_ == 2,
                "seed log %s: step %lld has %zu probes, which a version 1 log cannot hold", path_.c_str(),
                static_cast<long long>(r.step), r.more_probes.size() + 1);
  std::string line = seed_log_format_record(r);
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size()) throw_write_error("write the seed log", path_, errno);
  has_records_ = true;
  last_step_ = r.step;
  ++unflushed_;
  if (flush_every_ > 0 && unflushed_ >= flush_every_) flush();
}

void SeedLogWriter::flush() {
  SMEZO_REQUIRE(f_ != nullptr, "seed log %s is closed", path_.c_str());
  if (std::fflush(f_) != 0 || ::fsync(::fileno(f_)) != 0) throw_write_error("write the seed log", path_, errno);
  unflushed_ = 0;
}

void SeedLogWriter::close() {
  if (!f_) return;
  FILE* f = f_;
  bool ok = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  int err = errno;
  f_ = nullptr;
  std::fclose(f);
  if (!ok) throw_write_error("write the seed log", path_, err);
}

}  // namespace smezo
