// The seed log: everything needed to replay or resume a zeroth-order run, one line per step.
//
// Format (text, UTF-8, '\n' line ends), version 1 (one probe per step) and 2 (several):
//
//   # smezo seed log v1
//   # {"method":"smezo","sparsity":0.75,"eps":0.001,"seed":42,"model":"models/opt-1.3b",...}
//   1 12157665459056928801 3f1d70a4 358637bd
//   2 9223372036854775807 bf800000 358637bd
//   ...
//
// - Line 1 is the magic "# smezo seed log v1", or "# smezo seed log v2" for a run whose steps
//   take several probes (--probes-per-step q > 1, --method fzoo). A v1 file is a v2 file whose
//   records all hold one probe; runs of one probe per step still write v1, byte for byte as
//   before v2 existed.
// - The run identity is one line "# " + compact JSON object (caller-provided: method,
//   sparsity, eps, base seed, model path, ...). It comes before any record.
// - Other lines starting with '#' are comments and are ignored; blank lines are ignored.
// - A record is "step seed g lr", separated by single spaces:
//     step  int64, decimal;
//     seed  uint64, decimal (0 .. 18446744073709551615), the step's perturbation seed;
//     g     float32 projected gradient, as its IEEE-754 bit pattern: exactly 8 lower-case
//           hex digits, no "0x" (3f800000 is 1.0f, 80000000 is -0.0f);
//     lr    float32 learning rate used at this step, same 8-hex-digit bit pattern.
//   v2 only: a step of several probes follows with " seed g" for each further probe, in probe
//   order (same encodings): "step seed_1 g_1 lr seed_2 g_2 ... seed_q g_q". The update a
//   record stands for is W <- W - lr·(1/q)·Σ_i g_i·m⊙z(seed_i) (src/train/spsa.h): one probe
//   is today's record and update, unchanged.
//   Bit patterns (not decimal or "%a") so every value, NaN payloads and -0.0 included, reads
//   back bit-exactly and every record has a fixed-width tail. The reader also accepts
//   upper-case hex digits; nothing else (no signs, spaces, "0x", '\r').
// - Steps are consecutive (each record's step is the previous one + 1). The first record's
//   step is whatever the writer started at (smezo train starts at 1).
//
// Reading: a final line without '\n' is a partial write from a crash; it is ignored and
// reported in SeedLog::partial_tail. Any other malformed line, or a step that does not follow
// the previous one, throws smezo::Error naming the file and the 1-based line number.
//
// Writing and durability: SeedLogWriter buffers lines in memory (stdio) and makes them durable
// (fflush + fsync) in flush(). The writer itself calls flush() after every `flush_every`
// records (0: only when the caller calls flush()), and in close()/the destructor. After a
// crash or kill, at most the records since the last flush are lost. A checkpoint at step S
// must call flush() before it is written, so the log always reaches the checkpoint.
//
// Resume from a checkpoint at step S: seed_log_truncate_to(path, S) rewrites the file
// atomically keeping the header and records with step <= S, then SeedLogWriter::open_append()
// continues it at step S+1.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace smezo {

// One probe of a step: its perturbation seed and its projected gradient.
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
  std::vector<SeedRecord> records;  // consecutive steps
  bool partial_tail = false;        // a final line without '\n' was ignored
  int64_t partial_tail_line = 0;    // its 1-based line number (when partial_tail)
  int64_t complete_bytes = 0;       // length of the file up to the last complete line
};

// One record as a line, with the '\n'; and the parse of one line (no '\n'). parse returns
// false (and leaves *out unspecified) for anything that is not exactly a record.
std::string seed_log_format_record(const SeedRecord& r);
// version 1 takes exactly "step seed g lr"; version 2 also the " seed g" pairs of more probes.
bool seed_log_parse_record(const std::string& line, SeedRecord* out, int version = 1);

// Reads and validates a whole seed log (see the format above).
SeedLog seed_log_read(const std::string& path);

// Resume support: atomically rewrites `path` keeping the header and the records with
// step <= `step`; a partial final line is dropped as well. Throws if the log ends before
// `step` (the log was not flushed when the checkpoint was written). Returns records dropped.
int64_t seed_log_truncate_to(const std::string& path, int64_t step);

class SeedLogWriter {
 public:
  // Starts a new log at `path` with `header` (a JSON object); the header is durable on return.
  // Refuses to overwrite a non-empty file (delete it, or resume with open_append). version 2
  // (several probes per step) only for runs that need it, so one-probe logs stay v1.
  static SeedLogWriter create(const std::string& path, const nlohmann::json& header,
                              int64_t flush_every, int version = 1);
  // Continues an existing log: validates it, cuts a partial final line, and expects the next
  // record to be last step + 1. header() gives the run identity read from the file.
  static SeedLogWriter open_append(const std::string& path, int64_t flush_every);

  SeedLogWriter(SeedLogWriter&& other) noexcept;
  SeedLogWriter& operator=(SeedLogWriter&& other) noexcept;
  SeedLogWriter(const SeedLogWriter&) = delete;
  SeedLogWriter& operator=(const SeedLogWriter&) = delete;
  ~SeedLogWriter();  // close(), errors swallowed: call close() to see them

  // Appends one record; r.step must be last_step() + 1 (any step for an empty log); a record
  // of several probes needs a version 2 log.
  void append(const SeedRecord& r);
  // Everything appended so far reaches the disk (fflush + fsync).
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
