// Task datasets: file readers, MeZO sampling (formats and procedure: task_data.h).
#include "tasks/task_data.h"

#include <algorithm>
#include <random>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/file_util.h"  // path_exists
#include "formats/json_read.h"
#include "tasks/task_spec.h"

namespace smezo {

using nlohmann::json;

// --- task names

struct TaskInfo {
  TaskId id;
  const char* name;
  const char* dir;         // under data_dir
  const char* train_file;  // nullptr: no full train split here
  const char* test_file;
};

static const TaskInfo kTasks[] = {
    {TASK_SST2, "sst2", "glue/SST-2", "train.tsv", "dev.tsv"},
    {TASK_RTE, "rte", "superglue/RTE", "train.jsonl", "val.jsonl"},
    {TASK_BOOLQ, "boolq", "superglue/BoolQ", nullptr, "val.jsonl"},
    {TASK_WIC, "wic", "superglue/WiC", nullptr, "val.jsonl"},
    {TASK_MULTIRC, "multirc", "superglue/MultiRC", nullptr, "val.jsonl"},
    {TASK_COPA, "copa", "superglue/COPA", "train.jsonl", "val.jsonl"},
    {TASK_CB, "cb", "superglue/CB", "train.jsonl", "val.jsonl"},
};

static const TaskInfo& task_info(TaskId task) {
  for (const TaskInfo& t : kTasks)
    if (t.id == task) return t;
  throw_error("unknown task id %d", static_cast<int>(task));
}

TaskId task_parse_name(const std::string& name) {
  std::string lower = name;
  for (char& c : lower)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  std::string known;
  for (const TaskInfo& t : kTasks) {
    if (lower == t.name) return t.id;
    known += known.empty() ? "" : ", ";
    known += t.name;
  }
  throw_error("unknown task \"%s\"; known tasks: %s", name.c_str(), known.c_str());
}

const char* task_name(TaskId task) { return task_info(task).name; }

std::vector<std::string> task_names() {
  std::vector<std::string> out;
  for (const TaskInfo& t : kTasks) out.push_back(t.name);
  return out;
}

bool task_trains_as_classification(TaskId task) { return task != TASK_COPA; }

// --- reading rows

struct RowAt {
  const std::string& path;
  int64_t line;  // 1-based
};

// A missing file names the task and the --data folder (what else is wrong data_file_read says).
static void require_data_file(const std::string& path, TaskId task) {
  SMEZO_REQUIRE(path_exists(path),
                "cannot open data file %s of task %s%s ---> HINT: --data DIR names the folder holding "
                "glue/ and superglue/; the default is the data/ folder of the assets (see "
                "weights/README.md)",
                path.c_str(), task_name(task),
                assets_found() ? "" : ("; " + assets_search_note()).c_str());
}

static const json& json_field(const json& obj, const char* key, const RowAt& at) {
  SMEZO_REQUIRE(obj.is_object(), "%s:%lld: expected a JSON object holding \"%s\"",
                at.path.c_str(), static_cast<long long>(at.line), key);
  auto it = obj.find(key);
  SMEZO_REQUIRE(it != obj.end(), "%s:%lld: missing field \"%s\"", at.path.c_str(),
                static_cast<long long>(at.line), key);
  return *it;
}

static std::string json_string(const json& obj, const char* key, const RowAt& at) {
  const json& v = json_field(obj, key, at);
  SMEZO_REQUIRE(v.is_string(), "%s:%lld: field \"%s\" should be a string, got %s",
                at.path.c_str(), static_cast<long long>(at.line), key, json_brief(v).c_str());
  return v.get<std::string>();
}

// One MultiRC passage row -> one flat record per answer: paragraph, question, answer, label.
static void flatten_multirc_row(const DataRow& row, const RowAt& at, std::vector<DataRow>* out) {
  const json& passage = json_field(row.fields, "passage", at);
  std::string text = json_string(passage, "text", at);
  const json& questions = json_field(passage, "questions", at);
  SMEZO_REQUIRE(questions.is_array(), "%s:%lld: field \"questions\" should be an array",
                at.path.c_str(), static_cast<long long>(at.line));
  for (const json& q : questions) {
    std::string question = json_string(q, "question", at);
    const json& answers = json_field(q, "answers", at);
    SMEZO_REQUIRE(answers.is_array(), "%s:%lld: field \"answers\" should be an array",
                  at.path.c_str(), static_cast<long long>(at.line));
    for (const json& a : answers) {
      DataRow r;
      r.line = row.line;
      r.fields = {{"paragraph", text}, {"question", question}, {"answer", json_string(a, "text", at)}};
      if (a.is_object() && a.contains("label")) r.fields["label"] = a["label"];
      out->push_back(std::move(r));
    }
  }
}

DataFile task_read_records(TaskId task, const std::string& path, std::vector<int64_t>* groups) {
  require_data_file(path, task);
  const TaskSpec spec = task_spec_builtin(task);
  DataFile file = data_file_read(path, task_spec_fields(spec));
  SMEZO_REQUIRE(task == TASK_SST2 || file.format == DATA_JSONL, "%s: task %s reads JSON Lines", path.c_str(),
                task_name(task));
  std::vector<int64_t> local_groups;
  if (task == TASK_MULTIRC) {
    std::vector<DataRow> flat;
    for (size_t i = 0; i < file.rows.size(); i++) {
      RowAt at{path, file.rows[i].line};
      const size_t before = flat.size();
      try {
        flatten_multirc_row(file.rows[i], at, &flat);
      } catch (const json::exception& e) {  // a type mismatch deeper in the row
        throw_error("%s:%lld: bad row: %s", path.c_str(), static_cast<long long>(at.line),
                    printable(e.what()).c_str());
      }
      local_groups.insert(local_groups.end(), flat.size() - before, static_cast<int64_t>(i));
    }
    file.rows = std::move(flat);
  } else {
    for (size_t i = 0; i < file.rows.size(); i++) local_groups.push_back(static_cast<int64_t>(i));
  }
  if (groups) *groups = std::move(local_groups);
  return file;
}

std::vector<TaskExample> task_read_file(TaskId task, const std::string& path,
                                        std::vector<int64_t>* groups) {
  const DataFile file = task_read_records(task, path, groups);
  const TaskSpec spec = task_spec_builtin(task);
  std::vector<TaskExample> out;
  for (const DataRow& row : file.rows) out.push_back(task_spec_example(spec, file, row));
  SMEZO_REQUIRE(!out.empty(), "%s holds no examples (task %s)", path.c_str(), task_name(task));
  return out;
}

std::vector<std::string> task_source_files(TaskId task, const std::string& data_dir) {
  const TaskInfo& info = task_info(task);
  const std::string dir = data_dir + "/" + info.dir + "/";
  return {info.train_file ? dir + info.train_file : dir + info.test_file, dir + info.test_file};
}

// --- sampling

// numpy's legacy RandomState: seed(s) is MT19937's init_genrand(s), as std::mt19937's seeding.
class NumpyRandom {
 public:
  explicit NumpyRandom(uint64_t seed) : mt_(check_seed(seed)) {}

  // numpy's random_interval(max): draws masked to the smallest all-ones mask >= max, rejected > max.
  uint64_t interval(uint64_t max) {
    if (max == 0) return 0;
    uint64_t mask = max;
    for (int shift = 1; shift <= 32; shift *= 2) mask |= mask >> shift;
    uint64_t value;
    if (max <= 0xffffffffu) {
      do value = mt_() & mask; while (value > max);
    } else {  // never reached for our sizes; hi word first, as numpy's mt19937_next64
      do {
        uint64_t hi = mt_();
        value = ((hi << 32) | mt_()) & mask;
      } while (value > max);
    }
    return value;
  }

  // RandomState.shuffle of a 1-D array: for i = n-1 .. 1, swap v[i] and v[interval(i)].
  void shuffle(std::vector<int64_t>* v) {
    for (int64_t i = static_cast<int64_t>(v->size()) - 1; i > 0; i--)
      std::swap((*v)[i], (*v)[static_cast<int64_t>(interval(static_cast<uint64_t>(i)))]);
  }

 private:
  static uint32_t check_seed(uint64_t seed) {
    SMEZO_REQUIRE(seed <= 0xffffffffu,
                  "task sampling seed %llu is out of range 0 .. 4294967295 (MeZO's sampling uses "
                  "numpy's np.random.seed, which takes 32-bit seeds)",
                  static_cast<unsigned long long>(seed));
    return static_cast<uint32_t>(seed);
  }
  std::mt19937 mt_;
};

static std::vector<int64_t> iota_vector(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) v[i] = i;
  return v;
}

std::vector<int64_t> task_permutation(int64_t n, uint64_t seed) {
  SMEZO_REQUIRE(n >= 0, "task_permutation: negative size %lld", static_cast<long long>(n));
  NumpyRandom rng(seed);
  std::vector<int64_t> perm = iota_vector(n);
  rng.shuffle(&perm);
  return perm;
}

static void pick(const std::vector<TaskExample>& all, const std::vector<int64_t>& idx,
                 int64_t begin, int64_t end, std::vector<TaskExample>* out,
                 std::vector<int64_t>* index) {
  out->clear();
  index->assign(idx.begin() + begin, idx.begin() + end);
  for (int64_t i : *index) out->push_back(all[i]);
}

static void sample_from_train_split(const std::vector<TaskExample>& train_rows,
                                    const std::vector<TaskExample>& test_rows, uint64_t seed,
                                    int64_t n_train, int64_t n_dev, int64_t n_test,
                                    TaskSplits* s) {
  int64_t rows = static_cast<int64_t>(train_rows.size());
  int64_t dev = n_dev, train = n_train;
  if (rows < n_train + n_dev) {
    dev = std::min<int64_t>({n_dev, 100, rows / 2});
    train = std::min<int64_t>(n_train, rows - dev);
  }
  std::vector<int64_t> perm = task_permutation(rows, seed);
  pick(train_rows, perm, 0, train, &s->train, &s->train_index);
  pick(train_rows, perm, train, train + dev, &s->dev, &s->dev_index);
  int64_t test_n = static_cast<int64_t>(test_rows.size());
  std::vector<int64_t> tperm = task_permutation(test_n, seed);
  pick(test_rows, tperm, 0, std::min(n_test, test_n), &s->test, &s->test_index);
}

static void sample_carved(const std::vector<TaskExample>& rows,
                          const std::vector<int64_t>& groups, uint64_t seed, int64_t n_train,
                          int64_t n_dev, int64_t n_test, TaskSplits* s) {
  const int64_t n = static_cast<int64_t>(rows.size());
  int64_t want_train = n_train, want_dev = n_dev;
  if (n_train + n_dev > n / 2) {  // leave about half of the pool for testing
    want_train = n_train * (n / 2) / (n_train + n_dev);
    want_dev = n_dev * (n / 2) / (n_train + n_dev);
  }
  // Rows of each group (the readers emit a group's rows contiguously).
  std::vector<std::vector<int64_t>> members;
  for (int64_t i = 0; i < n; i++) {
    if (i == 0 || groups[i] != groups[i - 1]) members.emplace_back();
    members.back().push_back(i);
  }
  NumpyRandom rng(seed);
  std::vector<int64_t> gperm = iota_vector(static_cast<int64_t>(members.size()));
  rng.shuffle(&gperm);

  std::vector<int64_t> part[3];  // train, dev, test rows
  size_t g = 0;
  const int64_t wants[2] = {want_train, want_dev};
  for (int p = 0; p < 2; p++)
    while (g < gperm.size() && static_cast<int64_t>(part[p].size()) < wants[p]) {
      for (int64_t r : members[gperm[g]]) part[p].push_back(r);
      g++;
    }
  for (; g < gperm.size(); g++)
    for (int64_t r : members[gperm[g]]) part[2].push_back(r);

  const int64_t caps[3] = {want_train, want_dev, n_test};
  std::vector<TaskExample>* outs[3] = {&s->train, &s->dev, &s->test};
  std::vector<int64_t>* indices[3] = {&s->train_index, &s->dev_index, &s->test_index};
  for (int p = 0; p < 3; p++) {
    rng.shuffle(&part[p]);
    int64_t size = static_cast<int64_t>(part[p].size());
    pick(rows, part[p], 0, std::min(caps[p], size), outs[p], indices[p]);
  }
}

TaskSplits load_task(const std::string& name, uint64_t seed, int64_t n_train, int64_t n_dev,
                     int64_t n_test, const std::string& data_dir) {
  SMEZO_REQUIRE(n_train >= 0 && n_dev >= 0 && n_test >= 0,
                "load_task: sizes must be >= 0 (train %lld, dev %lld, test %lld)",
                static_cast<long long>(n_train), static_cast<long long>(n_dev),
                static_cast<long long>(n_test));
  TaskId id = task_parse_name(name);
  const TaskInfo& info = task_info(id);
  TaskSplits s;
  s.task = id;
  s.name = info.name;
  s.train_as_classification = task_trains_as_classification(id);
  std::string dir = data_dir + "/" + info.dir + "/";
  std::string test_path = dir + info.test_file;
  std::vector<int64_t> groups;
  std::vector<TaskExample> test_rows = task_read_file(id, test_path, &groups);
  s.test_source_rows = static_cast<int64_t>(test_rows.size());

  if (info.train_file) {
    std::string train_path = dir + info.train_file;
    std::vector<TaskExample> train_rows = task_read_file(id, train_path);
    s.train_source_rows = static_cast<int64_t>(train_rows.size());
    sample_from_train_split(train_rows, test_rows, seed, n_train, n_dev, n_test, &s);
    s.split_note = format_string(
        "%s: train %zu + dev %zu sampled (seed %llu, MeZO's numpy permutation) from %s/%s "
        "(%lld rows); test %zu sampled from %s/%s (%lld rows)",
        s.name.c_str(), s.train.size(), s.dev.size(), static_cast<unsigned long long>(seed),
        info.dir, info.train_file, static_cast<long long>(s.train_source_rows), s.test.size(),
        info.dir, info.test_file, static_cast<long long>(s.test_source_rows));
  } else {
    s.train_source_rows = s.test_source_rows;
    sample_carved(test_rows, groups, seed, n_train, n_dev, n_test, &s);
    const bool scaled = static_cast<int64_t>(s.train.size()) < n_train ||
                        static_cast<int64_t>(s.dev.size()) < n_dev;
    s.split_note = format_string(
        "%s: no full train split available; train %zu, dev %zu and test %zu are disjoint parts "
        "carved (seed %llu) from the validation set %s/%s (%lld rows%s)%s, so test accuracy is "
        "on part of the official validation set and is not directly comparable with results "
        "that train on the official train split",
        s.name.c_str(), s.train.size(), s.dev.size(), s.test.size(),
        static_cast<unsigned long long>(seed), info.dir, info.test_file,
        static_cast<long long>(s.test_source_rows),
        id == TASK_MULTIRC ? ", split by passage so no passage is in two parts" : "",
        scaled ? format_string("; train/dev scaled down from the requested %lld/%lld to leave "
                               "about half of the pool for testing",
                               static_cast<long long>(n_train), static_cast<long long>(n_dev))
                     .c_str()
               : "");
  }
  return s;
}

}  // namespace smezo
