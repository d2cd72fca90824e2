// Fuzz target: your own data (--task-spec with --train-file) through both paths a user
// takes: --check-data's report of every problem, and the loading a training run does. The input
// is split at "\n--8<--\n": part 0 the task spec (JSON), part 1 the data file, whose format the
// first byte of part 1 picks (0: JSON Lines, 1: CSV, 2: TSV; the byte itself is dropped).
#include "fuzz_util.h"
#include "tasks/task_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> parts = smezo_fuzz::split_parts(data, size, "\n--8<--\n");
  if (parts.size() != 2 || parts[1].empty()) return 0;
  static const char* const kExtensions[] = {".jsonl", ".csv", ".tsv"};
  const std::string dir = smezo_fuzz::fresh_dir("task_files");
  smezo::TaskFiles files;
  files.spec = dir + "/spec.json";
  files.train = dir + "/train" + kExtensions[static_cast<uint8_t>(parts[1][0]) % 3];
  smezo_fuzz::write_file(files.spec, parts[0]);
  smezo_fuzz::write_file(files.train, parts[1].substr(1));
  smezo_fuzz::run_reader([&] {
    const std::vector<std::string> problems = smezo::check_task_files(files);
    for (const std::string& p : problems)
      if (p.empty()) std::abort();  // every problem is a line that says something
  });
  smezo_fuzz::run_reader([&] {
    const smezo::TaskSplits splits = smezo::load_task_files(files, 1000, 0, 0);
    if (splits.train.empty()) std::abort();  // accepted data holds at least one example
  });
  return 0;
}
