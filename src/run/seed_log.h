// The seed log: everything needed to replay or resume a zeroth-order run, one line per step.
// Format (text, UTF-8, '\n' line ends), version 1 (one probe per step) and 2 (several):
//   # smezo seed log v1
//   # {"method":"smezo","sparsity":0.75,"eps":0.001,"seed":42,"model":"models/opt-1.3b",...}
//   1 12157665459056928801 3f1d70a4 358637bd
//   2 9223372036854775807 bf800000 358637bd
//   ...
// - Line 1 is the magic "# smezo seed log v1", or "... v2" for runs of several probes per step
//   (--probes-per-step q > 1, --method fzoo). v1 is v2 with one probe per record; one-probe runs write v1.
// - The run identity: one line "# " + compact JSON object (method, sparsity, eps, base seed, model
//   path, ...), before any record.
// - Other lines starting with '#', and blank lines, are ignored.
// - A record is "step seed g lr", separated by single spaces:
//     step  int64, decimal;
//     seed  uint64, decimal (0 .. 18446744073709551615), the step's perturbation seed;
//     g     float32 projected gradient as its IEEE-754 bit pattern: exactly 8 lower-case hex
//           digits, no "0x" (3f800000 is 1.0f, 80000000 is -0.0f);
//     lr    float32 learning rate of this step, the same 8-hex-digit form.
//   v2 appends " seed g" per further probe, in order: "step seed_1 g_1 lr seed_2 g_2 ... seed_q g_q",
//   standing for W <- W - lr·(1/q)·Σ_i g_i·m⊙z(seed_i) (src/train/spsa.h).
//   Bit patterns (not decimal or "%a") so every value, NaN payloads and -0.0 included, reads back
//   bit-exactly. The reader also accepts upper-case hex; nothing else (no signs, spaces, "0x", '\r').
// - Steps are consecutive; the first is where the writer started (smezo train: 1).
// Reading: a final line without '\n' (a crash's partial write) is ignored, flagged in
// SeedLog::partial_tail; any other bad line or step gap throws smezo::Error naming file and 1-based line.
// Durability: SeedLogWriter's flush() does fflush + fsync, every `flush_every` records (0: only on
// request) and in close()/the destructor; a kill loses at most the records since. Flush before
// writing a checkpoint at step S so the log reaches it. Resume replays every record over the base
// weights, then SeedLogWriter::open_append() cuts a partial last line and continues after the last step.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace smezo {

struct SeedProbe {
  uint64_t seed;
  float g;
};

struct SeedRecord {
  int64_t step;
  uint64_t seed;  // perturbation seed of this step (its first probe's)
  float g;        // projected gradient (of the first probe)
  float lr;       // learning rate used at this step
  std::vector<SeedProbe> more_probes = {};  // probes 2..q of a step of several probes (v2 only)
};

// The record's probes in order, the first one included.
std::vector<SeedProbe> seed_record_probes(const SeedRecord& r);

struct SeedLog {
  int version = 1;                  // 1 or 2, from the magic line
  nlohmann::json header;            // the run identity object
  int64_t header_line = 0;          // its 1-based line number
  std::vector<SeedRecord> records;  // consecutive steps
  bool partial_tail = false;        // a final line without '\n' was ignored
  int64_t partial_tail_line = 0;    // its 1-based line number (when partial_tail)
  int64_t complete_bytes = 0;       // length of the file up to the last complete line
};

// One record as a line, with the '\n'.
std::string seed_log_format_record(const SeedRecord& r);
// One line (no '\n'); false (*out unspecified) unless exactly a record of `version`.
bool seed_log_parse_record(const std::string& line, SeedRecord* out, int version = 1);

// Reads and validates a whole seed log (a regular file of at most kInputTextMaxBytes); throws smezo::Error
// (see "Reading" above). Any bit pattern reads back; what a record means is checked where it is applied.
SeedLog seed_log_read(const std::string& path);
// Throws unless r is what a run can log: finite gradients and a finite step size >= 0 (a schedule only
// decays it); replay and resume check each record before applying it.
void seed_record_require_loggable(const SeedRecord& r, const std::string& path);
// "PATH line N": where the header is, for the messages about its fields.
std::string seed_log_header_where(const SeedLog& log, const std::string& path);

class SeedLogWriter {
 public:
  // A new log, the header durable on return; refuses a non-empty file. version 2: several probes/step.
  static SeedLogWriter create(const std::string& path, const nlohmann::json& header,
                              int64_t flush_every, int version = 1);
  // Continues an existing log: validates it, cuts a partial final line; next step = last + 1.
  static SeedLogWriter open_append(const std::string& path, int64_t flush_every);

  SeedLogWriter(SeedLogWriter&& other) noexcept;
  SeedLogWriter& operator=(SeedLogWriter&& other) noexcept;
  SeedLogWriter(const SeedLogWriter&) = delete;
  SeedLogWriter& operator=(const SeedLogWriter&) = delete;
  ~SeedLogWriter();  // close(), errors swallowed: call close() to see them

  // r.step must be last_step() + 1 (any step for an empty log); several probes need a v2 log.
  void append(const SeedRecord& r);
  void flush();
  void close();

  const nlohmann::json& header() const { return header_; }
  const std::string& path() const { return path_; }
  int version() const { return version_; }
  bool has_records() const { return has_records_; }
  int64_t last_step() const { return last_step_; }  // meaningful when has_records()

 private:
  SeedLogWriter() = default;
  std::string path_;
  FILE* f_ = nullptr;
  nlohmann::json header_;
  int version_ = 1;
  int64_t flush_every_ = 0;
  int64_t unflushed_ = 0;
  bool has_records_ = false;
  int64_t last_step_ = 0;
};

}  // namespace smezo
