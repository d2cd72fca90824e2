// Tests of the task datasets: real row counts, MeZO's templates on known rows, MeZO's
// sampling (golden indices from numpy), malformed input, and the encoding into token
// sequences with fake tokenizers and with the real LLaMA-2 sentencepiece tokenizer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "common/assets.h"
#include "common/check.h"
#include "tasks/task_data.h"
#include "tasks/task_encode.h"
#include "mezo_templates.h"
#include "tasks/templates.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

using namespace smezo;
using testing::HasSubstr;

using smezo_test::error_of;
using smezo_test::template_boolq;
using smezo_test::template_cb;
using smezo_test::template_copa;
using smezo_test::template_rte;
using smezo_test::template_sst2;

namespace {

std::string superglue(const std::string& task, const std::string& file) {
  return asset_path("data/superglue/" + task + "/" + file);
}


// The exact text MeZO feeds the model for candidate i.
std::string full_text(const TaskExample& ex, int i) { return ex.contexts[i] + ex.options[i]; }

}  // namespace

// --- names

TEST(TaskNames, ParseCaseInsensitive) {
  EXPECT_EQ(task_parse_name("sst2"), TASK_SST2);
  EXPECT_EQ(task_parse_name("SST2"), TASK_SST2);
  EXPECT_EQ(task_parse_name("Rte"), TASK_RTE);
  EXPECT_EQ(task_parse_name("BoolQ"), TASK_BOOLQ);
  EXPECT_EQ(task_parse_name("WiC"), TASK_WIC);
  EXPECT_EQ(task_parse_name("MultiRC"), TASK_MULTIRC);
  EXPECT_EQ(task_parse_name("COPA"), TASK_COPA);
  EXPECT_EQ(task_parse_name("cb"), TASK_CB);
  EXPECT_STREQ(task_name(TASK_MULTIRC), "multirc");
  EXPECT_FALSE(task_trains_as_classification(TASK_COPA));
  EXPECT_TRUE(task_trains_as_classification(TASK_SST2));
  EXPECT_TRUE(task_trains_as_classification(TASK_CB));
}

TEST(TaskNames, UnknownListsKnown) {
  std::string msg = error_of([] { task_parse_name("mnli"); });
  EXPECT_THAT(msg, HasSubstr("mnli"));
  for (const char* t : {"sst2", "rte", "boolq", "wic", "multirc", "copa", "cb"})
    EXPECT_THAT(msg, HasSubstr(t));
  EXPECT_THROW_MSG(load_task("sst-2", 0),
                   "unknown task \"sst-2\"; known tasks: sst2, rte, boolq, wic, multirc, copa, cb");
}

// --- real data

TEST(TaskData, RealRowCounts) {
  struct Case {
    TaskId task;
    std::string path;
    size_t rows;
  };
  const Case cases[] = {
      {TASK_SST2, asset_path("data/glue/SST-2/train.tsv"), 67349},
      {TASK_SST2, asset_path("data/glue/SST-2/dev.tsv"), 872},
      {TASK_RTE, superglue("RTE", "train.jsonl"), 2490},
      {TASK_RTE, superglue("RTE", "val.jsonl"), 277},
      {TASK_COPA, superglue("COPA", "train.jsonl"), 400},
      {TASK_COPA, superglue("COPA", "val.jsonl"), 100},
      {TASK_CB, superglue("CB", "train.jsonl"), 250},
      {TASK_CB, superglue("CB", "val.jsonl"), 56},
      {TASK_MULTIRC, superglue("MultiRC", "val.jsonl"), 4848},
      {TASK_BOOLQ, superglue("BoolQ", "val.jsonl"), 3270},
      {TASK_WIC, superglue("WiC", "val.jsonl"), 638},
  };
  for (const Case& c : cases) {
    std::vector<int64_t> groups;
    std::vector<TaskExample> rows = task_read_file(c.task, c.path, &groups);
    EXPECT_EQ(rows.size(), c.rows) << c.path;
    EXPECT_EQ(groups.size(), rows.size()) << c.path;
    for (const TaskExample& ex : rows) {
      ASSERT_EQ(ex.contexts.size(), ex.options.size());
      ASSERT_GE(ex.gold, 0);
      ASSERT_LT(ex.gold, static_cast<int>(ex.options.size()));
    }
  }
  std::vector<int64_t> groups;
  task_read_file(TASK_MULTIRC, superglue("MultiRC", "val.jsonl"), &groups);
  EXPECT_EQ(std::set<int64_t>(groups.begin(), groups.end()).size(), 83u);  // passages
}

// --- templates on known rows (expected text written out from MeZO's templates.py)

TEST(TaskTemplates, Sst2) {
  TaskExample ex = task_read_file(TASK_SST2, asset_path("data/glue/SST-2/dev.tsv"))[0];
  ASSERT_EQ(ex.options.size(), 2u);
  EXPECT_EQ(ex.contexts[0], "it 's a charming and often affecting journey . It was");
  EXPECT_EQ(ex.contexts[1], ex.contexts[0]);
  EXPECT_EQ(ex.options[0], " terrible");
  EXPECT_EQ(ex.options[1], " great");
  EXPECT_EQ(full_text(ex, 1), "it 's a charming and often affecting journey . It was great");
  EXPECT_EQ(ex.gold, 1);
}

TEST(TaskTemplates, Rte) {
  TaskExample ex = task_read_file(TASK_RTE, superglue("RTE", "val.jsonl"))[208];
  ASSERT_EQ(ex.options.size(), 2u);
  EXPECT_EQ(ex.contexts[0],
            "The girl was found in Drummondville.\nDoes this mean that \"Drummondville "
            "contains the girl.\" is true? Yes or No?\n");
  EXPECT_EQ(ex.options[0], "Yes");
  EXPECT_EQ(ex.options[1], "No");
  EXPECT_EQ(ex.gold, 1);  // not_entailment
}

TEST(TaskTemplates, Cb) {
  TaskExample ex = task_read_file(TASK_CB, superglue("CB", "val.jsonl"))[14];
  ASSERT_EQ(ex.options.size(), 3u);
  EXPECT_EQ(ex.contexts[2],
            "Suppose A: Your turn. B: Okay. Uh, I don't think they should abolish it. Can we "
            "infer that \"they should abolish it\"? Yes, No, or Maybe?\n");
  EXPECT_EQ(ex.options[0], "Yes");
  EXPECT_EQ(ex.options[1], "No");
  EXPECT_EQ(ex.options[2], "Maybe");
  EXPECT_EQ(ex.gold, 1);  // contradiction
}

TEST(TaskTemplates, BoolQ) {
  TaskExample ex = task_read_file(TASK_BOOLQ, superglue("BoolQ", "val.jsonl"))[2644];
  ASSERT_EQ(ex.options.size(), 2u);
  EXPECT_EQ(ex.contexts[0],
            "The Punisher (season 2) -- The season is set for release in 2019. Are they going "
            "to make a punisher season 2?\n");
  EXPECT_EQ(ex.options[0], "Yes");
  EXPECT_EQ(ex.options[1], "No");
  EXPECT_EQ(ex.gold, 0);  // true
}

TEST(TaskTemplates, Wic) {
  TaskExample ex = task_read_file(TASK_WIC, superglue("WiC", "val.jsonl"))[239];
  ASSERT_EQ(ex.options.size(), 2u);
  EXPECT_EQ(ex.contexts[0],
            "Does the word \"curd\" have the same meaning in these two sentences? Yes, No?\n"
            "Bean curd.\nLemon curd.\n");
  EXPECT_EQ(ex.options[0], "No");
  EXPECT_EQ(ex.options[1], "Yes");
  EXPECT_EQ(ex.gold, 1);  // true
}

TEST(TaskTemplates, MultiRc) {
  std::vector<TaskExample> rows = task_read_file(TASK_MULTIRC, superglue("MultiRC", "val.jsonl"));
  const TaskExample& ex = rows[2];  // first passage, first question, third answer
  ASSERT_EQ(ex.options.size(), 2u);
  EXPECT_EQ(ex.contexts[0].rfind("What causes a change in motion? The application of a force.", 0),
            0u);
  const std::string tail =
      "You may pick up a baseball. This requires only a very small force. \nQuestion: Would "
      "the mass of a baseball affect how much force you have to use to pick it up?\nI found "
      "this answer \"Less the mass, less the force applied\". Is that correct? Yes or No?\n";
  ASSERT_GE(ex.contexts[0].size(), tail.size());
  EXPECT_EQ(ex.contexts[0].substr(ex.contexts[0].size() - tail.size()), tail);
  EXPECT_EQ(ex.options[0], "No");
  EXPECT_EQ(ex.options[1], "Yes");
  EXPECT_EQ(ex.gold, 1);
  EXPECT_EQ(rows[0].gold, 0);  // answer "No" is labelled 0

  // A small row, whole text checked.
  std::string dir = smezo_test::make_temp_dir("tasks_multirc");
  smezo_test::write_file(dir + "/m.jsonl",
                         "{\"idx\": 0, \"passage\": {\"text\": \"Sam has a dog.\", \"questions\": "
                         "[{\"question\": \"What pet?\", \"idx\": 0, \"answers\": [{\"text\": "
                         "\"a dog\", \"idx\": 0, \"label\": 1}, {\"text\": \"a cat\", \"idx\": 1, "
                         "\"label\": 0}]}]}}\n");
  std::vector<TaskExample> m = task_read_file(TASK_MULTIRC, dir + "/m.jsonl");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(full_text(m[0], 1),
            "Sam has a dog.\nQuestion: What pet?\nI found this answer \"a dog\". Is that "
            "correct? Yes or No?\nYes");
  EXPECT_EQ(m[0].gold, 1);
  EXPECT_EQ(m[1].gold, 0);
}

TEST(TaskTemplates, Copa) {
  std::vector<TaskExample> rows = task_read_file(TASK_COPA, superglue("COPA", "val.jsonl"));
  const TaskExample& effect = rows[0];
  ASSERT_EQ(effect.options.size(), 2u);
  EXPECT_EQ(effect.contexts[0], "The man turned on the faucet so");
  EXPECT_EQ(effect.contexts[1], "The man turned on the faucet so");
  EXPECT_EQ(effect.options[0], " the toilet filled with water.");
  EXPECT_EQ(effect.options[1], " water flowed from the spout.");
  EXPECT_EQ(effect.gold, 1);
  const TaskExample& cause = rows[32];  // "I" keeps its capital
  EXPECT_EQ(cause.contexts[0], "I coughed because");
  EXPECT_EQ(cause.options[0], " I inhaled smoke.");
  EXPECT_EQ(cause.options[1], " I lowered my voice.");
  EXPECT_EQ(cause.gold, 0);
}

TEST(TaskTemplates, EdgeCasesOfMeZOStringHandling) {
  // BoolQ: "?" only added when missing; first letter upper-cased.
  EXPECT_EQ(full_text(template_boolq("P.", "is it?", true), 0), "P. Is it?\nYes");
  EXPECT_EQ(full_text(template_boolq("P.", "Is it", false), 1), "P. Is it?\nNo");
  // COPA: only a final '.' is removed (after trailing whitespace); "I" stays capital, other
  // first words are lower-cased, the rest of the choice is kept.
  TaskExample copa = template_copa("It rained!  ", "Ann got WET.", "I stayed in.", "cause", 1);
  EXPECT_EQ(copa.contexts[0], "It rained! because");
  EXPECT_EQ(copa.options[0], " ann got WET.");
  EXPECT_EQ(copa.options[1], " I stayed in.");
  EXPECT_EQ(template_copa("It rained.", "x", "y", "effect", 0).contexts[0], "It rained so");
  // SST-2: the sentence is stripped of whitespace (GLUE's rows end in a space).
  EXPECT_EQ(full_text(template_sst2(" \tok movie \n", 0), 0), "ok movie It was terrible");
  EXPECT_THROW_MSG(template_sst2("x", 2), "sst2: label 2 is not in the verbalizer {0, 1}");
  EXPECT_THROW_MSG(template_cb("p", "h", 3), "cb: label index 3 is not one of the 3 candidates of the verbalizer");
}

TEST(TaskTemplates, IclPrefix) {
  TaskExample a = template_sst2("good film ", 1);
  TaskExample b = template_rte("P.", "H.", 0);
  EXPECT_EQ(build_icl_prefix({}), "");
  EXPECT_EQ(build_icl_prefix({a, b}),
            "good film It was great\n\nP.\nDoes this mean that \"H.\" is true? Yes or No?\nYes"
            "\n\n");
}

// --- sampling

TEST(TaskSampling, Sst2SizesAndDeterminism) {
  TaskSplits a = load_task("sst2", 0);
  EXPECT_EQ(a.name, "sst2");
  EXPECT_TRUE(a.train_as_classification);
  EXPECT_EQ(a.train.size(), 1000u);
  EXPECT_EQ(a.dev.size(), 500u);
  EXPECT_EQ(a.test.size(), 872u);
  EXPECT_EQ(a.train_source_rows, 67349);
  EXPECT_EQ(a.test_source_rows, 872);
  EXPECT_THAT(a.split_note, HasSubstr("train.tsv"));
  std::set<int64_t> train_dev(a.train_index.begin(), a.train_index.end());
  train_dev.insert(a.dev_index.begin(), a.dev_index.end());
  EXPECT_EQ(train_dev.size(), 1500u);  // train and dev are disjoint

  TaskSplits b = load_task("SST2", 0);
  EXPECT_EQ(a.train_index, b.train_index);
  EXPECT_EQ(a.dev_index, b.dev_index);
  EXPECT_EQ(a.test_index, b.test_index);
  EXPECT_EQ(full_text(a.train[7], 0), full_text(b.train[7], 0));

  TaskSplits c = load_task("sst2", 1);
  EXPECT_NE(a.train_index, c.train_index);
  EXPECT_NE(a.test_index, c.test_index);  // same rows, another order
}

TEST(TaskSampling, PermutationIsNumpys) {
  // Expected values printed by numpy 2.4: np.random.seed(s); np.random.permutation(n).
  using V = std::vector<int64_t>;
  EXPECT_EQ(task_permutation(10, 0), (V{2, 8, 4, 9, 1, 6, 7, 3, 0, 5}));
  EXPECT_EQ(task_permutation(10, 42), (V{8, 1, 5, 0, 7, 2, 9, 4, 3, 6}));
  EXPECT_EQ(task_permutation(10, 4294967295u), (V{6, 9, 5, 1, 8, 0, 7, 4, 2, 3}));
  EXPECT_EQ(task_permutation(5, 1), (V{2, 1, 4, 0, 3}));
  V big = task_permutation(67349, 0);
  EXPECT_EQ(V(big.begin(), big.begin() + 5), (V{43787, 16159, 59015, 5108, 67052}));
  EXPECT_TRUE(task_permutation(0, 0).empty());
  std::string msg = error_of([] { task_permutation(10, 4294967296ull); });
  EXPECT_THAT(msg, HasSubstr("4294967296"));
  EXPECT_THROW_MSG(load_task("rte", 1ull << 40), "task sampling seed 1099511627776 is out of range 0 .. 4294967295");
}

// The rows MeZO's run.py picks: sample_subset("train", seed, n_train + n_dev) with the last
// n_dev as dev, and sample_subset("valid", seed, n_test). Expected indices from numpy.
TEST(TaskSampling, SameRowsAsMeZO) {
  using V = std::vector<int64_t>;
  auto head = [](const V& v, size_t n) { return V(v.begin(), v.begin() + n); };
  TaskSplits sst2 = load_task("sst2", 0);
  EXPECT_EQ(head(sst2.train_index, 5), (V{43787, 16159, 59015, 5108, 67052}));
  EXPECT_EQ(head(sst2.dev_index, 3), (V{2307, 42285, 56182}));
  EXPECT_EQ(head(sst2.test_index, 5), (V{372, 676, 548, 293, 382}));
  TaskSplits cb = load_task("cb", 0);  // 250 rows: train 150, dev the last 100
  EXPECT_EQ(head(cb.train_index, 3), (V{225, 122, 92}));
  EXPECT_EQ(head(cb.dev_index, 3), (V{85, 247, 141}));
  EXPECT_EQ(cb.dev_index.back(), 172);
  EXPECT_EQ(head(cb.test_index, 5), (V{45, 33, 40, 26, 11}));
  TaskSplits copa = load_task("copa", 7);
  EXPECT_EQ(head(copa.train_index, 3), (V{265, 65, 120}));
  EXPECT_EQ(head(copa.dev_index, 3), (V{198, 166, 315}));
  EXPECT_EQ(head(copa.test_index, 3), (V{37, 26, 78}));
  TaskSplits rte = load_task("rte", 3);
  EXPECT_EQ(head(rte.train_index, 3), (V{2321, 439, 1210}));
  EXPECT_EQ(head(rte.dev_index, 3), (V{2342, 549, 2289}));
  EXPECT_EQ(head(rte.test_index, 3), (V{220, 58, 89}));
  // The examples are the rows at those indices.
  std::vector<TaskExample> rows = task_read_file(TASK_RTE, superglue("RTE", "train.jsonl"));
  EXPECT_EQ(full_text(rte.train[1], 0), full_text(rows[439], 0));
  EXPECT_EQ(rte.train[1].gold, rows[439].gold);
}

TEST(TaskSampling, SmallTrainSplits) {
  TaskSplits copa = load_task("copa", 0);
  EXPECT_FALSE(copa.train_as_classification);
  EXPECT_EQ(copa.train.size(), 300u);  // MeZO: COPA 300 train / 100 dev
  EXPECT_EQ(copa.dev.size(), 100u);
  EXPECT_EQ(copa.test.size(), 100u);
  TaskSplits cb = load_task("cb", 0);
  EXPECT_EQ(cb.train.size(), 150u);  // MeZO: CB 150 train / 100 dev
  EXPECT_EQ(cb.dev.size(), 100u);
  EXPECT_EQ(cb.test.size(), 56u);
  TaskSplits rte = load_task("rte", 3, 1000, 500, 1000);
  EXPECT_EQ(rte.train.size(), 1000u);
  EXPECT_EQ(rte.dev.size(), 500u);
  EXPECT_EQ(rte.test.size(), 277u);
  TaskSplits zero = load_task("rte", 3, 0, 0, 10);
  EXPECT_TRUE(zero.train.empty());
  EXPECT_TRUE(zero.dev.empty());
  EXPECT_EQ(zero.test.size(), 10u);
}

static void expect_disjoint(const TaskSplits& s) {
  std::set<int64_t> seen;
  for (const auto* v : {&s.train_index, &s.dev_index, &s.test_index})
    for (int64_t i : *v) EXPECT_TRUE(seen.insert(i).second) << s.name << " row " << i;
}

TEST(TaskSampling, CarvedBoolQ) {
  TaskSplits s = load_task("boolq", 0);
  EXPECT_EQ(s.train.size(), 1000u);
  EXPECT_EQ(s.dev.size(), 500u);
  EXPECT_EQ(s.test.size(), 1000u);
  EXPECT_EQ(s.train_source_rows, 3270);
  expect_disjoint(s);
  EXPECT_THAT(s.split_note, HasSubstr("carved"));
  EXPECT_THAT(s.split_note, HasSubstr("val.jsonl"));
  TaskSplits again = load_task("boolq", 0);
  EXPECT_EQ(s.train_index, again.train_index);
  EXPECT_EQ(s.test_index, again.test_index);
  TaskSplits other = load_task("boolq", 5);
  EXPECT_NE(s.train_index, other.train_index);
  expect_disjoint(other);
}

TEST(TaskSampling, CarvedWicScalesDown) {
  // 638 rows: 1000 + 500 do not fit in half the pool (319), so 2:1 scaled to 212 + 106, and
  // the test pool is the other 320 rows.
  TaskSplits s = load_task("wic", 0);
  EXPECT_EQ(s.train.size(), 212u);
  EXPECT_EQ(s.dev.size(), 106u);
  EXPECT_EQ(s.test.size(), 320u);
  expect_disjoint(s);
  EXPECT_THAT(s.split_note, HasSubstr("carved"));
  EXPECT_THAT(s.split_note, HasSubstr("scaled down from the requested 1000/500"));
  // 32 in-context demonstrations fit: no scaling.
  TaskSplits icl = load_task("wic", 0, 32, 0, 1000);
  EXPECT_EQ(icl.train.size(), 32u);
  EXPECT_TRUE(icl.dev.empty());
  EXPECT_EQ(icl.test.size(), 606u);
  expect_disjoint(icl);
  EXPECT_THAT(icl.split_note, testing::Not(HasSubstr("scaled")));
}

TEST(TaskSampling, CarvedMultiRcByPassage) {
  TaskSplits s = load_task("multirc", 0);
  EXPECT_EQ(s.train.size(), 1000u);
  EXPECT_EQ(s.dev.size(), 500u);
  EXPECT_EQ(s.test.size(), 1000u);
  EXPECT_EQ(s.train_source_rows, 4848);
  expect_disjoint(s);
  EXPECT_THAT(s.split_note, HasSubstr("passage"));
  std::vector<int64_t> groups;
  task_read_file(TASK_MULTIRC, superglue("MultiRC", "val.jsonl"), &groups);
  std::set<int64_t> train_p, dev_p, test_p;
  for (int64_t i : s.train_index) train_p.insert(groups[i]);
  for (int64_t i : s.dev_index) dev_p.insert(groups[i]);
  for (int64_t i : s.test_index) test_p.insert(groups[i]);
  for (int64_t p : train_p) {
    EXPECT_EQ(dev_p.count(p), 0u);
    EXPECT_EQ(test_p.count(p), 0u);
  }
  for (int64_t p : dev_p) EXPECT_EQ(test_p.count(p), 0u);
}

// --- malformed input

class TaskBadInput : public testing::Test {
 protected:
  void SetUp() override { dir_ = smezo_test::make_temp_dir("tasks_bad"); }
  std::string put(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    smezo_test::write_file(path, text);
    return path;
  }
  std::string dir_;
};

TEST_F(TaskBadInput, MissingFile) {
  std::string msg = error_of([&] { task_read_file(TASK_RTE, dir_ + "/nope.jsonl"); });
  EXPECT_THAT(msg, HasSubstr(dir_ + "/nope.jsonl"));
  msg = error_of([&] { load_task("rte", 0, 10, 10, 10, dir_); });
  EXPECT_THAT(msg, HasSubstr(dir_ + "/superglue/RTE/val.jsonl"));
}

TEST_F(TaskBadInput, EmptyFile) {
  std::string p = put("empty.jsonl", "");
  EXPECT_THAT(error_of([&] { task_read_file(TASK_COPA, p); }), HasSubstr(p));
  p = put("blank.jsonl", "\n\n");
  EXPECT_THAT(error_of([&] { task_read_file(TASK_CB, p); }), HasSubstr("no examples"));
  p = put("empty.tsv", "");
  EXPECT_THAT(error_of([&] { task_read_file(TASK_SST2, p); }), HasSubstr("empty"));
  p = put("header_only.tsv", "sentence\tlabel\n");
  EXPECT_THAT(error_of([&] { task_read_file(TASK_SST2, p); }), HasSubstr("no examples"));
}

TEST_F(TaskBadInput, MalformedJsonLine) {
  std::string good = "{\"premise\": \"p\", \"hypothesis\": \"h\", \"label\": \"entailment\"}\n";
  std::string p = put("bad.jsonl", good + good + "{\"premise\": \"p\", \n");
  std::string msg = error_of([&] { task_read_file(TASK_RTE, p); });
  EXPECT_THAT(msg, HasSubstr(p + ":3:"));
  EXPECT_THAT(msg, HasSubstr("malformed JSON"));
  p = put("array.jsonl", good + "[1, 2]\n");
  EXPECT_THAT(error_of([&] { task_read_file(TASK_RTE, p); }), HasSubstr(p + ":2:"));
}

TEST_F(TaskBadInput, MalformedTsvLine) {
  std::string p = put("bad.tsv", "sentence\tlabel\nfine movie\t1\nno tab here\n");
  std::string msg = error_of([&] { task_read_file(TASK_SST2, p); });
  EXPECT_THAT(msg, HasSubstr(p + ":3:"));
  p = put("bad_header.tsv", "text,label\nfine movie\t1\n");
  EXPECT_THAT(error_of([&] { task_read_file(TASK_SST2, p); }), HasSubstr(p + ":1:"));
  p = put("bad_label.tsv", "sentence\tlabel\nfine movie\t1\nbad\t2\n");
  msg = error_of([&] { task_read_file(TASK_SST2, p); });
  EXPECT_THAT(msg, HasSubstr(p + ":3:"));
  EXPECT_THAT(msg, HasSubstr("verbalizer"));
}

TEST_F(TaskBadInput, MissingField) {
  std::string p = put("cb.jsonl", "{\"premise\": \"p\", \"label\": \"neutral\"}\n");
  std::string msg = error_of([&] { task_read_file(TASK_CB, p); });
  EXPECT_THAT(msg, HasSubstr(p + ":1:"));
  EXPECT_THAT(msg, HasSubstr("\"hypothesis\""));
  p = put("multirc.jsonl", "{\"passage\": {\"text\": \"t\", \"questions\": [{\"question\": "
                           "\"q\", \"answers\": [{\"text\": \"a\"}]}]}}\n");
  msg = error_of([&] { task_read_file(TASK_MULTIRC, p); });
  EXPECT_THAT(msg, HasSubstr(p + ":1:"));
  EXPECT_THAT(msg, HasSubstr("\"label\""));
  p = put("wic.jsonl",
          "{\"word\": 3, \"sentence1\": \"a\", \"sentence2\": \"b\", \"label\": true}\n");
  msg = error_of([&] { task_read_file(TASK_WIC, p); });
  EXPECT_THAT(msg, HasSubstr("\"word\""));
}

TEST_F(TaskBadInput, LabelNotInVerbalizer) {
  struct Case {
    TaskId task;
    std::string row;
  };
  const Case cases[] = {
      {TASK_RTE, "{\"premise\": \"p\", \"hypothesis\": \"h\", \"label\": \"neutral\"}"},
      {TASK_CB, "{\"premise\": \"p\", \"hypothesis\": \"h\", \"label\": 0}"},
      {TASK_BOOLQ, "{\"passage\": \"p\", \"question\": \"q\", \"label\": \"yes\"}"},
      {TASK_WIC, "{\"word\": \"w\", \"sentence1\": \"a\", \"sentence2\": \"b\", \"label\": 1}"},
      {TASK_COPA, "{\"premise\": \"p.\", \"choice1\": \"a\", \"choice2\": \"b\", \"question\": "
                  "\"effect\", \"label\": 2}"},
      {TASK_MULTIRC, "{\"passage\": {\"text\": \"t\", \"questions\": [{\"question\": \"q\", "
                     "\"answers\": [{\"text\": \"a\", \"label\": -1}]}]}}"},
  };
  for (const Case& c : cases) {
    std::string p = put(std::string(task_name(c.task)) + "_label.jsonl", "\n" + c.row + "\n");
    std::string msg = error_of([&] { task_read_file(c.task, p); });
    EXPECT_THAT(msg, HasSubstr(p + ":2:")) << task_name(c.task);
    EXPECT_THAT(msg, HasSubstr("verbalizer")) << task_name(c.task);
  }
  std::string p = put("copa_q.jsonl", "{\"premise\": \"p.\", \"choice1\": \"a\", \"choice2\": "
                                      "\"b\", \"question\": \"reason\", \"label\": 0}\n");
  std::string msg = error_of([&] { task_read_file(TASK_COPA, p); });
  EXPECT_THAT(msg, HasSubstr("reason"));
}

// Rows from a fuzzed or hostile file: errors, never a crash; the file's bytes escaped.
TEST_F(TaskBadInput, HostileRowsAreOneLineErrors) {
  const std::string ok = "{\"premise\": \"p\", \"hypothesis\": \"h\", \"label\": \"entailment\"}\n";
  // a label holding terminal escapes
  std::string p = put("esc.jsonl", ok + "{\"premise\": \"p\", \"hypothesis\": \"h\", \"label\": "
                                        "\"\\u001b[2J\"}\n");
  std::string msg = error_of([&] { task_read_file(TASK_RTE, p); });
  EXPECT_THAT(msg, HasSubstr(p + ":2: label \"\\u001b[2J\" is not in the verbalizer"));
  // raw control bytes in a line the parser quotes back
  p = put("raw.jsonl", "{\"premise\": \"\x1b[31m\x07\"}\n");
  msg = error_of([&] { task_read_file(TASK_RTE, p); });
  EXPECT_THAT(msg, HasSubstr(p + ":1: malformed JSON line: not valid JSON"));
  for (char c : msg) EXPECT_GE(static_cast<unsigned char>(c), 0x20) << smezo::printable(msg);
  p = put("raw.tsv", "sentence\tlabel\nok\t\x1b[2J\n");
  msg = error_of([&] { task_read_file(TASK_SST2, p); });
  EXPECT_THAT(msg, HasSubstr("label \"\\x1b[2J\" is not in the verbalizer"));
  p = put("rawhdr.tsv", "sent\x1b[2Jence\n");
  EXPECT_THAT(error_of([&] { task_read_file(TASK_SST2, p); }), HasSubstr("sent\\x1b[2Jence"));
  // a row nested a million levels deep: refused by the depth bound, not a stack overflow
  p = put("deep.jsonl", std::string(1000000, '[') + std::string(1000000, ']') + "\n");
  EXPECT_THAT(error_of([&] { task_read_file(TASK_RTE, p); }), HasSubstr("nested deeper than 64"));
  // a duplicated field: which label would count?
  p = put("dup.jsonl", "{\"premise\": \"p\", \"hypothesis\": \"h\", \"label\": \"entailment\", "
                       "\"label\": \"not_entailment\"}\n");
  EXPECT_THAT(error_of([&] { task_read_file(TASK_RTE, p); }), HasSubstr("key \"label\" appears twice"));
  // a huge label value is cut short in the message
  p = put("long.jsonl", "{\"premise\": \"p\", \"hypothesis\": \"h\", \"label\": \"" +
                        std::string(100000, 'x') + "\"}\n");
  msg = error_of([&] { task_read_file(TASK_RTE, p); });
  EXPECT_LT(msg.size(), 1000u);
}

// A JSONL line that is valid JSON but not an object (an array, a string): named by line.
TEST_F(TaskBadInput, JsonLineThatIsNotAnObject) {
  const std::string ok = "{\"premise\": \"p\", \"hypothesis\": \"h\", \"label\": \"entailment\"}\n";
  std::string p = put("array.jsonl", ok + "[1, 2]\n");
  EXPECT_THAT(error_of([&] { task_read_file(TASK_RTE, p); }),
              HasSubstr(p + ":2: expected a JSON object, got"));
}

// --- encoding with fake tokenizers

namespace {

// Whitespace tokenizer: each run of non-space characters is one token, a preceding space (if
// any) belongs to it (like sentencepiece's "▁word"); each newline is its own token. Ids are
// handed out on first sight. BOS = 1.
class FakeWordTokenizer : public Tokenizer {
 public:
  std::vector<int32_t> encode(const std::string& text, bool add_bos) const override {
    std::vector<int32_t> out;
    if (add_bos) out.push_back(1);
    size_t i = 0;
    while (i < text.size()) {
      size_t j = i;
      if (text[j] == '\n') {
        j++;
      } else {
        if (text[j] == ' ') j++;
        while (j < text.size() && text[j] != ' ' && text[j] != '\n') j++;
      }
      out.push_back(id(text.substr(i, j - i)));
      i = j;
    }
    return out;
  }
  std::string decode(const std::vector<int32_t>& tokens) const override {
    std::string s;
    for (int32_t t : tokens)
      if (t != 1) s += piece(t);
    return s;
  }
  std::string decode_piece(int32_t, int32_t token) const override { return piece(token); }
  int64_t vocab_size() const override { return 1000; }
  int32_t bos_id() const override { return 1; }
  int32_t eos_id() const override { return 2; }
  std::string piece(int32_t t) const {
    for (const auto& kv : ids_)
      if (kv.second == t) return kv.first;
    return "?";
  }
  int32_t id(const std::string& p) const {
    auto it = ids_.find(p);
    if (it != ids_.end()) return it->second;
    int32_t next = static_cast<int32_t>(ids_.size()) + 3;
    ids_[p] = next;
    return next;
  }

 private:
  mutable std::map<std::string, int32_t> ids_;
};

// One token per byte (id = byte + 3), except that "ab" merges into the single token 300.
class FakeMergingTokenizer : public Tokenizer {
 public:
  std::vector<int32_t> encode(const std::string& text, bool add_bos) const override {
    std::vector<int32_t> out;
    if (add_bos) out.push_back(1);
    for (size_t i = 0; i < text.size(); i++) {
      if (text[i] == 'a' && i + 1 < text.size() && text[i + 1] == 'b') {
        out.push_back(300);
        i++;
      } else {
        out.push_back(static_cast<unsigned char>(text[i]) + 3);
      }
    }
    return out;
  }
  std::string decode(const std::vector<int32_t>&) const override { return ""; }
  std::string decode_piece(int32_t, int32_t) const override { return ""; }
  int64_t vocab_size() const override { return 301; }
  int32_t bos_id() const override { return 1; }
  int32_t eos_id() const override { return 2; }
};

}  // namespace

TEST(TaskEncode, SharedPromptAndOptionTokens) {
  FakeWordTokenizer tok;
  TaskExample ex = template_sst2("a fine film", 1);
  EncodedExample enc = encode_example(tok, ex, 64);
  ASSERT_EQ(enc.candidates.size(), 2u);
  EXPECT_EQ(enc.gold, 1);
  const EncodedCandidate& c1 = enc.candidates[1];
  // BOS "a" " fine" " film" " It" " was" | " great"
  ASSERT_EQ(c1.tokens.size(), 7u);
  EXPECT_EQ(c1.tokens[0], 1);
  EXPECT_EQ(c1.option_start, 6);
  EXPECT_EQ(c1.tokens[6], tok.id(" great"));
  EXPECT_EQ(enc.candidates[0].tokens[6], tok.id(" terrible"));
  // Prompt tokens are shared; the concatenation equals the whole string's tokenisation.
  for (int i = 0; i < 6; i++) EXPECT_EQ(enc.candidates[0].tokens[i], c1.tokens[i]);
  EXPECT_EQ(c1.tokens, tok.encode("a fine film It was great", true));

  // Newline-separated option (RTE) and a multi-token option (COPA).
  EncodedExample rte = encode_example(tok, template_rte("P.", "H.", 0), 64);
  EXPECT_EQ(rte.candidates[0].tokens.back(), tok.id("Yes"));
  EXPECT_EQ(rte.candidates[0].tokens[rte.candidates[0].option_start - 1], tok.id("\n"));
  EncodedExample copa = encode_example(tok, template_copa("It rained.", "We got wet.",
                                                         "We sang.", "effect", 0), 64);
  const EncodedCandidate& cc = copa.candidates[0];
  EXPECT_EQ(static_cast<int64_t>(cc.tokens.size()) - cc.option_start, 3);  // " we" " got" " wet."
  EXPECT_EQ(tok.decode(std::vector<int32_t>(cc.tokens.begin() + cc.option_start, cc.tokens.end())),
            " we got wet.");
}

TEST(TaskEncode, IclPrefixPrecedesContext) {
  FakeWordTokenizer tok;
  TaskExample demo = template_sst2("loved it", 1);
  TaskExample ex = template_sst2("hated it", 0);
  std::string prefix = build_icl_prefix({demo});
  EncodedExample enc = encode_example(tok, ex, 64, prefix);
  const EncodedCandidate& c = enc.candidates[0];
  EXPECT_EQ(c.tokens, tok.encode("loved it It was great\n\nhated it It was terrible", true));
  EXPECT_EQ(static_cast<int64_t>(c.tokens.size()) - c.option_start, 1);
}

TEST(TaskEncode, TruncatesPromptFromTheLeftKeepingBos) {
  FakeWordTokenizer tok;
  TaskExample ex = template_sst2("one two three four five", 1);
  // Full: BOS one two three four five It was great = 9 tokens.
  EncodedExample enc = encode_example(tok, ex, 5);
  const EncodedCandidate& c = enc.candidates[1];
  ASSERT_EQ(c.tokens.size(), 5u);
  EXPECT_EQ(c.tokens[0], 1);
  EXPECT_EQ(c.tokens[1], tok.id(" five"));
  EXPECT_EQ(c.tokens[4], tok.id(" great"));
  EXPECT_EQ(c.option_start, 4);

  // COPA option of 3 tokens: fits in max_len 4 (BOS + option), not in 3.
  TaskExample copa = template_copa("It rained.", "We got wet.", "We sang loudly.", "effect", 0);
  EncodedExample e4 = encode_example(tok, copa, 4);
  EXPECT_EQ(e4.candidates[0].option_start, 1);
  EXPECT_EQ(e4.candidates[0].tokens.size(), 4u);
  std::string msg = error_of([&] { encode_example(tok, copa, 3); });
  EXPECT_THAT(msg, HasSubstr("max_len 3"));
}

TEST(TaskEncode, MergeAcrossBoundaryFallsBackToWholeString) {
  FakeMergingTokenizer tok;
  TaskExample ex;
  ex.contexts = {"xa", "xa"};
  ex.options = {"bc", "d"};
  ex.gold = 0;
  EncodedExample enc = encode_example(tok, ex, 16);
  // "xa"+"bc" -> x, ab, c: the merged token carries option text, so it is scored too.
  const EncodedCandidate& c0 = enc.candidates[0];
  EXPECT_EQ(c0.tokens, tok.encode("xabc", true));
  EXPECT_EQ(c0.option_start, 2);
  // "xa"+"d" does not merge: shared-prompt path.
  const EncodedCandidate& c1 = enc.candidates[1];
  EXPECT_EQ(c1.tokens, tok.encode("xad", true));
  EXPECT_EQ(c1.option_start, 3);
}

TEST(TaskEncode, RejectsBadExamples) {
  FakeWordTokenizer tok;
  TaskExample ex = template_sst2("fine", 1);
  ex.gold = 5;
  EXPECT_THROW_MSG(encode_example(tok, ex, 16), "task example's gold index 5 is not one of its 2 candidates");
  ex.gold = 0;
  ex.options[0] = "";
  EXPECT_THAT(error_of([&] { encode_example(tok, ex, 16); }), HasSubstr("adds no tokens"));
}

// --- encoding with the real LLaMA-2 sentencepiece tokenizer

static std::unique_ptr<Tokenizer> llama2_tokenizer() {
  return load_sentencepiece_tokenizer(asset_path("tokenizers/llama2.model"));
}

TEST(TaskEncodeSentencepiece, GoldenTokens) {
  std::unique_ptr<Tokenizer> tok = llama2_tokenizer();
  // Expected ids from Python's sentencepiece: [BOS] + sp.encode(text), as MeZO's LLaMA
  // tokenizer encodes the whole prompt; option length = |encode(c + o)| - |encode(c)|.
  TaskExample sst2 = task_read_file(TASK_SST2, asset_path("data/glue/SST-2/dev.tsv"))[0];
  EncodedExample e = encode_example(*tok, sst2, 64);
  const std::vector<int32_t> prompt = {1,    372,  525, 29879, 263, 1373, 4056, 322,
                                       4049, 6602, 292, 16342, 869, 739,  471};
  std::vector<int32_t> terrible = prompt, great = prompt;
  terrible.push_back(16403);  // "▁terrible"
  great.push_back(2107);      // "▁great"
  EXPECT_EQ(e.candidates[0].tokens, terrible);
  EXPECT_EQ(e.candidates[1].tokens, great);
  EXPECT_EQ(e.candidates[0].option_start, 15);
  EXPECT_EQ(e.candidates[1].option_start, 15);

  TaskExample copa = task_read_file(TASK_COPA, superglue("COPA", "val.jsonl"))[0];
  EncodedExample c = encode_example(*tok, copa, 64);
  const EncodedCandidate& c0 = c.candidates[0];  // " the toilet filled with water."
  EXPECT_EQ(std::vector<int32_t>(c0.tokens.begin() + c0.option_start, c0.tokens.end()),
            (std::vector<int32_t>{278, 304, 488, 29873, 10423, 411, 4094, 29889}));

  EncodedExample rte = encode_example(*tok, template_rte("P.", "H.", 0), 64);
  EXPECT_EQ(rte.candidates[0].tokens.back(), 8241);  // "Yes" after "\n", no "▁"
  EXPECT_EQ(rte.candidates[1].tokens.back(), 3782);  // "No"
  EXPECT_EQ(rte.candidates[0].option_start + 1,
            static_cast<int64_t>(rte.candidates[0].tokens.size()));
}

// On real rows of every task, with and without demonstrations, the encoding is MeZO's: the
// whole prompt + option tokenised at once, the last |encode(c + o)| - |encode(c)| tokens
// scored, and candidates with one context share their prompt tokens.
TEST(TaskEncodeSentencepiece, MatchesMeZOOnRealRows) {
  std::unique_ptr<Tokenizer> tok = llama2_tokenizer();
  struct Case {
    TaskId task;
    std::string path;
  };
  const Case cases[] = {
      {TASK_SST2, asset_path("data/glue/SST-2/dev.tsv")},
      {TASK_RTE, superglue("RTE", "val.jsonl")},
      {TASK_CB, superglue("CB", "val.jsonl")},
      {TASK_COPA, superglue("COPA", "val.jsonl")},
      {TASK_BOOLQ, superglue("BoolQ", "val.jsonl")},
      {TASK_WIC, superglue("WiC", "val.jsonl")},
      {TASK_MULTIRC, superglue("MultiRC", "val.jsonl")},
  };
  for (const Case& cs : cases) {
    std::vector<TaskExample> rows = task_read_file(cs.task, cs.path);
    const std::string prefix = build_icl_prefix({rows[1], rows[2]});
    for (size_t r = 3; r < rows.size() && r < 40; r++) {
      const TaskExample& ex = rows[r];
      for (const std::string& icl : {std::string(), prefix}) {
        EncodedExample enc = encode_example(*tok, ex, 4096, icl);
        ASSERT_EQ(enc.candidates.size(), ex.options.size());
        for (size_t i = 0; i < ex.options.size(); i++) {
          const EncodedCandidate& c = enc.candidates[i];
          const std::string whole =
              template_lstrip_whitespace(icl + ex.contexts[i]) + ex.options[i];
          ASSERT_EQ(c.tokens, tok->encode(whole, true)) << task_name(cs.task) << " row " << r;
          int64_t option_len = static_cast<int64_t>(
              tok->encode(ex.contexts[i] + ex.options[i], false).size() -
              tok->encode(ex.contexts[i], false).size());
          EXPECT_EQ(static_cast<int64_t>(c.tokens.size()) - c.option_start, option_len)
              << task_name(cs.task) << " row " << r;
          const EncodedCandidate& c0 = enc.candidates[0];
          if (ex.contexts[i] == ex.contexts[0]) {
            ASSERT_EQ(c.option_start, c0.option_start);
            EXPECT_TRUE(std::equal(c.tokens.begin(), c.tokens.begin() + c.option_start,
                                   c0.tokens.begin()));
          }
        }
      }
    }
  }
}

TEST(TaskEncodeSentencepiece, LeftTruncationOfALongPassage) {
  std::unique_ptr<Tokenizer> tok = llama2_tokenizer();
  TaskExample ex = task_read_file(TASK_MULTIRC, superglue("MultiRC", "val.jsonl"))[0];
  EncodedExample full = encode_example(*tok, ex, 4096);
  EncodedExample cut = encode_example(*tok, ex, 48);
  for (size_t i = 0; i < 2; i++) {
    const std::vector<int32_t>& f = full.candidates[i].tokens;
    const std::vector<int32_t>& t = cut.candidates[i].tokens;
    ASSERT_GT(f.size(), 48u);
    ASSERT_EQ(t.size(), 48u);
    EXPECT_EQ(t[0], tok->bos_id());
    // MeZO: encoding[0:1] + encoding[1:][-(max_length - 1):]
    EXPECT_TRUE(std::equal(t.begin() + 1, t.end(), f.end() - 47));
    EXPECT_EQ(static_cast<int64_t>(t.size()) - cut.candidates[i].option_start,
              static_cast<int64_t>(f.size()) - full.candidates[i].option_start);
  }
  // A COPA option of 8 tokens needs max_len >= 9.
  TaskExample copa = task_read_file(TASK_COPA, superglue("COPA", "val.jsonl"))[0];
  EXPECT_EQ(encode_example(*tok, copa, 9).candidates[0].option_start, 1);
  EXPECT_THAT(error_of([&] { encode_example(*tok, copa, 8); }), HasSubstr("max_len 8"));
}

// --- long texts: only a tail is tokenized

namespace {

// A tokenizer that remembers the longest text it was asked to encode.
class LongestInputTokenizer : public Tokenizer {
 public:
  explicit LongestInputTokenizer(const Tokenizer& t) : t_(t) {}
  std::vector<int32_t> encode(const std::string& text, bool add_bos) const override {
    longest = std::max(longest, text.size());
    return t_.encode(text, add_bos);
  }
  std::string decode(const std::vector<int32_t>& tokens) const override { return t_.decode(tokens); }
  std::string decode_piece(int32_t prev, int32_t token) const override { return t_.decode_piece(prev, token); }
  int64_t vocab_size() const override { return t_.vocab_size(); }
  int32_t bos_id() const override { return t_.bos_id(); }
  int32_t eos_id() const override { return t_.eos_id(); }
  bool add_bos_by_default() const override { return t_.add_bos_by_default(); }
  mutable size_t longest = 0;

 private:
  const Tokenizer& t_;
};

// task_encode.h's encoding with every text tokenized whole (the reference the bounded
// encoding must equal): BOS, encode(prompt) + the option's tokens (or encode(prompt + option)
// when a token spans the boundary), cut from the left after BOS to max_len.
EncodedCandidate encode_whole_text(const Tokenizer& tok, const std::string& context, const std::string& option,
                                   int64_t max_len) {
  const std::vector<int32_t> c = tok.encode(context, false), f = tok.encode(context + option, false);
  size_t k = 0;
  while (k < c.size() && k < f.size() && c[k] == f[k]) k++;
  const int64_t n_bos = tokenizer_wants_bos(tok) ? 1 : 0;
  EncodedCandidate out;
  if (n_bos) out.tokens.push_back(tok.bos_id());
  const std::string prompt = template_lstrip_whitespace(context);
  const std::vector<int32_t> p = k == c.size() ? tok.encode(prompt, false) : tok.encode(prompt + option, false);
  out.tokens.insert(out.tokens.end(), p.begin(), p.end());
  if (k == c.size()) out.tokens.insert(out.tokens.end(), f.begin() + static_cast<std::ptrdiff_t>(k), f.end());
  const int64_t len = static_cast<int64_t>(out.tokens.size());
  out.option_start = len - static_cast<int64_t>(f.size() - k);
  if (len > max_len) {
    out.tokens.erase(out.tokens.begin() + n_bos, out.tokens.begin() + n_bos + (len - max_len));
    out.option_start -= len - max_len;
  }
  return out;
}

// About `bytes` of random text: words, accents, CJK, emoji, punctuation, line breaks, runs of spaces.
std::string random_long_text(size_t bytes, uint32_t seed) {
  static const std::vector<std::string> words = {"the", "little", "dog", "was", "happy", "naïve", "café", "中文",
                                                 "😀", "don't", "quick", "Lily", "ran", "to", "park", "1984"};
  static const std::vector<std::string> gaps = {" ", " ", " ", " ", ", ", ". ", "\n", "  ", "\n\n", "-"};
  std::mt19937 rng(seed);
  std::string text = "Once";
  while (text.size() < bytes) text += gaps[rng() % gaps.size()] + words[rng() % words.size()];
  return text + " quick";
}

}  // namespace

// A prompt far longer than max_len is tokenized from a tail only, and encodes exactly as its
// whole text does, with every tokenizer kind (sentencepiece, byte-level BPE), short and long
// max_len, options that merge with the context's last word or not.
TEST(TaskEncodeLongText, LongTextsEncodeAsTheirWholeText) {
  std::vector<std::pair<std::string, std::unique_ptr<Tokenizer>>> toks;
  toks.emplace_back("llama2", load_sentencepiece_tokenizer(asset_path("tokenizers/llama2.model")));
  toks.emplace_back("tinystories", load_sentencepiece_tokenizer(asset_path("tokenizers/tinystories-512.model")));
  toks.emplace_back("tiny_smollm", load_bpe_tokenizer_hf_dir("tests/fixtures/bpe/tiny_smollm"));
  if (!smezo_test::smollm2_path().empty())
    toks.emplace_back("smollm2", load_bpe_tokenizer_gguf(smezo_test::smollm2_path()));
  const std::string text = random_long_text(60000, static_cast<uint32_t>(smezo_test::mixed_seed(1107)));
  TaskExample ex;
  ex.options = {" great", "ly done", "\nYes", " naïve 中文 😀 end"};
  ex.contexts.assign(ex.options.size(), text);
  for (const auto& [name, tok] : toks) {
    for (int64_t max_len : {32, 100, 700}) {
      LongestInputTokenizer counting(*tok);
      const EncodedExample enc = encode_example(counting, ex, max_len);
      for (size_t i = 0; i < ex.options.size(); i++) {
        const EncodedCandidate want = encode_whole_text(*tok, text, ex.options[i], max_len);
        const EncodedCandidate& got = enc.candidates[i];
        EXPECT_EQ(got.tokens, want.tokens) << name << " max_len " << max_len << " option " << i << " "
                                           << smezo_test::seed_note();
        EXPECT_EQ(got.option_start, want.option_start) << name << " max_len " << max_len << " option " << i;
        EXPECT_GT(got.prompt_tokens_cut, 0) << name;
      }
      // the work is bounded by what is kept: 8 KB plus 16 bytes for twice the tokens kept, and 64
      EXPECT_LE(counting.longest, static_cast<size_t>(8192 + (2 * max_len + 64) * 16 + 64)) << name << " max_len "
                                                                                             << max_len;
    }
  }
}
