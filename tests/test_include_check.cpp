// tools/include_check.py, the include direction between the top-level folders (docs/ARCHITECTURE.md,
// "Folders and what may include what"): on a made-up tree with one include against the direction, one
// along it and one relative include, then on the real tree, which must follow it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::run_command;
using smezo_test::write_file;
using testing::HasSubstr;
using testing::Not;

TEST(IncludeCheck, FindsAnIncludeAgainstTheDirection) {
  const std::string root = make_temp_dir("include_check");
  for (const char* dir : {"/src/model", "/src/backend", "/src/common", "/cuda"})
    std::filesystem::create_directories(root + dir);
  write_file(root + "/src/model/model.h", "#pragma once\n");
  write_file(root + "/src/backend/backend.h", "#pragma once\n#include \"common/check.h\"\n");
  write_file(root + "/src/common/check.h", "#pragma once\n");
  write_file(root + "/cuda/plan.h", "#pragma once\n");
  write_file(root + "/cuda/kernel.cu",
             "#include <cstdio>\n"
             "#include \"backend/backend.h\"\n"  // along the direction
             "#include \"plan.h\"\n"             // beside the file: its own folder
             "#include \"model/model.h\"\n");    // against it: a backend including the model
  std::string out;
  EXPECT_EQ(run_command("python3 tools/include_check.py --root " + root, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("cuda/kernel.cu:4: includes src/model/model.h (cuda may include: "));
  EXPECT_THAT(out, Not(HasSubstr("kernel.cu:2:")));
  EXPECT_THAT(out, Not(HasSubstr("kernel.cu:3:")));
  EXPECT_THAT(out, HasSubstr("include_check: 1 include(s) against the direction"));
}

TEST(IncludeCheck, TheProductFollowsTheDirection) {
  std::string out;
  EXPECT_EQ(run_command("python3 tools/include_check.py", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("include_check: 0 include(s) against the direction"));
}
