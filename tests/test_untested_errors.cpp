// tools/checks/untested_errors.py, the rough list of error sites in src/ whose message no test
// checks: on a tiny made-up src/ and tests/ whose answer is known, then on the real tree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::run_command;
using smezo_test::write_file;
using testing::HasSubstr;
using testing::Not;

// Four sites: one checked by a whole piece of its message, one by a shorter test substring,
// one never checked, and one whose only literal text is the generic word before %s (so it
// cannot be matched and counts as untested). The macro's own #define is not a site. Made-up
// words, so this file's text marks no real site of src/ as tested.
TEST(UntestedErrors, CountsSitesOnAMadeUpTree) {
  const std::string root = make_temp_dir("untested_errors");
  ASSERT_EQ(mkdir((root + "/src").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((root + "/tests").c_str(), 0755), 0);
  write_file(root + "/src/a.cpp",
             "#define SMEZO_REQUIRE(cond, ...) do { } while (0)\n"
             "void f(int n, const char* p) {\n"
             "  SMEZO_REQUIRE(n > 0, \"zorblax size %d must be a prime zorblax\", n);\n"
             "  SMEZO_REQUIRE(p != nullptr && p[0] != ',',\n"
             "                \"the quuxlog %s has a second quux header \"\n"
             "                \"---> HINT: split it\", p);\n"
             "  throw_error(\"frobnicator %s has no end-of-frob marker\", p);\n"
             "  throw_error(\"bad %s\", p);\n"
             "}\n");
  write_file(root + "/tests/t.cpp",
             "EXPECT_THAT(msg, HasSubstr(\"zorblax size 3 must be a prime zorblax\"));\n"
             "EXPECT_THAT(msg, HasSubstr(\"a second quux header\"));\n");
  std::string out;
  ASSERT_EQ(run_command("python3 tools/checks/untested_errors.py --src " + root + "/src --tests " + root + "/tests",
                        &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("2 of 4 error sites have no test")) << out;
  EXPECT_THAT(out, HasSubstr("src/a.cpp:7 "));
  EXPECT_THAT(out, HasSubstr("frobnicator %s has no end-of-frob marker"));
  EXPECT_THAT(out, HasSubstr("src/a.cpp:8 "));
  EXPECT_THAT(out, Not(HasSubstr("src/a.cpp:3 ")));
  EXPECT_THAT(out, Not(HasSubstr("src/a.cpp:4 ")));

  ASSERT_EQ(run_command("python3 tools/checks/untested_errors.py --all --src " + root + "/src --tests " + root +
                        "/tests", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("tested    src/a.cpp:3 "));
  EXPECT_THAT(out, HasSubstr("UNTESTED  src/a.cpp:7 "));
}

// On the real tree: it runs, finds hundreds of sites, and counts one this suite does check.
TEST(UntestedErrors, RunsOnTheRealTree) {
  std::string out;
  ASSERT_EQ(run_command("python3 tools/checks/untested_errors.py --all", &out), 0) << out;
  EXPECT_THAT(out, testing::ContainsRegex("[0-9]+ of [0-9][0-9][0-9]+ error sites have no test"));
  EXPECT_THAT(out, testing::ContainsRegex("tested    src/model/model.cpp:[0-9]+ +batch: sequence lengths sum"));
  EXPECT_NE(run_command("python3 tools/checks/untested_errors.py --src /nonexistent_smezo_src", &out), 0);
  EXPECT_THAT(out, HasSubstr("is not a folder"));
}
