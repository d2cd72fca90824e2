// The run folder of `smezo train` as a whole: who may use it, what it is, and the leftovers a
// killed or failed write leaves in it.
//
// - run_dir_lock(): an exclusive flock(2) on the folder itself (no lock file is written), held
//   for the whole run, so two `smezo train` processes never write one folder and a leftover
//   temporary file found while holding it cannot belong to a live writer.
// - run_dir_kind(): what a folder holds, for --resume: nothing (missing, empty, or temporary
//   files only: a run killed before its seed log existed), a run (seed_log.txt), or something
//   else (--resume refuses it: it is not a run's folder; a new run may still write there).
// - run_dir_clean(): removes the temporary files of interrupted atomic writes of the run's own
//   files ("seed_log.txt|metrics.jsonl|summary.json|plot.svg" + ".tmp.<pid>" from
//   run_write_file_atomic, the folder "checkpoint.tmp/"), and puts "checkpoint.old/" back as
//   "checkpoint/" when a kill fell between the two renames that swap a new checkpoint in
//   (train/checkpoint.h). Nothing else in the folder is touched.
#pragma once

#include <string>
#include <vector>

namespace smezo {

class RunDirLock {
 public:
  RunDirLock() = default;
  RunDirLock(RunDirLock&& other) noexcept;
  RunDirLock& operator=(RunDirLock&& other) noexcept;
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;
  ~RunDirLock();

 private:
  friend RunDirLock run_dir_lock(const std::string& dir);
  int fd_ = -1;
};

// Locks `dir` (which must exist); throws naming it when another process holds it.
RunDirLock run_dir_lock(const std::string& dir);

enum RunDirKind { RUN_DIR_NOTHING, RUN_DIR_RUN, RUN_DIR_OTHER };

// What `dir` holds. *example (when given) names one entry that makes it RUN_DIR_OTHER.
RunDirKind run_dir_kind(const std::string& dir, std::string* example = nullptr);

// True for the names of temporary files and folders that smezo's atomic writes use.
bool run_dir_is_temporary(const std::string& name);

// Removes the temporary leftovers in `dir` (see above) and returns what it removed or
// restored, for a message. Call it only while holding run_dir_lock(dir).
std::vector<std::string> run_dir_clean(const std::string& dir);

// Removes "<path>.tmp.<pid>" files beside `path` whose process is gone (for files written
// outside a locked run folder, such as `smezo eval --out`).
void remove_stale_temp_files_of(const std::string& path);

}  // namespace smezo
