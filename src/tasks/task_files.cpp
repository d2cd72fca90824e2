// Task splits from data files, --check-data, and the export of a built-in task; see task_files.h.
#include "tasks/task_files.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <tuple>

#include "common/check.h"
#include "run/summary.h"  // run_write_file_atomic
#include "tasks/task_encode.h"
#include "tasks/task_spec.h"

namespace smezo {

namespace {

struct SplitFile {
  const char* split;
  const std::string* path;
  std::vector<TaskExample>* out;
  int64_t cap;
};

// The first `cap` examples of a file (every row is checked up to there).
std::vector<TaskExample> read_split(const TaskSpec& spec, const std::string& path, int64_t cap) {
  const DataFile file = data_file_read(path, task_spec_fields(spec));
  SMEZO_REQUIRE(!file.rows.empty(), "%s holds no records", printable(path).c_str());
  std::vector<TaskExample> out;
  for (const DataRow& row : file.rows) {
    if (static_cast<int64_t>(out.size()) >= cap) break;
    out.push_back(task_spec_example(spec, file, row));
  }
  return out;
}

// Puts a file's problems ("<path>:<line>: ...") in line order: the reader's bad lines come first.
void sort_by_line(const std::string& path, std::vector<std::string>::iterator begin,
                  std::vector<std::string>::iterator end) {
  auto line_of = [&](const std::string& p) {
    return p.compare(0, path.size() + 1, path + ":") == 0 ? std::atoll(p.c_str() + path.size() + 1) : 0;
  };
  std::stable_sort(begin, end, [&](const std::string& a, const std::string& b) { return line_of(a) < line_of(b); });
}

// One line naming the record and field of a candidate too long for the limit; "" if it fits.
std::string candidate_length_problem(const TaskSpec& spec, const TaskExample& ex, size_t i,
                                     const TaskLengthLimit& limit) {
  if (!limit.tokenizer) return "";
  const int64_t n_bos = tokenizer_wants_bos(*limit.tokenizer) ? 1 : 0;
  int64_t n = 0;
  bool exact = true;
  try {
    n = encode_option_tokens(*limit.tokenizer, ex.contexts[i], ex.options[i], limit.max_len, &exact);
  } catch (const Error& e) {
    return ex.source + ": " + task_spec_candidate_name(spec, i) + ": " + e.what();
  }
  if (n + n_bos <= limit.max_len) return "";
  const std::string hint = exact ? format_string("raise --max-len to %lld or more, or shorten it", (long long)(n + n_bos))
                                 : format_string("shorten it (or raise --max-len above %lld)", (long long)(n + n_bos));
  return format_string("%s: %s \"%s\" is %s%lld tokens long and does not fit in --max-len %lld%s ---> HINT: %s",
                       ex.source.c_str(), task_spec_candidate_name(spec, i).c_str(),
                       printable(ex.options[i], 60).c_str(), exact ? "" : "at least ", static_cast<long long>(n),
                       static_cast<long long>(limit.max_len), n_bos ? " with BOS" : "", hint.c_str());
}

// The example of a row and its candidates' lengths: each problem appended as one line.
void check_row(const TaskSpec& spec, const DataFile& file, const DataRow& row, const TaskLengthLimit& limit,
               std::vector<std::string>* problems) {
  try {
    const TaskExample ex = task_spec_example(spec, file, row);
    for (size_t i = 0; i < ex.options.size(); i++) {
      const std::string p = candidate_length_problem(spec, ex, i, limit);
      if (!p.empty()) problems->push_back(p);
    }
  } catch (const Error& e) {
    problems->push_back(e.what());
  }
}

}  // namespace

TaskSplits load_task_files(const TaskFiles& files, int64_t n_train, int64_t n_dev, int64_t n_test) {
  // no training examples wanted (smezo eval, zero-shot): no training file needed
  SMEZO_REQUIRE(!files.train.empty() || n_train == 0, "--task-spec needs --train-file (the training records)");
  const TaskSpec spec = task_spec_read(files.spec);
  TaskSplits s;
  task_spec_apply(spec, &s);
  const SplitFile splits[] = {{"train", &files.train, &s.train, n_train},
                              {"dev", &files.dev, &s.dev, n_dev},
                              {"test", &files.test, &s.test, n_test}};
  std::string note;
  for (const SplitFile& f : splits) {
    if (f.path->empty() || f.cap == 0) continue;
    *f.out = read_split(spec, *f.path, f.cap);
    note += format_string("%s%s %zu (the first rows of %s)", note.empty() ? "" : ", ", f.split, f.out->size(),
                          printable(*f.path).c_str());
  }
  for (int64_t i = 0; i < static_cast<int64_t>(s.train.size()); i++) s.train_index.push_back(i);
  for (int64_t i = 0; i < static_cast<int64_t>(s.dev.size()); i++) s.dev_index.push_back(i);
  for (int64_t i = 0; i < static_cast<int64_t>(s.test.size()); i++) s.test_index.push_back(i);
  s.train_source_rows = static_cast<int64_t>(s.train.size());
  s.test_source_rows = static_cast<int64_t>(s.test.size());
  s.split_note = format_string("%s (task spec %s): %s; no sampling", spec.name.c_str(), printable(files.spec).c_str(),
                               note.c_str());
  return s;
}

std::vector<std::string> check_task_files(const TaskFiles& files, const TaskLengthLimit& limit) {
  std::vector<std::string> problems;
  TaskSpec spec;
  try {
    spec = task_spec_read(files.spec);
  } catch (const Error& e) {
    return {e.what()};  // nothing can be checked without the spec
  }
  if (files.train.empty()) problems.push_back("--task-spec needs --train-file (the training records)");
  for (const std::string* path : {&files.train, &files.dev, &files.test}) {
    if (path->empty()) continue;
    const size_t before = problems.size();
    const DataFile file = data_file_read(*path, task_spec_fields(spec), &problems);
    for (const DataRow& row : file.rows) check_row(spec, file, row, limit, &problems);
    if (file.rows.empty() && problems.size() == before)
      problems.push_back(format_string("%s holds no records", printable(*path).c_str()));
    sort_by_line(printable(*path), problems.begin() + static_cast<std::ptrdiff_t>(before), problems.end());
  }
  return problems;
}

// MeZO's tasks have 2 or 3 candidates; at 64 a step scores 32x the sequences of a two-label task.
constexpr size_t kManyCandidates = 64;

std::string task_candidates_warning(const TaskSplits& splits, int64_t batch, int64_t passes) {
  size_t most = 0, total = 0;
  for (const TaskExample& ex : splits.train) {
    most = std::max(most, ex.options.size());
    total += ex.options.size();
  }
  if (most <= kManyCandidates) return "";
  const double mean = static_cast<double>(total) / static_cast<double>(splits.train.size());
  const int64_t examples = std::min<int64_t>(batch, static_cast<int64_t>(splits.train.size()));
  const double sequences = static_cast<double>(examples * passes) * mean;
  return format_string("smezo: warning: %s has up to %zu candidates per example (%.0f on average): each training "
                       "step scores about %.0f candidate sequences (%lld examples x %lld forward passes x %.0f), "
                       "%.0fx a two-label task's %lld; expect steps that much slower", printable(splits.name).c_str(),
                       most, mean, sequences, static_cast<long long>(examples), static_cast<long long>(passes), mean,
                       mean / 2, static_cast<long long>(examples * passes * 2));
}

std::string task_examples_fingerprint(const TaskSplits& splits) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto add = [&](const std::string& text) {  // length first: "ab","c" and "a","bc" differ
    const std::string bytes = std::to_string(text.size()) + ":" + text;
    for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  };
  for (const std::vector<TaskExample>* split : {&splits.train, &splits.dev}) {
    add("split " + std::to_string(split->size()));
    for (const TaskExample& ex : *split) {
      add(std::to_string(ex.gold) + " " + std::to_string(ex.contexts.size()) + " " +
          std::to_string(ex.references.size()));
      for (size_t i = 0; i < ex.contexts.size(); i++) add(ex.contexts[i] + "\x01" + ex.options[i]);
      for (const std::string& r : ex.references) add(r);
    }
  }
  return format_string("%016llx", static_cast<unsigned long long>(h));
}

namespace {

std::vector<nlohmann::ordered_json> rows_at(const DataFile& file, const std::vector<int64_t>& index) {
  std::vector<nlohmann::ordered_json> out;
  for (int64_t i : index) {
    nlohmann::ordered_json r;
    for (const auto& [k, v] : file.rows[static_cast<size_t>(i)].fields.items()) r[k] = v;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::string export_task(const std::string& name, uint64_t seed, int64_t n_train, int64_t n_dev, int64_t n_test,
                        const std::string& data_dir, const std::string& out_dir) {
  const TaskSplits s = load_task(name, seed, n_train, n_dev, n_test, data_dir);
  const std::vector<std::string> sources = task_source_files(s.task, data_dir);
  const DataFile train_src = task_read_records(s.task, sources[0]);
  const DataFile test_src = task_read_records(s.task, sources[1]);
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  SMEZO_REQUIRE(!ec, "cannot create the export folder %s: %s", printable(out_dir).c_str(), ec.message().c_str());
  run_write_file_atomic(out_dir + "/spec.json", task_spec_builtin_text(s.task));
  std::string written = "spec.json";
  // an empty split gets no file (a data file without records is an error when read)
  for (const auto& [split, src, index] : {std::tuple{"train", &train_src, &s.train_index},
                                          std::tuple{"dev", &train_src, &s.dev_index},
                                          std::tuple{"test", &test_src, &s.test_index}}) {
    if (index->empty()) continue;
    data_file_write_jsonl(out_dir + "/" + split + ".jsonl", rows_at(*src, *index));
    written += format_string(", %s.jsonl (%zu)", split, index->size());
  }
  return format_string("exported %s to %s: %s; %s", s.name.c_str(), out_dir.c_str(), written.c_str(),
                       s.split_note.c_str());
}

}  // namespace smezo
