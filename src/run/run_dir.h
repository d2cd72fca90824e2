// The run folder of `smezo train`: who may use it, what it is, and what killed writes leave in it.
// - run_dir_lock(): an exclusive flock(2) on the folder itself, held for the whole run: two runs never
//   write one folder, and a temporary file found while holding it belongs to no live writer.
// - run_dir_kind(), for --resume: nothing (missing, empty, or temporary files only: killed before
//   its seed log), a run (seed_log.txt), or other (--resume refuses it; a new run may write there).
// - run_dir_clean(): removes the temporaries of interrupted atomic writes of the run's own files
//   ("<file>.tmp.<pid>", "checkpoint.tmp/"), and puts "checkpoint.old/" back as "checkpoint/" after a
//   kill between the checkpoint swap's renames. Nothing else is touched.
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

// Removes dir's leftovers (see above), returning what it removed or restored. Hold run_dir_lock(dir).
std::vector<std::string> run_dir_clean(const std::string& dir);

// Removes "<path>.tmp.<pid>" files beside `path` whose process is gone (outside a locked run folder).
void remove_stale_temp_files_of(const std::string& path);

}  // namespace smezo
