// The "your own data" demo: tools/fixtures/make_demo_data.py's dataset and
// tools/own_data_demo.sh's commands, end to end on the bundled stories260K (2 steps, 4 examples).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace {

using smezo_test::run_command;
const std::string kSmezo = smezo_test::smezo_binary();

std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> rows;
  std::istringstream in(smezo_test::read_file(path));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

// The dataset: the sizes asked for, disjoint splits, answers yes/no matching BoolQ's labels'
// share (neither all yes nor all no), passages cut to the word limit, and the same files for the
// same seed.
TEST(OwnDataDemo, DatasetSplitsAreDisjointAndReproducible) {
  const std::string dir = smezo_test::make_temp_dir("own_data");
  std::string out;
  ASSERT_EQ(run_command("python3 tools/fixtures/make_demo_data.py --out " + dir + "/a --train 50 --dev 20 --test 30", &out), 0)
      << out;
  ASSERT_EQ(run_command("python3 tools/fixtures/make_demo_data.py --out " + dir + "/b --train 50 --dev 20 --test 30", &out), 0)
      << out;
  std::set<std::string> seen;
  size_t yes = 0, total = 0;
  for (const auto& [split, n] : {std::pair{"train", 50u}, {"dev", 20u}, {"test", 30u}}) {
    const auto rows = read_jsonl(dir + "/a/" + split + ".jsonl");
    ASSERT_EQ(rows.size(), n) << split;
    for (const auto& r : rows) {
      EXPECT_TRUE(seen.insert(r["question"].get<std::string>() + "|" + r["passage"].get<std::string>()).second)
          << "a row in two splits: " << r.dump();
      const std::string a = r["answer"];
      EXPECT_TRUE(a == "yes" || a == "no") << a;
      yes += a == "yes";
      total++;
      std::istringstream words(r["passage"].get<std::string>());
      size_t count = 0;
      for (std::string w; words >> w;) count++;
      EXPECT_LE(count, 40u);
    }
    EXPECT_EQ(smezo_test::read_file(dir + "/a/" + split + ".jsonl"), smezo_test::read_file(dir + "/b/" + split + ".jsonl"));
  }
  EXPECT_GT(yes, 0u);
  EXPECT_LT(yes, total);
  ASSERT_EQ(run_command(kSmezo + " train --task-spec " + dir + "/a/spec.json --train-file " + dir +
                            "/a/train.jsonl --dev-file " + dir + "/a/dev.jsonl --test-file " + dir + "/a/test.jsonl --check-data",
                        &out), 0) << out;
}

// The demo's commands on stories260K: the dataset, the evaluations before training, a full, a
// LoRA and a prefix run, and the table whose first row is the evaluations' numbers and the others the runs'.
TEST(OwnDataDemo, RunsEndToEndOnStories260K) {
  const std::string dir = smezo_test::make_temp_dir("own_data_demo") + "/demo";
  std::string out;
  ASSERT_EQ(run_command("SMEZO=" + kSmezo + " SMEZO_DEMO_MODEL=../shared/assets/models/stories260K.bin "
                        "SMEZO_DEMO_STEPS=2 SMEZO_DEMO_EXAMPLES=4 tools/own_data_demo.sh --out " + dir, &out), 0) << out;
  EXPECT_THAT(out, testing::HasSubstr("| run | dev EM | dev F1 | test EM | test F1 |"));
  EXPECT_THAT(out, testing::HasSubstr("| full S-MeZO, 2 steps |"));
  EXPECT_THAT(out, testing::HasSubstr("| LoRA r=8 (q,v), S-MeZO, 2 steps |"));
  EXPECT_THAT(out, testing::HasSubstr("| prefix, 5 tokens, S-MeZO, 2 steps |"));
  const auto full = nlohmann::json::parse(smezo_test::read_file(dir + "/full/summary.json"));
  EXPECT_EQ(full["steps"].get<int64_t>(), 2);
  char row[200];
  std::snprintf(row, sizeof row, "| full S-MeZO, 2 steps | %.3f | %.3f | %.3f | %.3f |",
                full["final_dev_em"].get<double>(), full["final_dev_f1"].get<double>(), full["test_em"].get<double>(),
                full["test_f1"].get<double>());
  EXPECT_THAT(out, testing::HasSubstr(row));
  EXPECT_EQ(run_command("test -f " + dir + "/lora/checkpoint/adapter_config.json", nullptr), 0)
      << "the LoRA run's checkpoint is a PEFT adapter";
  EXPECT_THAT(smezo_test::read_file(dir + "/prefix/checkpoint/adapter_config.json"), testing::HasSubstr("PREFIX_TUNING"))
      << "the prefix run's checkpoint is a PEFT prefix adapter";
}

}  // namespace
