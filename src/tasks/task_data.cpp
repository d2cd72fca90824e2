// Task datasets: file readers, MeZO sampling. See task_data.h for the formats and the
// sampling procedure.
#include "tasks/task_data.h"

#include <algorithm>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "formats/json_read.h"

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

bool task_has_train_split(TaskId task) { return task_info(task).train_file != nullptr; }

// --- reading rows

// Location of a row, for error messages.
struct RowAt {
  const std::string& path;
  int64_t line;  // 1-based
};

static std::ifstream open_data_file(const std::string& path, TaskId task) {
  std::ifstream f(path, std::ios::binary);
  SMEZO_REQUIRE(f.good(),
                "cannot open data file %s of task %s%s ---> HINT: --data DIR names the folder holding "
                "glue/ and superglue/; the default is the data/ folder of the assets (see "
                "weights/README.md)",
                path.c_str(), task_name(task),
                assets_found() ? "" : ("; " + assets_search_note()).c_str());
  return f;
}

static bool is_blank(const std::string& s) {
  return s.find_first_not_of(" \t\r\n") == std::string::npos;
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

// Label given as one of the names; returns its index.
static int json_label_name(const json& obj, const std::vector<std::string>& names, TaskId task,
                           const RowAt& at) {
  const json& v = json_field(obj, "label", at);
  std::string expected;
  for (size_t i = 0; i < names.size(); i++) {
    if (v.is_string() && v.get<std::string>() == names[i]) return static_cast<int>(i);
    expected += (i ? ", \"" : "\"") + names[i] + "\"";
  }
  throw_error("%s:%lld: label %s is not in the verbalizer of %s (expected one of %s)",
              at.path.c_str(), static_cast<long long>(at.line), json_brief(v).c_str(),
              task_name(task), expected.c_str());
}

static bool json_label_bool(const json& obj, TaskId task, const RowAt& at) {
  const json& v = json_field(obj, "label", at);
  SMEZO_REQUIRE(v.is_boolean(),
                "%s:%lld: label %s is not in the verbalizer of %s (expected true or false)",
                at.path.c_str(), static_cast<long long>(at.line), json_brief(v).c_str(),
                task_name(task));
  return v.get<bool>();
}

static int json_label_index(const json& obj, int n, TaskId task, const RowAt& at) {
  const json& v = json_field(obj, "label", at);
  SMEZO_REQUIRE(v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() < n,
                "%s:%lld: label %s is not in the verbalizer of %s (expected an integer 0..%d)",
                at.path.c_str(), static_cast<long long>(at.line), json_brief(v).c_str(),
                task_name(task), n - 1);
  return static_cast<int>(v.get<int64_t>());
}

static void read_multirc_row(const json& row, const RowAt& at, int64_t group,
                             std::vector<TaskExample>* out, std::vector<int64_t>* groups) {
  const json& passage = json_field(row, "passage", at);
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
      std::string answer = json_string(a, "text", at);
      int label = json_label_index(a, 2, TASK_MULTIRC, at);
      out->push_back(template_multirc(text, question, answer, label));
      groups->push_back(group);
    }
  }
}

// One JSON row -> examples (several for MultiRC).
static void read_json_row(TaskId task, const json& row, const RowAt& at, int64_t row_index,
                          std::vector<TaskExample>* out, std::vector<int64_t>* groups) {
  switch (task) {
    case TASK_RTE:
      out->push_back(template_rte(
          json_string(row, "premise", at), json_string(row, "hypothesis", at),
          json_label_name(row, {"entailment", "not_entailment"}, task, at)));
      break;
    case TASK_CB:
      out->push_back(template_cb(
          json_string(row, "premise", at), json_string(row, "hypothesis", at),
          json_label_name(row, {"entailment", "contradiction", "neutral"}, task, at)));
      break;
    case TASK_BOOLQ:
      out->push_back(template_boolq(json_string(row, "passage", at),
                                    json_string(row, "question", at),
                                    json_label_bool(row, task, at)));
      break;
    case TASK_WIC:
      out->push_back(template_wic(json_string(row, "word", at), json_string(row, "sentence1", at),
                                  json_string(row, "sentence2", at),
                                  json_label_bool(row, task, at)));
      break;
    case TASK_COPA:
      out->push_back(template_copa(json_string(row, "premise", at), json_string(row, "choice1", at),
                                   json_string(row, "choice2", at),
                                   json_string(row, "question", at),
                                   json_label_index(row, 2, task, at)));
      break;
    case TASK_MULTIRC:
      read_multirc_row(row, at, row_index, out, groups);
      return;
    case TASK_SST2:
      throw_error("%s: sst2 is read from a TSV file, not JSONL", at.path.c_str());
  }
  groups->push_back(row_index);
}

static void read_jsonl(TaskId task, const std::string& path, std::vector<TaskExample>* out,
                       std::vector<int64_t>* groups) {
  std::ifstream f = open_data_file(path, task);
  std::string line;
  int64_t line_no = 0, row_index = 0;
  while (std::getline(f, line)) {
    line_no++;
    if (is_blank(line)) continue;
    RowAt at{path, line_no};
    json row = json_parse_strict(line.data(), line.data() + line.size(),
                                 format_string("%s:%lld: malformed JSON line", path.c_str(),
                                               static_cast<long long>(line_no)));
    SMEZO_REQUIRE(row.is_object(), "%s:%lld: expected a JSON object, got %s", path.c_str(),
                  static_cast<long long>(line_no), json_brief(row).c_str());
    try {
      read_json_row(task, row, at, row_index, out, groups);
    } catch (const json::exception& e) {  // a type mismatch deeper in the row
      throw_error("%s:%lld: bad row: %s", path.c_str(), static_cast<long long>(line_no),
                  printable(e.what()).c_str());
    }
    row_index++;
  }
}

static std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    size_t tab = line.find('\t', start);
    size_t len = tab == std::string::npos ? std::string::npos : tab - start;
    fields.push_back(line.substr(start, len));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  return fields;
}

static void read_sst2_tsv(const std::string& path, std::vector<TaskExample>* out,
                          std::vector<int64_t>* groups) {
  std::ifstream f = open_data_file(path, TASK_SST2);
  std::string line;
  int64_t line_no = 0;
  int sentence_col = -1, label_col = -1;
  size_t n_cols = 0;
  while (std::getline(f, line)) {
    line_no++;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1) {
      std::vector<std::string> header = split_tabs(line);
      for (size_t i = 0; i < header.size(); i++) {
        if (header[i] == "sentence") sentence_col = static_cast<int>(i);
        if (header[i] == "label") label_col = static_cast<int>(i);
      }
      SMEZO_REQUIRE(sentence_col >= 0 && label_col >= 0,
                    "%s:1: expected a header with columns \"sentence\" and \"label\" "
                    "separated by a tab, got \"%s\"",
                    path.c_str(), printable(line, 80).c_str());
      n_cols = header.size();
      continue;
    }
    if (is_blank(line)) continue;
    std::vector<std::string> fields = split_tabs(line);
    SMEZO_REQUIRE(fields.size() == n_cols, "%s:%lld: expected %zu tab-separated fields, got %zu",
                  path.c_str(), static_cast<long long>(line_no), n_cols, fields.size());
    const std::string& label = fields[label_col];
    SMEZO_REQUIRE(label == "0" || label == "1",
                  "%s:%lld: label \"%s\" is not in the verbalizer of sst2 (expected 0 or 1)",
                  path.c_str(), static_cast<long long>(line_no), printable(label, 40).c_str());
    groups->push_back(static_cast<int64_t>(out->size()));
    out->push_back(template_sst2(fields[sentence_col], label == "1" ? 1 : 0));
  }
  SMEZO_REQUIRE(line_no > 0, "%s is empty (expected a header \"sentence\\tlabel\" and rows)",
                path.c_str());
}

std::vector<TaskExample> task_read_file(TaskId task, const std::string& path,
                                        std::vector<int64_t>* groups) {
  std::vector<TaskExample> out;
  std::vector<int64_t> local_groups;
  if (task == TASK_SST2) read_sst2_tsv(path, &out, &local_groups);
  else read_jsonl(task, path, &out, &local_groups);
  SMEZO_REQUIRE(!out.empty(), "%s holds no examples (task %s)", path.c_str(), task_name(task));
  if (groups) *groups = std::move(local_groups);
  return out;
}

// --- sampling

// numpy's legacy generator: np.random.seed(seed) is MT19937's init_genrand(seed), as
// std::mt19937's seeding; RandomState.shuffle draws with random_interval.
class NumpyRandom {
 public:
  explicit NumpyRandom(uint64_t seed) : mt_(check_seed(seed)) {}

  // numpy's random_interval(max): uniform in [0, max] by rejection, masking raw draws to the
  // smallest all-ones mask >= max.
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

// out = all[idx[begin..end)], index = idx[begin..end).
static void pick(const std::vector<TaskExample>& all, const std::vector<int64_t>& idx,
                 int64_t begin, int64_t end, std::vector<TaskExample>* out,
                 std::vector<int64_t>* index) {
  out->clear();
  index->assign(idx.begin() + begin, idx.begin() + end);
  for (int64_t i : *index) out->push_back(all[i]);
}

// MeZO's protocol for tasks with a train split.
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

// Carving train/dev/test out of one labelled pool, whole groups at a time.
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
