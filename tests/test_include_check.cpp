// tools/checks/include_check.py, the strict order of the product's folders (docs/ARCHITECTURE.md, "Folders and what may
// include what"): on made-up trees with a loop planted (a lower folder including a higher one;
// two folders including each other) and a folder without a rank, then on the real tree, which
// must follow the order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::run_command;
using smezo_test::write_file;
using testing::HasSubstr;
using testing::Not;

namespace {

// A tree of the given files (path -> text) in a fresh folder; returns the check's exit status.
int check_tree(const std::map<std::string, std::string>& files, std::string* out) {
  const std::string root = make_temp_dir("include_check");
  for (const auto& [path, text] : files) {
    std::filesystem::create_directories(std::filesystem::path(root + "/" + path).parent_path());
    write_file(root + "/" + path, text);
  }
  return run_command("python3 tools/checks/include_check.py --root " + root, out);
}

}  // namespace

TEST(IncludeCheck, FailsOnALowerFolderIncludingAHigherOne) {
  std::string out;
  EXPECT_EQ(check_tree({{"src/common/check.h", "#pragma once\n"},
                        {"src/backend/backend.h", "#pragma once\n#include \"common/check.h\"\n"},
                        {"cuda/cuda_plan.h", "#pragma once\n"},
                        {"src/model/model.h", "#pragma once\n"},
                        {"src/model/memory_estimate.h",
                         "#include <cstdio>\n"
                         "#include \"backend/backend.h\"\n"  // down the order
                         "#include \"model.h\"\n"            // beside the file: its own folder
                         "#include \"cuda/cuda_plan.h\"\n"},  // up: the model including a backend
                        {"tests/test_x.cpp", "#include \"cuda/cuda_plan.h\"\n"}},  // tests: anything
                       &out),
            1)
      << out;
  EXPECT_THAT(out, HasSubstr("src/model/memory_estimate.h:4: includes cuda/cuda_plan.h: src/model (rank 9) may "
                             "include only lower ranks, cuda is rank 11"));
  EXPECT_THAT(out, HasSubstr("include_check: 1 include(s) against the order"));
}

TEST(IncludeCheck, FailsOnTwoFoldersIncludingEachOther) {
  std::string out;
  EXPECT_EQ(check_tree({{"src/formats/gguf.h", "#pragma once\n#include \"tokenizer/vocab.h\"\n"},
                        {"src/tokenizer/vocab.h", "#pragma once\n#include \"formats/gguf.h\"\n"}},
                       &out),
            1)
      << out;
  EXPECT_THAT(out, HasSubstr("src/formats/gguf.h:2: includes src/tokenizer/vocab.h: src/formats (rank 6)"));
  EXPECT_THAT(out, Not(HasSubstr("vocab.h:2:")));  // the lower half of the loop is allowed
  EXPECT_THAT(out, HasSubstr("include_check: 1 include(s) against the order"));
}

TEST(IncludeCheck, FailsOnAFolderWithoutARank) {
  std::string out;
  EXPECT_EQ(check_tree({{"src/plugins/x.cpp", "#include \"common/check.h\"\n"}, {"src/common/check.h", ""}}, &out),
            1)
      << out;
  EXPECT_THAT(out, HasSubstr("src/plugins/x.cpp: src/plugins has no rank"));
}

TEST(IncludeCheck, PrintsTheOrderBottomFirst) {
  std::string out;
  ASSERT_EQ(run_command("python3 tools/checks/include_check.py --print-order", &out), 0) << out;
  EXPECT_THAT(out, testing::StartsWith(" 1 include/smezo\n 2 src/common\n"));
  EXPECT_THAT(out, HasSubstr(" 9 src/model\n10 src/cpu\n11 cuda\n"));
  EXPECT_THAT(out, testing::EndsWith("15 src/cli\n"));
}

TEST(IncludeCheck, TheProductFollowsTheOrder) {
  std::string out;
  EXPECT_EQ(run_command("python3 tools/checks/include_check.py", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("include_check: 0 include(s) against the order"));
}
