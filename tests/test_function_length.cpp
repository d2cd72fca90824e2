// tools/function_length.py, the function-length limit (issue 23: no function in src/train over
// about 80 lines): on a made-up file with one long function among short ones, one-line
// definitions and a namespace, then on src/train, which must keep within it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::run_command;
using smezo_test::write_file;
using testing::HasSubstr;
using testing::Not;

TEST(FunctionLength, FindsTheFunctionOverTheLimit) {
  const std::string root = make_temp_dir("function_length");
  std::filesystem::create_directories(root + "/src/x");
  std::string text = "// a file\n#include <cstdio>\n\nnamespace smezo {\n\nint one_line() { return 1; }\n\n"
                     "int short_one(int a,\n              int b) {\n  return a + b;\n}\n\n"
                     "// the long one\nvoid long_one() {\n";
  for (int i = 0; i < 10; i++) text += "  std::printf(\"%d\\n\", " + std::to_string(i) + ");\n";
  text += "}\n\nstruct S {\n  int f() { return 2; }\n};\n\n}  // namespace smezo\n";
  write_file(root + "/src/x/x.cpp", text);
  std::string out;
  EXPECT_EQ(run_command("python3 tools/function_length.py --limit 8 --root " + root + " src/x", &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("src/x/x.cpp:14: 12 lines (limit 8): void long_one() {"));
  EXPECT_THAT(out, Not(HasSubstr("short_one")));
  EXPECT_THAT(out, Not(HasSubstr("one_line")));
  EXPECT_THAT(out, HasSubstr("function_length: 1 function(s) over 8 lines in src/x"));
  EXPECT_EQ(run_command("python3 tools/function_length.py --limit 12 --root " + root + " src/x", &out), 0) << out;
}

TEST(FunctionLength, TheTrainerKeepsWithinEightyLines) {
  std::string out;
  EXPECT_EQ(run_command("python3 tools/function_length.py --limit 80 src/train", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("function_length: 0 function(s) over 80 lines in src/train"));
}
