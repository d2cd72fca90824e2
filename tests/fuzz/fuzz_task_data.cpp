// Fuzz target: one task data file through task_read_file. The first input byte picks the
// task (sst2 reads TSV, the others JSONL); the rest is the file.
#include "fuzz_util.h"
#include "tasks/task_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const smezo::TaskId kTasks[] = {smezo::TASK_SST2, smezo::TASK_RTE,   smezo::TASK_BOOLQ,
                                         smezo::TASK_WIC,  smezo::TASK_MULTIRC, smezo::TASK_COPA,
                                         smezo::TASK_CB};
  const smezo::TaskId task = kTasks[data[0] % 7];
  const std::string path = smezo_fuzz::scratch_dir() + "/data.txt";
  smezo_fuzz::write_file(path, data + 1, size - 1);
  smezo_fuzz::run_reader([&] {
    std::vector<int64_t> groups;
    std::vector<smezo::TaskExample> rows = smezo::task_read_file(task, path, &groups);
    if (rows.empty() || groups.size() != rows.size()) std::abort();
  });
  return 0;
}
