// tools/readme_commands.py, which hands CI the README's commands as written (tools/newcomer_check.sh
// runs them in a fresh clone): the two numbered commands of the opening ```sh block, the later
// blocks as the examples, and a README that lost or reworded a command refused, never run empty.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::run_command;
using smezo_test::write_file;
using testing::HasSubstr;

namespace {

// Runs readme_commands.py `which` on a README holding `text`; its exit code, output in *out.
int extract(const std::string& text, const std::string& which, std::string* out) {
  const std::string readme = make_temp_dir("readme") + "/README.md";
  write_file(readme, text);
  return run_command("python3 tools/readme_commands.py " + which + " --readme " + readme, out);
}

const std::string kOpening = "# tool\n\n```sh\n# 1. the demo\ntools/a.sh && make\n# 2. the tests\nmake test\n```\n";

}  // namespace

TEST(ReadmeCommands, NumberedCommandsAndExamples) {
  const std::string readme = kOpening + "text\n\n```sh\nbuild/x one\nbuild/x two \\\n  --flag\n```\n\n"
                                        "    indented, not run\n\n```python\nnot run\n```\n```sh\nbuild/x three\n```\n";
  std::string out;
  ASSERT_EQ(extract(readme, "1", &out), 0) << out;
  EXPECT_EQ(out, "tools/a.sh && make\n");
  ASSERT_EQ(extract(readme, "2", &out), 0) << out;
  EXPECT_EQ(out, "make test\n");
  ASSERT_EQ(extract(readme, "examples", &out), 0) << out;
  EXPECT_EQ(out, "build/x one\nbuild/x two \\\n  --flag\nbuild/x three\n");
}

TEST(ReadmeCommands, ALostOrRewordedCommandIsRefused) {
  std::string out;
  EXPECT_EQ(extract("# tool\n\n```sh\n# 1. the demo\ntools/a.sh\n```\n", "1", &out), 1);
  EXPECT_THAT(out, HasSubstr("has commands [1], expected '# 1.' and '# 2.'"));
  EXPECT_EQ(extract("```sh\n# 1. the demo\n# 2. the tests\nmake test\n```\n", "2", &out), 1);
  EXPECT_THAT(out, HasSubstr("README command 1: no command line after '# 1. the demo'"));
  EXPECT_EQ(extract("# tool, no code\n", "1", &out), 1);
  EXPECT_THAT(out, HasSubstr("has no ```sh block"));
}

// The real README: two commands, both starting with the set-up a fresh machine needs.
TEST(ReadmeCommands, TheReadmeHasBoth) {
  for (const std::string which : {"1", "2"}) {
    std::string out;
    ASSERT_EQ(run_command("python3 tools/readme_commands.py " + which, &out), 0) << out;
    EXPECT_THAT(out, testing::StartsWith("tools/deps.sh install && make -j2")) << which;
  }
}
