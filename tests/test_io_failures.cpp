// Real write failures through the CLI: `smezo train` on stories260K runs
// under a file-size limit (RLIMIT_FSIZE), on a full disk (a small tmpfs) and in folders or
// files it may not write, so that each of its writers — seed log, metrics, summary, plot and
// checkpoint — meets a real failed write(2)/open(2). Every failure must end the same way:
//   - a clean exit (1, or 3 when only the checkpoint failed), never a signal (SIGXFSZ's 153);
//   - each "smezo: error:" / "smezo: warning:" line names a file of the run and says what to do;
//   - no temporary file left behind, and the seed log a prefix of the uninterrupted run's;
//   - once the cause is gone, the same command with --resume ends with the seed log and the
//     checkpoint of the uninterrupted run, byte for byte.
// The full-disk cases mount a tmpfs and the read-only cases drop to user nobody when run as
// root (root ignores file modes); without root the first skip and the second use chmod alone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "run/metrics_log.h"
#include "run/run_dir.h"
#include "run/seed_log.h"
#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::run_command;
using testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

// Six steps with a seed-log flush each step, a checkpoint every two and an evaluation (plot,
// summary) every three: every writer writes more than once.
const char* const kTrainArgs =
    " train --task sst2 --steps 6 --batch 4 --max-len 32 --lr 2e-3 --eval-every 3 --dev-examples 20"
    " --test-examples 20 --checkpoint-every 2 --flush-every 1 --progress-every 1000";

// MeZO by default: an S-MeZO run also writes mask.json at its start (8.6 KB for stories260K,
// larger than every file the limits below aim at); its own case is MaskRecordFailureIsResumed.
std::string train_command(const std::string& out, const std::string& method = "mezo") {
  return smezo_test::smezo_binary() + kTrainArgs + " --method " + method + " --out " + out;
}

// The records of a seed log, one formatted line each (the header names the run folder).
std::vector<std::string> seed_records(const std::string& path) {
  std::vector<std::string> lines;
  for (const smezo::SeedRecord& r : smezo::seed_log_read(path).records) lines.push_back(smezo::seed_log_format_record(r));
  return lines;
}

// The uninterrupted run, made once: its seed log (text and records) and final weights.
struct Straight {
  std::string seed_log;
  std::vector<std::string> records;
  std::string weights;
  std::string mask_record;  // mask.json ("" for MeZO, which masks nothing)
};

const Straight& straight_run(const std::string& method = "mezo") {
  static std::map<std::string, Straight> made;
  if (!made.count(method)) {
    const std::string dir = make_temp_dir("io_straight") + "/run";
    std::string out;
    EXPECT_EQ(run_command(train_command(dir, method), &out), 0) << out;
    made[method] = Straight{read_file(dir + "/seed_log.txt"), seed_records(dir + "/seed_log.txt"),
                            read_file(dir + "/checkpoint/model.safetensors"),
                            fs::exists(dir + "/mask.json") ? read_file(dir + "/mask.json") : ""};
  }
  return made[method];
}

// The seed log's length up to the end of its first `records` records (0: the header alone).
uint64_t seed_log_bytes_after(size_t records) {
  const std::string& text = straight_run().seed_log;
  size_t at = 0;
  for (size_t line = 0, header_lines = 2; line < header_lines + records; line++) at = text.find('\n', at) + 1;
  return at;
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> found;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) found.push_back(line);
  return found;
}

// The checks every failed run must pass; returns its one error line ("" when the run only
// warned: only checkpoints failed).
std::string expect_clean_failure(const std::string& run, int rc, const std::string& output) {
  EXPECT_TRUE(rc == 1 || rc == 3) << "exit code " << rc << " (153 = killed by SIGXFSZ)\n" << output;
  const std::vector<std::string> errors = lines_starting(output, "smezo: error:");
  const std::vector<std::string> warnings = lines_starting(output, "smezo: warning:");
  EXPECT_EQ(errors.size(), rc == 1 ? 1u : 0u) << output;
  for (const std::string& line : errors.empty() ? warnings : errors) {
    EXPECT_THAT(line, HasSubstr(run)) << "the message names no file of the run";
    EXPECT_THAT(line, HasSubstr("---> HINT: ")) << "the message says nothing to do";
  }
  std::error_code ec;
  if (fs::is_directory(run, ec)) {
    for (const auto& e : fs::directory_iterator(run))
      EXPECT_FALSE(smezo::run_dir_is_temporary(e.path().filename().string())) << e.path() << " left behind";
  }
  if (fs::exists(run + "/seed_log.txt") && fs::file_size(run + "/seed_log.txt") > 0) {
    const std::vector<std::string> got = seed_records(run + "/seed_log.txt"), want = straight_run().records;
    EXPECT_LE(got.size(), want.size());
    EXPECT_TRUE(got.size() <= want.size() && std::equal(got.begin(), got.end(), want.begin()))
        << "the seed log is not a prefix of the uninterrupted run's";
  }
  return errors.empty() ? "" : errors[0];
}

std::string failed_run(const std::string& command, const std::string& run) {
  std::string out;
  const int rc = run_command(command, &out);
  return expect_clean_failure(run, rc, out);
}

// What the error's hint says to do — the same command with --resume, or, when no seed log was
// written, the command again — finishes the run with the uninterrupted run's seed log and
// weights.
void expect_resume_matches(const std::string& run, const std::string& prefix = "") {
  const bool logged = fs::exists(run + "/seed_log.txt");
  std::string out;
  ASSERT_EQ(run_command(prefix + train_command(run) + (logged ? " --resume" : ""), &out), 0) << out;
  EXPECT_EQ(seed_records(run + "/seed_log.txt"), straight_run().records);
  EXPECT_TRUE(read_file(run + "/checkpoint/model.safetensors") == straight_run().weights)
      << "resumed weights differ from the uninterrupted run's";
}

// `smezo train` into `run` under a file-size limit of `bytes`: prlimit sets it in bytes and
// leaves SIGXFSZ as it is (smezo itself must not die of it).
std::string limited(const std::string& run, uint64_t bytes) {
  return "prlimit --fsize=" + std::to_string(bytes) + " " + train_command(run);
}

// A run stopped after two steps (by the summary beside the step-2 checkpoint warning, see
// FileSizeLimitAtTheSeedLogSummaryAndPlot): a partial run to resume.
std::string partial_run(const std::string& tag) {
  const std::string run = make_temp_dir(tag) + "/run";
  std::string out;
  run_command(limited(run, seed_log_bytes_after(2) + 400), &out);
  EXPECT_EQ(seed_records(run + "/seed_log.txt").size(), 2u) << out;
  return run;
}

// --- read-only: as root, the runs go as user nobody, who owns the test's folders

constexpr int kNobody = 65534;

std::string as_user() {
  return geteuid() == 0 ? "setpriv --reuid=" + std::to_string(kNobody) + " --regid=" + std::to_string(kNobody) +
                              " --clear-groups "
                        : "";
}

void give_to_user(const std::string& dir) {
  if (geteuid() != 0) return;
  ASSERT_EQ(std::system(("chown -R " + std::to_string(kNobody) + " '" + dir + "'").c_str()), 0);
}

// --- full disk: a tmpfs of a few pages, mounted for one test (root only)

class SmallDisk {
 public:
  SmallDisk(const std::string& dir, const std::string& size) : dir_(dir) {
    fs::create_directories(dir);
    mounted_ = geteuid() == 0 && ::mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  // Space is back: the same file system, grown.
  void grow() { ASSERT_EQ(::mount("tmpfs", dir_.c_str(), "tmpfs", MS_REMOUNT, "size=64m"), 0); }

 private:
  std::string dir_;
  bool mounted_ = false;
};

#define SKIP_UNLESS_MOUNTED(disk)                                                         \
  do {                                                                                    \
    if (!(disk).mounted()) GTEST_SKIP() << "a full disk is a small tmpfs here, and mounting one needs root"; \
  } while (0)

}  // namespace

// The case: `ulimit -f 64` used to kill `smezo train --checkpoint-every 2` by SIGXFSZ
// (exit 153, no message) in the middle of the checkpoint. Now every checkpoint is a warning
// naming the file and the limit, the rest of the run goes on, and --resume writes the
// checkpoint once the limit is gone.
TEST(IoFailures, FileSizeLimitStopsOnlyTheCheckpointAndResumeWritesIt) {
  const std::string run = make_temp_dir("io_fsize_ckpt") + "/run";
  std::string out;
  EXPECT_EQ(run_command(limited(run, 64 * 1024), &out), 3) << out;
  expect_clean_failure(run, 3, out);
  const std::vector<std::string> warnings = lines_starting(out, "smezo: warning:");
  ASSERT_EQ(warnings.size(), 3u) << out;  // steps 2, 4 and 6
  EXPECT_THAT(warnings[0], HasSubstr("cannot write safetensors file " + run + "/checkpoint.tmp/model.safetensors"));
  EXPECT_THAT(warnings[0], HasSubstr("File too large ---> HINT: a file-size limit stops the file growing (see "
                                     "'ulimit -f'): raise it"));
  EXPECT_THAT(out, HasSubstr("no final checkpoint (see the warning; once fixed, the same command with --resume "
                             "writes it)"));
  EXPECT_EQ(seed_records(run + "/seed_log.txt"), straight_run().records);
  EXPECT_FALSE(fs::exists(run + "/checkpoint"));
  expect_resume_matches(run);
}

// Lower limits stop each of the other writers first: the seed log when it is created (nothing
// logged: the run starts again), the summary written beside the step-2 checkpoint warning
// (3.2 KB, with the warning's text), the plot written then. (The summary, 2.3 KB from the
// start, always outgrows the limit before a seed-log record would: the seed log's own write
// and flush failures are SeedLog.FailedWriteOrFlushIsNamed, under the same kind of limit.)
TEST(IoFailures, FileSizeLimitAtTheSeedLogSummaryAndPlot) {
  struct Case {
    uint64_t limit;
    std::string file;
    size_t logged;
  };
  const std::vector<Case> cases = {{seed_log_bytes_after(0) - 1, "seed_log.txt", 0},
                                   {seed_log_bytes_after(2) + 400, "summary.json", 2},
                                   {4096, "plot.svg", 2}};
  for (const Case& c : cases) {
    SCOPED_TRACE("limit " + std::to_string(c.limit) + " bytes");
    const std::string run = make_temp_dir("io_fsize") + "/run";
    const std::string error = failed_run(limited(run, c.limit), run);
    EXPECT_THAT(error, HasSubstr("cannot write " + run + "/" + c.file + ": File too large ---> HINT: a "
                                 "file-size limit stops the file growing (see 'ulimit -f'): raise it"));
    const bool logged = fs::exists(run + "/seed_log.txt");
    EXPECT_THAT(error, HasSubstr(logged ? "then run the same command with --resume: " + run +
                                              "/seed_log.txt keeps every step logged so far"
                                        : "then run the command again"));
    if (logged) {
      EXPECT_EQ(seed_records(run + "/seed_log.txt").size(), c.logged);
    }
    expect_resume_matches(run);
  }
}

// A disk with no free page: the seed log cannot be created.
TEST(IoFailures, FullDiskAtTheStart) {
  const std::string dir = make_temp_dir("io_full0") + "/disk";
  SmallDisk disk(dir, "8k");
  SKIP_UNLESS_MOUNTED(disk);
  smezo_test::write_file(dir + "/filler", std::string(8192, 'x'));
  const std::string run = dir + "/run";
  const std::string error = failed_run(train_command(run), run);
  EXPECT_THAT(error, HasSubstr("No space left on device ---> HINT: the disk (or your quota) is full: free space on it"));
  EXPECT_THAT(error, HasSubstr(run + "/seed_log.txt"));
  disk.grow();
  expect_resume_matches(run);
}

// Disks of one and three pages: the seed log and metrics fit, and the summary (one page) or
// the plot (three) finds the disk full; checkpoints are refused beforehand by the free-space
// check, as warnings.
TEST(IoFailures, FullDiskAtTheSummaryAndThePlot) {
  for (const auto& [size, file] : {std::pair<std::string, std::string>{"4k", "summary.json"}, {"12k", "plot.svg"}}) {
    SCOPED_TRACE("tmpfs of " + size);
    const std::string dir = make_temp_dir("io_full") + "/disk";
    SmallDisk disk(dir, size);
    SKIP_UNLESS_MOUNTED(disk);
    const std::string run = dir + "/run";
    const std::string error = failed_run(train_command(run), run);
    EXPECT_THAT(error, HasSubstr("cannot write " + run + "/" + file + ": No space left on device ---> HINT: the "
                                 "disk (or your quota) is full: free space on it, then run the same command with "
                                 "--resume"));
    disk.grow();
    expect_resume_matches(run);
  }
}

// A new run into a folder nobody may write: refused before anything happens.
TEST(IoFailures, ReadOnlyFolderForANewRun) {
  const std::string dir = make_temp_dir("io_ro_new");
  give_to_user(dir);
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                           fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  const std::string run = dir + "/run";
  const std::string error = failed_run(as_user() + train_command(run), run);
  EXPECT_THAT(error, HasSubstr("cannot create the run folder " + run + ": Permission denied ---> HINT: the folder or "
                               "file is not writable by you: make it writable, then run the command again"));
  fs::permissions(dir, fs::perms::owner_write, fs::perm_options::add);
  expect_resume_matches(run, as_user());
}

// Resuming a partial run whose seed log or folder is read-only: refused, naming the file (in a
// read-only folder, the first write is the metrics log, cut back to the resumed step by a
// rewrite); made writable again, --resume finishes the run. (A read-only metrics.jsonl in a
// writable folder is no failure: that rewrite replaces it by rename.)
TEST(IoFailures, ReadOnlyFilesWhenResuming) {
  const fs::perms ro = fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read;
  for (const std::string file : {"seed_log.txt", ""}) {
    SCOPED_TRACE(file.empty() ? "the run folder" : file);
    const std::string run = partial_run("io_ro_resume");
    give_to_user(run);
    const std::string target = file.empty() ? run : run + "/" + file;
    const fs::perms before = fs::status(target).permissions();
    fs::permissions(target, file.empty() ? ro | fs::perms::owner_exec | fs::perms::group_exec |
                                                fs::perms::others_exec
                                          : ro);
    const std::string error = failed_run(as_user() + train_command(run) + " --resume", run);
    EXPECT_THAT(error, HasSubstr("Permission denied ---> HINT: the folder or file is not writable by you: make it "
                                 "writable, then run the same command with --resume"));
    EXPECT_THAT(error, HasSubstr(file.empty() ? "cannot create " + run + "/metrics.jsonl.tmp."
                                              : "cannot open the seed log " + run + "/seed_log.txt: Permission denied"));
    fs::permissions(target, before);
    expect_resume_matches(run, as_user());
  }
}

// The metrics log's writes on a device that is always full (/dev/full, through a symlink):
// each line fails with ENOSPC, named, with what to do.
TEST(IoFailures, MetricsLogOnAFullDevice) {
  const std::string path = make_temp_dir("io_devfull") + "/metrics.jsonl";
  fs::create_symlink("/dev/full", path);
  smezo::MetricsLog log(path, false);
  EXPECT_THROW_MSG(log.write({{"step", 1}, {"loss", 0.5}}),
                   "cannot write the metrics log " + path + ": No space left on device ---> HINT: the disk (or your "
                   "quota) is full: free space on it");
}

// S-MeZO writes mask.json after creating the seed log: a limit that lets the seed log's header
// through stops the run at mask.json (nothing logged yet). --resume, once the limit is gone,
// writes the record the fresh start could not (of the base weights, before the replay) and
// ends as the uninterrupted run: the same seed log, weights and mask.json.
TEST(IoFailures, MaskRecordFailureIsResumed) {
  const Straight& want = straight_run("smezo");
  ASSERT_FALSE(want.mask_record.empty());
  const uint64_t header = want.seed_log.find('\n', want.seed_log.find('\n') + 1) + 1;
  ASSERT_LT(header + 100, want.mask_record.size());
  const std::string run = make_temp_dir("io_fsize_mask") + "/run";
  const std::string error =
      failed_run("prlimit --fsize=" + std::to_string(header + 100) + " " + train_command(run, "smezo"), run);
  EXPECT_THAT(error, HasSubstr("cannot write " + run + "/mask.json: File too large"));
  EXPECT_THAT(error, HasSubstr("then run the same command with --resume"));
  EXPECT_FALSE(fs::exists(run + "/mask.json"));
  std::string out;
  ASSERT_EQ(run_command(train_command(run, "smezo") + " --resume", &out), 0) << out;
  EXPECT_EQ(seed_records(run + "/seed_log.txt"), want.records);
  EXPECT_TRUE(read_file(run + "/checkpoint/model.safetensors") == want.weights);
  EXPECT_EQ(read_file(run + "/mask.json"), want.mask_record);
}
