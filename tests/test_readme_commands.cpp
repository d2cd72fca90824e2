// tools/checks/readme_commands.py, which hands CI the README's commands as written (tools/checks/newcomer_check.sh
// runs them in a fresh clone): the two numbered commands of the opening ```sh block, the later
// blocks and those of the docs pages it lists as the examples, and a README that lost or reworded
// a command, or a listed page that went missing, refused, never run empty.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::run_command;
using smezo_test::write_file;
using testing::HasSubstr;
using testing::Not;

namespace {

// Runs readme_commands.py `which` on a README holding `text`, beside a page docs/page.md holding
// `page` (none when empty), with `--pages` as given; its exit code, output in *out.
int extract(const std::string& text, const std::string& which, std::string* out, const std::string& page = "",
            const std::string& pages = "") {
  const std::string dir = make_temp_dir("readme");
  write_file(dir + "/README.md", text);
  if (!page.empty()) {
    std::filesystem::create_directories(dir + "/docs");
    write_file(dir + "/docs/page.md", page);
  }
  return run_command("python3 tools/checks/readme_commands.py " + which + " --readme " + dir + "/README.md --pages '" +
                         pages + "'",
                     out);
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
  // a listed page's blocks follow the README's, in order
  ASSERT_EQ(extract(readme, "examples", &out, "# page\n```sh\nbuild/x four\n```\n```sh\nbuild/x five\n```\n",
                    "docs/page.md"),
            0)
      << out;
  EXPECT_EQ(out, "build/x one\nbuild/x two \\\n  --flag\nbuild/x three\nbuild/x four\nbuild/x five\n");
}

// A page of the list that is gone, or lost its blocks, is an error, not an example less.
TEST(ReadmeCommands, AMissingOrEmptyExamplePageIsRefused) {
  std::string out;
  EXPECT_EQ(extract(kOpening, "examples", &out, "", "docs/gone.md"), 1);
  EXPECT_THAT(out, HasSubstr("example page docs/gone.md: No such file or directory"));
  EXPECT_EQ(extract(kOpening, "examples", &out, "# page, no code\n", "docs/page.md"), 1);
  EXPECT_THAT(out, HasSubstr("example page docs/page.md has no ```sh block"));
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
    ASSERT_EQ(run_command("python3 tools/checks/readme_commands.py " + which, &out), 0) << out;
    EXPECT_THAT(out, testing::StartsWith("tools/deps.sh install && make -j2")) << which;
  }
}

// The real examples: the adapter pages' blocks, then your own data's, in the order they depend on
// each other (the merge after the LoRA run, the adapter eval after the prefix run, command 1's
// checkpoint evaluated, the exported data trained on).
TEST(ReadmeCommands, TheExamplesRunInOrder) {
  std::string out;
  ASSERT_EQ(run_command("python3 tools/checks/readme_commands.py examples", &out), 0) << out;
  size_t at = 0;
  for (const char* step : {"--tune lora", "merge --adapter runs/lora/checkpoint", "--tune prefix",
                           "eval --adapter runs/prefix/checkpoint", "eval --model runs/demo/checkpoint",
                           "--export-data sst2-data", "--task-spec sst2-data/spec.json", "cat > qa.json",
                           "eval --model runs/qa-dev/checkpoint"}) {
    const size_t found = out.find(step, at);
    ASSERT_NE(found, std::string::npos) << "'" << step << "' missing or out of order in:\n" << out;
    at = found;
  }
}

// The checks of README command 1 read the run folder a real `smezo train` writes (the demo on the
// bundled stories260K, 2 steps): a key that summary.json does not have fails here, not after the
// newcomer's 8-minute demo in CI. The zero-shot figure is written by the test: -1 is below any
// accuracy (the check passes), 2 above any (it fails naming both numbers).
TEST(ReadmeCommands, TheDemoCheckReadsARealRun) {
  const std::string dir = make_temp_dir("demo_check");
  std::string out;
  ASSERT_EQ(run_command("SMEZO=" + smezo_test::smezo_binary() +
                            " SMEZO_DEMO_MODEL=stories260K SMEZO_DEMO_STEPS=2 SMEZO_DEMO_EXAMPLES=4 "
                            "tools/demo.sh --out " + dir + "/demo",
                        &out),
            0)
      << out;
  const std::string check = "tools/checks/newcomer_check.sh check-demo " + dir + "/demo";
  EXPECT_EQ(run_command(check, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("demo.zero-shot.json was not written"));
  write_file(dir + "/demo.zero-shot.json", "{\"accuracy\": -1}\n");
  ASSERT_EQ(run_command(check, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("after 2 steps"));
  EXPECT_THAT(out, Not(HasSubstr("Traceback")));
  write_file(dir + "/demo.zero-shot.json", "{\"accuracy\": 2}\n");
  EXPECT_EQ(run_command(check, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("is not above the zero-shot 2"));
}
