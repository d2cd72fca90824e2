// Task specs (src/tasks/task_spec.h) and training from data files (task_files.h):
//  * the built-in tasks' specs give exactly MeZO's templates (tests/mezo_templates.h, kept as the
//    reference) on every real row, and the shipped spec files are the compiled-in ones;
//  * a hand-written spec turns records into examples as the format says (classification with
//    fixed or per-record candidates, generation with references), and each bad record or spec
//    is a one-line error naming file, line and field; --check-data lists them all;
//  * THE equivalence: built-in SST-2 and its export (smezo train --export-data) train to
//    byte-identical seed logs and weights, and an export of every task reads back as the
//    same examples.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <sstream>

#include "common/assets.h"
#include "common/check.h"
#include "cuda/cuda_check.h"
#include "model_fixture.h"
#include "tasks/task_files.h"
#include "tasks/task_spec.h"
#include "mezo_templates.h"
#include "tasks/templates.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

using namespace smezo;
using nlohmann::json;
using smezo_test::error_of;
using smezo_test::template_boolq;
using smezo_test::template_cb;
using smezo_test::template_copa;
using smezo_test::template_multirc;
using smezo_test::template_rte;
using smezo_test::template_sst2;
using smezo_test::template_wic;
using smezo_test::read_file;
using smezo_test::run_command;
using testing::HasSubstr;

namespace {

const TaskId kTasks[] = {TASK_SST2, TASK_RTE, TASK_BOOLQ, TASK_WIC, TASK_MULTIRC, TASK_COPA, TASK_CB};

// The example MeZO's template (mezo_templates.h) makes of a built-in task's record.
TaskExample mezo_example(TaskId task, const json& r) {
  auto s = [&](const char* k) { return r.at(k).get<std::string>(); };
  auto index_of = [&](std::vector<std::string> names) {
    for (size_t i = 0; i < names.size(); i++)
      if (r.at("label") == names[i]) return static_cast<int>(i);
    return -1;
  };
  switch (task) {
    case TASK_SST2: return template_sst2(s("sentence"), s("label") == "1" ? 1 : 0);
    case TASK_RTE: return template_rte(s("premise"), s("hypothesis"), index_of({"entailment", "not_entailment"}));
    case TASK_CB:
      return template_cb(s("premise"), s("hypothesis"), index_of({"entailment", "contradiction", "neutral"}));
    case TASK_BOOLQ: return template_boolq(s("passage"), s("question"), r.at("label").get<bool>());
    case TASK_WIC: return template_wic(s("word"), s("sentence1"), s("sentence2"), r.at("label").get<bool>());
    case TASK_MULTIRC: return template_multirc(s("paragraph"), s("question"), s("answer"), r.at("label").get<int>());
    case TASK_COPA:
      return template_copa(s("premise"), s("choice1"), s("choice2"), s("question"), r.at("label").get<int>());
  }
  return {};
}

void expect_same_examples(const std::vector<TaskExample>& a, const std::vector<TaskExample>& b,
                          const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); i++) {
    EXPECT_EQ(a[i].contexts, b[i].contexts) << what << " " << i;
    EXPECT_EQ(a[i].options, b[i].options) << what << " " << i;
    EXPECT_EQ(a[i].gold, b[i].gold) << what << " " << i;
  }
}

class TaskSpecFiles : public testing::Test {
 protected:
  void SetUp() override { dir_ = smezo_test::make_temp_dir("task_spec"); }
  std::string put(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    smezo_test::write_file(path, bytes);
    return path;
  }
  std::string dir_;
};

const char kReviewSpec[] = R"({"name": "reviews", "prompt": "Review: {text|strip}\nSentiment:",
  "candidates": [" bad", " good", " {extra}"], "label": {"field": "stars", "values": [1, "2", true]}})";

}  // namespace

// --- the built-in tasks

TEST(TaskSpec, ShippedFilesAreTheBuiltInSpecs) {
  for (TaskId t : kTasks) {
    const std::string file = std::string("src/tasks/specs/") + task_name(t) + ".json";
    EXPECT_EQ(read_file(file), task_spec_builtin_text(t)) << file;
    EXPECT_EQ(task_spec_builtin(t).name, task_name(t));
    EXPECT_EQ(task_spec_builtin(t).train_as_classification, task_trains_as_classification(t));
  }
}

TEST(TaskSpec, BuiltInSpecsAreMeZOsTemplatesOnEveryRealRow) {
  for (TaskId t : kTasks) {
    for (const std::string& path : task_source_files(t, asset_path("data"))) {
      const DataFile records = task_read_records(t, path);
      const std::vector<TaskExample> by_spec = task_read_file(t, path);
      std::vector<TaskExample> by_template;
      for (const DataRow& r : records.rows) by_template.push_back(mezo_example(t, r.fields));
      expect_same_examples(by_spec, by_template, path);
      EXPECT_GT(by_spec.size(), 50u) << path;
    }
  }
}

// --- a hand-written spec

TEST_F(TaskSpecFiles, ClassificationRecordsBecomeExamples) {
  const TaskSpec spec = task_spec_parse(kReviewSpec, "reviews.json");
  EXPECT_EQ(task_spec_fields(spec), (std::vector<std::string>{"text", "extra", "stars"}));
  std::mt19937 rng(static_cast<uint32_t>(smezo_test::mixed_seed(244)));
  const std::vector<json> labels = {1, "2", true};  // the three ways a label may be written
  std::string jsonl;
  std::vector<json> rows;
  for (int i = 0; i < 20; i++) {
    json r = {{"text", "  text " + std::to_string(rng() % 1000) + " \n"}, {"extra", "so-so " + std::to_string(i)},
              {"stars", labels[rng() % 3]}};
    rows.push_back(r);
    jsonl += r.dump() + "\n";
  }
  const TaskSplits s = load_task_files({put("spec.json", kReviewSpec), put("train.jsonl", jsonl), "", ""}, 15, 5, 5);
  EXPECT_EQ(s.name, "reviews");
  EXPECT_FALSE(s.generation);
  EXPECT_TRUE(s.train_as_classification);
  ASSERT_EQ(s.train.size(), 15u);  // capped, in file order
  EXPECT_TRUE(s.dev.empty() && s.test.empty());
  for (size_t i = 0; i < s.train.size(); i++) {
    const std::string text = template_strip_whitespace(rows[i]["text"].get<std::string>());
    const std::string context = "Review: " + text + "\nSentiment:";
    EXPECT_EQ(s.train[i].contexts, std::vector<std::string>(3, context));
    EXPECT_EQ(s.train[i].options,
              (std::vector<std::string>{" bad", " good", " " + rows[i]["extra"].get<std::string>()}));
    const json& l = rows[i]["stars"];
    EXPECT_EQ(s.train[i].gold, l == 1 ? 0 : l == "2" ? 1 : 2) << i;
    EXPECT_TRUE(s.train[i].references.empty());
  }
  // CSV values are text: "1" matches the spec's 1, "true" its true
  const TaskSplits c =
      load_task_files({dir_ + "/spec.json", put("t.csv", "stars,text,extra\n1,\"a, b\",x\ntrue,c,y\n"), "", ""}, 9, 0, 0);
  ASSERT_EQ(c.train.size(), 2u);
  EXPECT_EQ(c.train[0].gold, 0);
  EXPECT_EQ(c.train[0].contexts[0], "Review: a, b\nSentiment:");
  EXPECT_EQ(c.train[1].gold, 2);
}

TEST_F(TaskSpecFiles, PerRecordCandidatesByIndexOrText) {
  const std::string spec = put("mc.json", R"({"name": "mc", "prompt": "Q: {q}\nA:",
      "candidates": {"field": "options", "prefix": " "}, "label": {"field": "answer"}})");
  const std::string data = put("mc.jsonl", "{\"q\": \"2+2?\", \"options\": [\"3\", \"4\", \"5\"], \"answer\": 1}\n"
                                           "{\"q\": \"sky?\", \"options\": [\"blue\", \"green\"], \"answer\": \"green\"}\n");
  const TaskSplits s = load_task_files({spec, data, "", ""}, 10, 0, 0);
  ASSERT_EQ(s.train.size(), 2u);
  EXPECT_EQ(s.train[0].options, (std::vector<std::string>{" 3", " 4", " 5"}));
  EXPECT_EQ(s.train[0].contexts[0], "Q: 2+2?\nA:");
  EXPECT_EQ(s.train[0].gold, 1);
  EXPECT_EQ(s.train[1].options, (std::vector<std::string>{" blue", " green"}));
  EXPECT_EQ(s.train[1].gold, 1);
}

TEST_F(TaskSpecFiles, GenerationSpecGivesCompletionAndReferences) {
  const std::string spec = put("qa.json", R"({"name": "qa", "kind": "generation",
      "prompt": "Question: {question|ensure_question_mark|capitalize_first}\nAnswer:", "completion_field": "answers",
      "completion_prefix": " ", "max_new_tokens": 7, "stop": ["\n", "."]})");
  const std::string data = put("qa.jsonl", "{\"question\": \"is water wet\", \"answers\": [\"yes\", \"Yes, it is\"]}\n"
                                           "{\"question\": \"Capital of France?\", \"answers\": \"Paris\"}\n");
  const TaskSplits s = load_task_files({spec, data, data, data}, 10, 1, 2);
  EXPECT_TRUE(s.generation);
  EXPECT_FALSE(s.train_as_classification);
  EXPECT_EQ(s.max_new_tokens, 7);
  EXPECT_EQ(s.stop, (std::vector<std::string>{"\n", "."}));
  ASSERT_EQ(s.train.size(), 2u);
  EXPECT_EQ(s.dev.size(), 1u);
  EXPECT_EQ(s.test.size(), 2u);
  EXPECT_EQ(s.train[0].contexts, std::vector<std::string>{"Question: Is water wet?\nAnswer:"});
  EXPECT_EQ(s.train[0].options, std::vector<std::string>{" yes"});
  EXPECT_EQ(s.train[0].gold, 0);
  EXPECT_EQ(s.train[0].references, (std::vector<std::string>{"yes", "Yes, it is"}));
  EXPECT_EQ(s.train[1].options, std::vector<std::string>{" Paris"});
  EXPECT_EQ(s.train[1].references, std::vector<std::string>{"Paris"});
}

TEST_F(TaskSpecFiles, EachBadRecordIsOneLineNamingFileLineAndField) {
  const std::string spec = put("r.json", kReviewSpec);
  const std::string gen = put("g.json", R"({"name": "g", "kind": "generation", "prompt": "{q}", "completion_field": "a"})");
  const std::string copa = put("copa.json", task_spec_builtin_text(TASK_COPA));
  struct Case {
    const std::string* spec;
    const char* name;
    std::string row;
    std::string expected;  // after "<path>:2: "
  };
  const Case cases[] = {
      {&spec, "missing.jsonl", R"({"text": "t", "stars": 1})", "missing field \"extra\""},
      {&spec, "type.jsonl", R"({"text": 5, "extra": "e", "stars": 1})", "field \"text\" should be a string, got 5"},
      {&spec, "label.jsonl", R"({"text": "t", "extra": "e", "stars": 3})",
       "label 3 is not in the verbalizer of reviews (field \"stars\"; expected one of \"1\", \"2\", \"true\")"},
      {&spec, "label.csv", "x,e,3", "label \"3\" is not in the verbalizer of reviews"},
      {&spec, "emptyopt.jsonl", R"({"text": "t", "extra": "", "stars": 1})", "candidate 2 renders empty"},
      {&gen, "empty.jsonl", R"({"q": "x", "a": " "})", "field \"a\": empty completion"},
      {&gen, "emptyref.jsonl", R"({"q": "x", "a": ["y", ""]})", "field \"a\": empty completion"},
      {&gen, "nolist.jsonl", R"({"q": "x", "a": 3})", "field \"a\" should be a string or a non-empty list of strings"},
      {&copa, "map.jsonl", R"({"premise": "p.", "choice1": "a", "choice2": "b", "question": "why", "label": 0})",
       "field \"question\": value \"why\" is not in the spec's map \"connective\""},
  };
  for (const Case& c : cases) {
    const bool csv = std::string(c.name).find(".csv") != std::string::npos;
    const std::string first = csv ? "text,extra,stars\n" : "{\"text\": \"t\", \"extra\": \"e\", \"stars\": 1}\n";
    const std::string path = put(c.name, (csv || c.spec == &spec ? first : "\n") + c.row + "\n");
    const std::string msg = error_of([&] { load_task_files({*c.spec, path, "", ""}, 10, 0, 0); });
    EXPECT_THAT(msg, HasSubstr(path + ":2: " + c.expected)) << c.name;
    EXPECT_TRUE(smezo_test::is_one_line(msg)) << c.name;
  }
}

TEST_F(TaskSpecFiles, EachBadSpecIsOneLineNamingTheKey) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"prompt": "x", "candidates": ["a", "b"], "label": {"field": "l"}})", "missing \"name\""},
      {R"({"name": "n", "prompt": "x", "candidates": ["a", "b"], "label": {"field": "l"}, "verbalizer": 1})",
       "unknown key \"verbalizer\" for a classification spec"},
      {R"({"name": "n", "kind": "regression", "prompt": "x"})", "\"kind\" is \"regression\""},
      {R"({"name": "n", "prompt": "{x|upper}", "candidates": ["a", "b"], "label": {"field": "l"}})",
       "unknown filter \"upper\""},
      {R"({"name": "n", "prompt": "{x", "candidates": ["a", "b"], "label": {"field": "l"}})", "an unclosed '{'"},
      {R"({"name": "n", "prompt": "x}", "candidates": ["a", "b"], "label": {"field": "l"}})", "a single '}'"},
      {R"({"name": "n", "prompt": "x", "candidates": ["a", "b"], "label": {"field": "l", "values": [0]}})",
       "\"label.values\" lists 1 values for 2 fixed candidates"},
      {R"({"name": "n", "prompt": "x", "candidates": ["a"], "label": {"field": "l"}})", "at least 2"},
      {R"({"name": "n", "kind": "generation", "prompt": "x", "completion_field": "c", "max_new_tokens": 0})",
       "\"max_new_tokens\" should be >= 1"},
      {R"({"name": "n", "prompt": "{x|map:m}", "candidates": ["a", "b"], "label": {"field": "l"}})",
       "unknown filter \"map:m\""},
  };
  for (const auto& [text, expected] : cases) {
    const std::string msg = error_of([&] { task_spec_parse(text, "my_spec.json"); });
    EXPECT_THAT(msg, HasSubstr("my_spec.json: ")) << text;
    EXPECT_THAT(msg, HasSubstr(expected)) << text;
    EXPECT_TRUE(smezo_test::is_one_line(msg)) << text;
  }
  EXPECT_THAT(error_of([&] { task_spec_read(dir_ + "/none.json"); }), HasSubstr("cannot open task spec"));
  // a NUL after the object would end the text for JSON's parser; the spec is refused
  const std::string nul =
      std::string(R"({"name": "n", "prompt": "x", "candidates": ["a", "b"], "label": {"field": "l"}})") +
      std::string(1, '\0') + "junk";
  EXPECT_THAT(error_of([&] { task_spec_parse(nul, "my_spec.json"); }),
              HasSubstr("my_spec.json: byte 0x00 (NUL) at offset 79"));
}

// Candidates a model cannot tell apart are refused, naming the spec (its own candidates and
// label values) or the record (rendered or per-record options), by --check-data and training.
TEST_F(TaskSpecFiles, CandidatesThatCannotBeToldApartAreRefused) {
  const std::pair<const char*, const char*> specs[] = {
      {R"({"name": "n", "prompt": "x", "candidates": [" great", " bad", " great"], "label": {"field": "l"}})",
       "\"candidates\" 0 and 2 are the same text \" great\": the model cannot tell them apart"},
      {R"({"name": "n", "prompt": "x", "candidates": [" great", " great  "], "label": {"field": "l"}})",
       "\"candidates\" 0 and 1 are the same text \" great\""},
      {R"({"name": "n", "prompt": "x", "candidates": [" a", " b"], "label": {"field": "l", "values": [1, "1"]}})",
       "\"label.values\" 0 and 1 are both \"1\""},
      {R"({"name": "n", "prompt": "x", "candidates": [" a", " b"], "label": {"field": "l", "values": [true, "true"]}})",
       "\"label.values\" 0 and 1 are both \"true\""},
      {R"({"name": "n", "prompt": "x", "candidates": [" a", " b"], "label": {"field": "l", "values": [1.5, 2]}})",
       "\"label.values\" should hold strings, integers or booleans (a label is matched by its text), got 1.5"},
  };
  const std::string row = put("row.jsonl", "{\"l\": 1}\n");
  for (const auto& [text, expected] : specs) {
    const std::string spec = put("spec.json", text);
    const std::string msg = error_of([&] { load_task_files({spec, row, "", ""}, 10, 0, 0); });
    EXPECT_THAT(msg, HasSubstr(spec + ": " + expected)) << text;
    EXPECT_TRUE(smezo_test::is_one_line(msg)) << text;
    const std::vector<std::string> problems = check_task_files({spec, row, "", ""});
    ASSERT_EQ(problems.size(), 1u) << text;
    EXPECT_THAT(problems[0], HasSubstr(expected));
  }
  const std::string mc = put("mc.json", R"({"name": "mc", "prompt": "Q: {q}\nA:",
      "candidates": {"field": "options", "prefix": " "}, "label": {"field": "answer"}})");
  const std::string pairs = put("pair.json", R"({"name": "p", "prompt": "{q}", "candidates": [" {c1}", " {c2}"],
      "label": {"field": "answer"}})");
  const std::string mc_rows = put("mc.jsonl", "{\"q\": \"x\", \"options\": [\"a\", \"b\"], \"answer\": 0}\n"
                                              "{\"q\": \"x\", \"options\": [\"only\"], \"answer\": 0}\n"
                                              "{\"q\": \"x\", \"options\": [\"a\", \"b\", \"a\"], \"answer\": 1}\n"
                                              "{\"q\": \"x\", \"options\": [\"a\", \"a \"], \"answer\": 1}\n");
  const std::string pair_rows = put("pair.csv", "q,c1,c2,answer\nx,up,down,0\nx,up,up,1\n");
  std::vector<std::string> problems = check_task_files({mc, mc_rows, "", ""});
  ASSERT_EQ(problems.size(), 3u) << testing::PrintToString(problems);
  EXPECT_THAT(problems[0], HasSubstr(mc_rows + ":2: field \"options\" holds 1 option: a classification needs at "
                                     "least 2"));
  EXPECT_THAT(problems[1], HasSubstr(mc_rows + ":3: field \"options\": options 0 and 2 are the same text \" a\""));
  EXPECT_THAT(problems[2], HasSubstr(mc_rows + ":4: field \"options\": options 0 and 1 are the same text \" a\""));
  problems = check_task_files({pairs, pair_rows, "", ""});
  ASSERT_EQ(problems.size(), 1u) << testing::PrintToString(problems);
  EXPECT_THAT(problems[0], HasSubstr(pair_rows + ":3: candidates 0 and 1 render the same text \" up\" (templates "
                                     "\" {c1}\" and \" {c2}\")"));
  // training refuses them too (the first problem), in one line
  EXPECT_THAT(error_of([&] { load_task_files({pairs, pair_rows, "", ""}, 10, 0, 0); }), HasSubstr(pair_rows + ":3:"));
  std::string out;
  EXPECT_EQ(run_command(smezo_test::smezo_binary() + " train --steps 1 --task-spec " + mc + " --train-file " + mc_rows,
                        &out), 1) << out;
  EXPECT_THAT(out, HasSubstr(mc_rows + ":2: field \"options\" holds 1 option"));
  EXPECT_TRUE(smezo_test::is_one_line_output(out)) << out;
  // the comparison can fail: distinct candidates pass
  EXPECT_TRUE(check_task_files({pairs, put("ok.csv", "q,c1,c2,answer\nx,up,down,1\n"), "", ""}).empty());
}

// An index label (a spec without "label.values") reads the same in every format: a number or
// its decimal digits as a string (CSV and TSV hold nothing else); a string that is one
// option's text and another option's index is refused.
TEST_F(TaskSpecFiles, IndexLabelsReadTheSameInEveryFormat) {
  const std::string spec = put("abc.json", R"({"name": "abc", "prompt": "{t}", "candidates": [" a", " b", " c"],
      "label": {"field": "l"}})");
  const std::vector<int> gold = {0, 1, 2, 2};
  const std::string files[] = {put("i.jsonl", "{\"t\": \"x\", \"l\": 0}\n{\"t\": \"x\", \"l\": \"1\"}\n"
                                              "{\"t\": \"x\", \"l\": 2}\n{\"t\": \"x\", \"l\": \"2\"}\n"),
                               put("i.csv", "t,l\nx,0\nx,1\nx,2\n\"x\",\"2\"\n"),
                               put("i.tsv", "t\tl\nx\t0\nx\t1\nx\t2\nx\t2\n")};
  for (const std::string& f : files) {
    const TaskSplits s = load_task_files({spec, f, "", ""}, 10, 0, 0);
    ASSERT_EQ(s.train.size(), gold.size()) << f;
    for (size_t i = 0; i < gold.size(); i++) EXPECT_EQ(s.train[i].gold, gold[i]) << f << " row " << i;
  }
  const std::string expected = "is not in the verbalizer of abc (field \"l\"; expected an index 0..2 (a number, or "
                               "its digits as a string))";
  for (const char* label : {"\"01\"", "\"-1\"", "-1", "3", "\"3\"", "1.0", "\"1.0\"", "\" 1\"", "\"\"", "\"b\"", "true"}) {
    const std::string path = put("bad.jsonl", std::string("{\"t\": \"x\", \"l\": ") + label + "}\n");
    EXPECT_THAT(error_of([&] { load_task_files({spec, path, "", ""}, 10, 0, 0); }), HasSubstr(expected)) << label;
  }
  for (const char* label : {"01", "-1", "3", "1.0", "\" 1\"", "b", "true"}) {
    const std::string path = put("bad.csv", std::string("t,l\nx,") + label + "\n");
    EXPECT_THAT(error_of([&] { load_task_files({spec, path, "", ""}, 10, 0, 0); }), HasSubstr(expected)) << label;
  }
  // per-record options: by text or by index; both readings must name the same option
  const std::string mc = put("mc.json", R"({"name": "mc", "prompt": "{q}", "candidates": {"field": "o"},
      "label": {"field": "answer"}})");
  const std::string ok = put("mc.jsonl", "{\"q\": \"x\", \"o\": [\"x\", \"1\"], \"answer\": \"1\"}\n"
                                         "{\"q\": \"x\", \"o\": [\"1\", \"2\", \"3\"], \"answer\": 2}\n"
                                         "{\"q\": \"x\", \"o\": [\"yes\", \"no\"], \"answer\": \"no\"}\n"
                                         "{\"q\": \"x\", \"o\": [\"yes\", \"no\"], \"answer\": \"0\"}\n");
  const TaskSplits s = load_task_files({mc, ok, "", ""}, 10, 0, 0);
  ASSERT_EQ(s.train.size(), 4u);
  EXPECT_EQ(s.train[0].gold, 1);
  EXPECT_EQ(s.train[1].gold, 2);
  EXPECT_EQ(s.train[2].gold, 1);
  EXPECT_EQ(s.train[3].gold, 0);
  const std::string two = put("two.jsonl", "{\"q\": \"x\", \"o\": [\"1\", \"2\", \"3\"], \"answer\": \"2\"}\n");
  const std::string msg = error_of([&] { load_task_files({mc, two, "", ""}, 10, 0, 0); });
  EXPECT_THAT(msg, HasSubstr(two + ":1: label \"2\" in field \"answer\" names two options: option 1 by its text and "
                             "option 2 by index ---> HINT: give the gold option's 0-based index as a JSON number"));
}

// --- --check-data

TEST_F(TaskSpecFiles, CheckDataListsEveryProblemOfEveryFile) {
  const std::string spec = put("r.json", kReviewSpec);
  const std::string ok = R"({"text": "t", "extra": "e", "stars": 1})";
  const std::string train = put("train.jsonl", ok + "\n{\"text\": \"t\", \"stars\": 1}\nnot json\n" + ok +
                                                   "\n{\"text\": \"t\", \"extra\": \"e\", \"stars\": 9}\n");
  const std::string dev = put("dev.csv", "text,extra,stars\nt,e,1\nt,e\nt,e,0\n");
  const std::vector<std::string> problems = check_task_files({spec, train, dev, ""});
  ASSERT_EQ(problems.size(), 5u) << testing::PrintToString(problems);
  EXPECT_THAT(problems[0], HasSubstr(train + ":2: missing field \"extra\""));  // in line order
  EXPECT_THAT(problems[1], HasSubstr(train + ":3: malformed JSON line"));
  EXPECT_THAT(problems[2], HasSubstr(train + ":5: label 9 is not in the verbalizer"));
  EXPECT_THAT(problems[3], HasSubstr(dev + ":3: expected 3 comma-separated fields"));
  EXPECT_THAT(problems[4], HasSubstr(dev + ":4: label \"0\" is not in the verbalizer"));
  EXPECT_TRUE(check_task_files({spec, put("clean.jsonl", ok + "\n"), "", ""}).empty());

  // the command: every problem on its own line, exit 1; clean files exit 0; no model is loaded
  std::string out;
  const std::string cmd = smezo_test::smezo_binary() + " train --check-data --model /nonexistent --tokenizer " +
                          asset_path("tokenizers/tinystories-512.model") + " --task-spec " + spec;
  EXPECT_EQ(run_command(cmd + " --train-file " + train + " --dev-file " + dev, &out), 1) << out;
  EXPECT_EQ(smezo_test::occurrences(out, "\n"), 6u) << out;
  EXPECT_THAT(out, HasSubstr("check-data: 5 problems in " + spec));
  EXPECT_EQ(run_command(cmd + " --train-file " + dir_ + "/clean.jsonl", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("check-data: 0 problems"));
  EXPECT_NE(run_command(smezo_test::smezo_binary() + " train --train-file " + train, &out), 0);
  EXPECT_THAT(out, HasSubstr("need --task-spec"));
  EXPECT_NE(run_command(cmd + " --task rte --train-file " + train, &out), 0);
  EXPECT_THAT(out, HasSubstr("not both"));
}

// --check-data knows --max-len and the model's tokenizer: a candidate whose tokens cannot fit
// (a verbalizer, a per-record option, a completion) is named by file:line and field, its text
// shortened; training names the record and the candidate too.
TEST_F(TaskSpecFiles, CheckDataFindsCandidatesLongerThanMaxLen) {
  std::string words;
  for (int i = 0; i < 60; i++) words += (i ? " " : "") + std::string(i % 2 ? "happy" : "little dog");
  const std::unique_ptr<Tokenizer> tok = load_sentencepiece_tokenizer(asset_path("tokenizers/tinystories-512.model"));
  const std::string fixed = put("fixed.json", R"({"name": "f", "prompt": "{t}", "candidates": [" no", " {long}"],
      "label": {"field": "l"}})");
  const std::string mc = put("mc.json", R"({"name": "mc", "prompt": "{t}", "candidates": {"field": "o", "prefix": " "},
      "label": {"field": "l"}})");
  const std::string gen = put("gen.json", R"({"name": "g", "kind": "generation", "prompt": "{t}",
      "completion_field": "a", "completion_prefix": " "})");
  const std::string short_row = json({{"t", "Once"}, {"long", "yes"}, {"o", {"a", "b"}}, {"a", "yes"}, {"l", 0}}).dump();
  const std::string long_row = json({{"t", "Once"}, {"long", words}, {"o", {"a", words}}, {"a", words}, {"l", 1}}).dump();
  const std::string data = put("d.jsonl", short_row + "\n" + long_row + "\n");
  const std::pair<std::string, std::string> cases[] = {
      {fixed, "candidate 1 (template \" {long}\") \" little dog happy little dog"},
      {mc, "field \"o\", option 1 \" little dog happy little dog"},
      {gen, "field \"a\" (the completion) \" little dog happy little dog"},
  };
  for (const auto& [spec, expected] : cases) {
    const std::vector<std::string> problems = check_task_files({spec, data, "", ""}, {tok.get(), 32});
    ASSERT_EQ(problems.size(), 1u) << spec << testing::PrintToString(problems);
    EXPECT_THAT(problems[0], HasSubstr(data + ":2: " + expected)) << spec;
    EXPECT_THAT(problems[0], testing::ContainsRegex("\\.\\.\\.\\([0-9]+ bytes\\)\" is [0-9]+ tokens long and does not "
                                                    "fit in --max-len 32 with BOS ---> HINT: raise --max-len to"));
    EXPECT_LT(problems[0].size(), 400u) << problems[0];  // shortened: the text is 509 bytes
    // the comparison can fail: a --max-len it fits in, and no tokenizer (no length check)
    EXPECT_TRUE(check_task_files({spec, data, "", ""}, {tok.get(), 2048}).empty()) << spec;
    EXPECT_TRUE(check_task_files({spec, data, "", ""}).empty()) << spec;
  }
  // the command: the model's tokenizer (its weights are not loaded) and --max-len
  const std::string check = smezo_test::smezo_binary() + " train --check-data --model /nonexistent --tokenizer " +
                            asset_path("tokenizers/tinystories-512.model") + " --task-spec " + gen + " --train-file " +
                            data;
  std::string out;
  EXPECT_EQ(run_command(check + " --max-len 32", &out), 1) << out;
  EXPECT_THAT(out, HasSubstr(data + ":2: field \"a\" (the completion)"));
  EXPECT_THAT(out, HasSubstr("check-data: 1 problem in " + gen + " and its data files (lengths: --max-len 32, "
                             "tokenizer " + asset_path("tokenizers/tinystories-512.model") + ")"));
  EXPECT_EQ(run_command(check + " --max-len 2048", &out), 0) << out;
  // training stops at it, naming the record and the candidate, the text shortened
  EXPECT_EQ(run_command(smezo_test::smezo_binary() + " train --steps 1 --max-len 32 --train-examples 2 --task-spec " +
                        fixed + " --train-file " + data + " --out " + dir_ + "/run", &out), 1) << out;
  EXPECT_THAT(out, HasSubstr(data + ":2: candidate 1: option \" little dog happy"));
  EXPECT_THAT(out, HasSubstr("does not fit in max_len 32 with BOS ---> HINT: raise --max-len"));
  EXPECT_TRUE(smezo_test::is_one_line_output(out)) << out;
  EXPECT_LT(out.size(), 400u) << out;
}

// A spec with many labels warns once, with the label count and what a step will score; a
// 64-label spec (the threshold) does not.
TEST_F(TaskSpecFiles, ManyCandidatesWarnWithTheEstimate) {
  auto splits_of = [](size_t candidates, size_t examples) {
    TaskSplits s;
    s.name = "many";
    TaskExample ex;
    ex.contexts.assign(candidates, "x");
    ex.options.assign(candidates, " y");
    s.train.assign(examples, ex);
    return s;
  };
  EXPECT_EQ(task_candidates_warning(splits_of(64, 10), 16, 2), "");
  EXPECT_EQ(task_candidates_warning(splits_of(10000, 100), 16, 2),
            "smezo: warning: many has up to 10000 candidates per example (10000 on average): each training step "
            "scores about 320000 candidate sequences (16 examples x 2 forward passes x 10000), 5000x a two-label "
            "task's 64; expect steps that much slower");
  std::string options;
  for (int i = 0; i < 100; i++) options += (i ? ", \"" : "\"") + std::string(i % 2 ? "dog" : "cat") + std::to_string(i) + "\"";
  const std::string spec = put("many.json", R"({"name": "many", "prompt": "{t}", "candidates": {"field": "o",
      "prefix": " "}, "label": {"field": "l"}})");
  const std::string row = "{\"t\": \"Once\", \"o\": [" + options + "], \"l\": 3}\n";
  const std::string data = put("many.jsonl", row + row);
  std::string out;
  ASSERT_EQ(run_command(smezo_test::smezo_binary() + " train --steps 1 --batch 2 --max-len 16 --lr 1e-3 "
                        "--progress-every 1000 --task-spec " + spec + " --train-file " + data + " --out " + dir_ +
                        "/run", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("smezo: warning: many has up to 100 candidates per example (100 on average): each "
                             "training step scores about 400 candidate sequences (2 examples x 2 forward passes x "
                             "100), 50x a two-label task's 8"));
  EXPECT_EQ(smezo_test::occurrences(out, "smezo: warning: many"), 1u) << out;
}

// A run on files records the rows it used (the seed log's header, checkpoint/smezo_run.json),
// says in one line when a file held fewer than asked for, resumes with the same command (also
// from a log that recorded the counts asked for), and `smezo eval` of its checkpoint scores
// the rows it used.
TEST_F(TaskSpecFiles, RunRecordsTheRowsItUsed) {
  const std::string spec = put("s.json", R"({"name": "s", "prompt": "{t}", "candidates": [" happy", " sad"],
      "label": {"field": "l"}})");
  auto rows = [&](const char* name, int n) {
    std::string text;
    for (int i = 0; i < n; i++) text += json({{"t", i % 2 ? "Lily was" : "Tom was"}, {"l", i % 2}}).dump() + "\n";
    return put(name, text);
  };
  const std::string train = rows("train.jsonl", 8), dev = rows("dev.jsonl", 2), test = rows("test.jsonl", 3);
  const std::string cmd = smezo_test::smezo_binary() + " train --task-spec " + spec + " --train-file " + train +
                          " --dev-file " + dev + " --test-file " + test + " --steps 2 --batch 2 --max-len 16 --lr 1e-3 "
                          "--progress-every 1000 --out " + dir_ + "/run";
  std::string out;
  ASSERT_EQ(run_command(cmd, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("data: fewer records than asked for: train 8 of --train-examples 1000 (" + train +
                             "), dev 2 of --dev-examples 500 (" + dev + "), test 3 of --test-examples 1000 (" + test +
                             "); the run uses and records these\n"));
  EXPECT_EQ(smezo_test::occurrences(out, "fewer records"), 1u) << out;
  const std::string log_path = dir_ + "/run/seed_log.txt";
  auto header = [&] {
    std::istringstream in(read_file(log_path));
    std::string line;
    std::getline(in, line);
    std::getline(in, line);
    return json::parse(line.substr(2));
  };
  EXPECT_EQ(header()["n_train"], 8);
  EXPECT_EQ(header()["n_dev"], 2);
  const json settings = smezo_test::read_json(dir_ + "/run/checkpoint/smezo_run.json");
  EXPECT_EQ(settings["n_train"], 8);
  EXPECT_EQ(settings["n_dev"], 2);
  EXPECT_EQ(settings["n_test"], 3);
  EXPECT_EQ(run_command(cmd + " --resume", &out), 0) << out;  // the same command: the same run (finished)
  EXPECT_THAT(out, HasSubstr("already finished"));
  // a log written when the header held the counts asked for resumes; other counts do not
  auto set_logged = [&](int64_t n_train, int64_t n_dev) {
    json h = header();
    h["n_train"] = n_train;
    h["n_dev"] = n_dev;
    std::string text = read_file(log_path);
    const size_t start = text.find('\n') + 1, end = text.find('\n', start);
    smezo_test::write_file(log_path, text.substr(0, start) + "# " + h.dump() + text.substr(end));
  };
  set_logged(1000, 500);
  EXPECT_EQ(run_command(cmd + " --resume", &out), 0) << out;
  set_logged(999, 2);
  EXPECT_EQ(run_command(cmd + " --resume", &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("n_train = 999 in the run, 8 here"));
  // fewer asked than the file holds: no line, and the count asked is recorded
  ASSERT_EQ(run_command(cmd + "5 --train-examples 5", &out), 0) << out;  // --out DIR/run5
  EXPECT_THAT(out, HasSubstr("data: fewer records than asked for: dev 2 of --dev-examples 500"));
  EXPECT_THAT(out, testing::Not(HasSubstr("train 5")));
  EXPECT_EQ(smezo_test::read_json(dir_ + "/run5/checkpoint/smezo_run.json")["n_train"], 5);
  // eval of the checkpoint scores the run's test rows; another test file is not cut to them
  ASSERT_EQ(run_command(smezo_test::smezo_binary() + " eval --model " + dir_ + "/run/checkpoint", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("--test-file " + std::filesystem::absolute(test).string()));  // recorded absolute
  EXPECT_THAT(out, HasSubstr("--test-examples 3"));
  EXPECT_THAT(out, HasSubstr("s test (3 examples, zero-shot)"));
  ASSERT_EQ(run_command(smezo_test::smezo_binary() + " eval --model " + dir_ + "/run/checkpoint --task-spec " + spec +
                        " --test-file " + train, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("s test (8 examples, zero-shot)"));
}

// --- export, and the equivalence with the built-in tasks

TEST_F(TaskSpecFiles, ExportOfEveryTaskReadsBackAsTheSameExamples) {
  for (TaskId t : kTasks) {
    const std::string out = dir_ + "/" + task_name(t);
    const TaskSplits built_in = load_task(task_name(t), 5, 12, 6, 7);
    EXPECT_THAT(export_task(task_name(t), 5, 12, 6, 7, asset_path("data"), out), HasSubstr("train.jsonl (12)"));
    const TaskSplits files = load_task_files({out + "/spec.json", out + "/train.jsonl", out + "/dev.jsonl",
                                              out + "/test.jsonl"}, 1000, 1000, 1000);
    EXPECT_EQ(files.name, built_in.name);
    EXPECT_EQ(files.train_as_classification, built_in.train_as_classification);
    expect_same_examples(files.train, built_in.train, std::string(task_name(t)) + " train");
    expect_same_examples(files.dev, built_in.dev, std::string(task_name(t)) + " dev");
    expect_same_examples(files.test, built_in.test, std::string(task_name(t)) + " test");
  }
}

// Built-in SST-2 and its export, trained with the same options on device_args: the same seed
// log and weights byte for byte; another export (data seed 4) trains differently.
static void expect_export_trains_like_built_in(const std::string& dir, const std::string& device_args) {
  const std::string smezo = smezo_test::smezo_binary() + " train";
  const std::string sizes = " --train-examples 16 --dev-examples 6 --test-examples 6";
  const std::string run = " --batch 2 --max-len 40 --steps 6 --eval-every 3 --lr 2e-3 --seed 7 --progress-every 1000" +
                          sizes + device_args;
  std::string out;
  for (const char* seed : {"3", "4"})
    ASSERT_EQ(run_command(smezo + " --task sst2 --data-seed " + seed + sizes + " --export-data " + dir + "/exp" + seed,
                          &out), 0) << out;
  ASSERT_EQ(run_command(smezo + " --task sst2 --data-seed 3" + run + " --out " + dir + "/builtin", &out), 0) << out;
  auto from_files = [&](const std::string& exp, const std::string& name) {
    return run_command(smezo + " --data-seed 3" + run + " --task-spec " + exp + "/spec.json --train-file " + exp +
                       "/train.jsonl --dev-file " + exp + "/dev.jsonl --test-file " + exp + "/test.jsonl --out " +
                       dir + "/" + name, &out);
  };
  ASSERT_EQ(from_files(dir + "/exp3", "files"), 0) << out;
  const std::string log = read_file(dir + "/builtin/seed_log.txt");
  EXPECT_EQ(smezo_test::occurrences(log, "\n"), 2u + 6u) << log;  // two header lines, six steps
  EXPECT_EQ(read_file(dir + "/files/seed_log.txt"), log);
  EXPECT_EQ(read_file(dir + "/files/checkpoint/model.safetensors"),
            read_file(dir + "/builtin/checkpoint/model.safetensors"));
  // the comparison can fail: other examples (another data seed's export) train differently
  ASSERT_EQ(from_files(dir + "/exp4", "other"), 0) << out;
  EXPECT_NE(read_file(dir + "/other/seed_log.txt"), log);
  EXPECT_NE(read_file(dir + "/other/checkpoint/model.safetensors"),
            read_file(dir + "/builtin/checkpoint/model.safetensors"));
}

TEST_F(TaskSpecFiles, ExportedSst2TrainsToByteIdenticalSeedLogAndWeights) {
  expect_export_trains_like_built_in(dir_, "");
}

// The same through the CUDA backend (fp32): on a GPU, or on the emulated one (make emu-test).
TEST_F(TaskSpecFiles, ExportedSst2TrainsToByteIdenticalSeedLogAndWeightsOnCuda) {
#ifdef SMEZO_WITH_CUDA
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  expect_export_trains_like_built_in(dir_, " --device cuda --dtype f32");
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// The seed log records the examples' fingerprint: a resume on other data is refused, naming it.
TEST_F(TaskSpecFiles, ResumeOnOtherDataIsRefused) {
  const std::string smezo = smezo_test::smezo_binary() + " train";
  std::string out;
  for (const char* seed : {"3", "4"})
    ASSERT_EQ(run_command(smezo + " --task sst2 --data-seed " + seed + " --train-examples 8 --dev-examples 2 "
                          "--test-examples 2 --export-data " + dir_ + "/exp" + seed, &out), 0) << out;
  auto train = [&](const std::string& exp, const std::string& extra) {
    return run_command(smezo + " --data-seed 3 --train-examples 8 --dev-examples 2 --batch 2 --max-len 32 --lr 2e-3 "
                       "--progress-every 1000 --skip-test --task-spec " + exp + "/spec.json --train-file " + exp +
                       "/train.jsonl --dev-file " + exp + "/dev.jsonl --out " + dir_ + "/run" + extra, &out);
  };
  ASSERT_EQ(train(dir_ + "/exp3", " --steps 3"), 0) << out;
  EXPECT_NE(train(dir_ + "/exp4", " --steps 3 --resume"), 0);
  EXPECT_THAT(out, HasSubstr("the train/dev examples differ (data_fingerprint"));
  EXPECT_EQ(train(dir_ + "/exp3", " --steps 3 --resume"), 0) << out;  // the same data: accepted (and finished)
  EXPECT_THAT(out, HasSubstr("already finished"));
  const std::string log = read_file(dir_ + "/run/seed_log.txt");
  EXPECT_NE(log.find("\"data_fingerprint\":\"" + task_examples_fingerprint(load_task("sst2", 3, 8, 2, 0)) + "\""),
            std::string::npos) << log;
}

// A generation spec's files train end to end: the completion's loss, dev EM/F1 by greedy decoding.
TEST_F(TaskSpecFiles, GenerationFilesTrainAndReportEmAndF1) {
  const std::string spec = put("qa.json", R"({"name": "qa", "kind": "generation", "prompt": "Q: {question}\nA:",
      "completion_field": "answers", "completion_prefix": " ", "max_new_tokens": 4, "stop": ["\n"]})");
  const std::string data = put("qa.jsonl", "{\"question\": \"sky?\", \"answers\": [\"blue\", \"Blue.\"]}\n"
                                           "{\"question\": \"bees make?\", \"answers\": \"honey\"}\n"
                                           "{\"question\": \"cat legs?\", \"answers\": [\"four\", \"4\"]}\n");
  std::string out;
  ASSERT_EQ(run_command(smezo_test::smezo_binary() + " train --task-spec " + spec + " --train-file " + data +
                        " --dev-file " + data + " --steps 2 --batch 2 --max-len 32 --lr 1e-3 --progress-every 1000"
                        " --out " + dir_ + "/run", &out), 0) << out;
  const json s = smezo_test::read_json(dir_ + "/run/summary.json");
  EXPECT_EQ(s["task"], "qa");
  for (const char* key : {"final_dev_em", "final_dev_f1"}) {
    ASSERT_TRUE(s[key].is_number()) << key << " " << s.dump();
    EXPECT_GE(s[key].get<double>(), 0.0);
    EXPECT_LE(s[key].get<double>(), 1.0);
  }
  EXPECT_EQ(smezo_test::occurrences(read_file(dir_ + "/run/seed_log.txt"), "\n"), 2u + 2u);
}
