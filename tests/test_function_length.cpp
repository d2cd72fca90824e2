// tools/checks/function_length.py, the function-length limit (no function in src/ or cuda/
// over about 80 lines): on a made-up file with one long function among short ones, one-line
// definitions and a namespace; on nested folders (it descends into every subfolder); with an
// allowlist (an allowed function passes, an allowlist line without a reason or naming no long
// function fails); then on src and cuda, which must keep within it.
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

// A file with one function of `body` + 2 lines (void long_one() { ... }) at line 14, a short
// one over two lines, a one-line definition and a struct.
std::string source_with_long_function(int body) {
  std::string text = "// a file\n#include <cstdio>\n\nnamespace smezo {\n\nint one_line() { return 1; }\n\n"
                     "int short_one(int a,\n              int b) {\n  return a + b;\n}\n\n"
                     "// the long one\nvoid long_one() {\n";
  for (int i = 0; i < body; i++) text += "  std::printf(\"%d\\n\", " + std::to_string(i) + ");\n";
  return text + "}\n\nstruct S {\n  int f() { return 2; }\n};\n\n}  // namespace smezo\n";
}

std::string check(const std::string& root, const std::string& args, int* rc) {
  std::string out;
  *rc = run_command("python3 tools/checks/function_length.py --root " + root + " " + args, &out);
  return out;
}

}  // namespace

TEST(FunctionLength, FindsTheFunctionOverTheLimit) {
  const std::string root = make_temp_dir("function_length");
  std::filesystem::create_directories(root + "/src/x");
  write_file(root + "/src/x/x.cpp", source_with_long_function(10));
  int rc = 0;
  std::string out = check(root, "--limit 8 src/x", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_THAT(out, HasSubstr("src/x/x.cpp:14: 12 lines (limit 8): void long_one() {"));
  EXPECT_THAT(out, Not(HasSubstr("short_one")));
  EXPECT_THAT(out, Not(HasSubstr("one_line")));
  EXPECT_THAT(out, HasSubstr("function_length: 1 function(s) over 8 lines in src/x"));
  out = check(root, "--limit 12 src/x", &rc);
  EXPECT_EQ(rc, 0) << out;
}

TEST(FunctionLength, DescendsIntoNestedFolders) {
  const std::string root = make_temp_dir("function_length_nested");
  std::filesystem::create_directories(root + "/cuda/emu/deep");
  write_file(root + "/cuda/top.cu", source_with_long_function(2));
  std::string kernel = source_with_long_function(10);  // a template: its first line is counted
  kernel.replace(kernel.find("// the long one"), 15, "template <int N>");
  write_file(root + "/cuda/emu/deep/k.cuh", kernel);
  int rc = 0;
  std::string out = check(root, "--limit 8 cuda", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_THAT(out, HasSubstr("cuda/emu/deep/k.cuh:13: 13 lines (limit 8): template <int N>"));
  EXPECT_THAT(out, Not(HasSubstr("cuda/top.cu")));
  EXPECT_THAT(out, HasSubstr("function_length: 1 function(s) over 8 lines in cuda"));
  // The allowlist names it by the function after the template line.
  write_file(root + "/allow.txt", "cuda/emu/deep/k.cuh:long_one  a kernel\n");
  out = check(root, "--limit 8 --allow " + root + "/allow.txt cuda", &rc);
  EXPECT_EQ(rc, 0) << out;
}

TEST(FunctionLength, AllowlistKeepsAFunctionWithItsReason) {
  const std::string root = make_temp_dir("function_length_allow");
  std::filesystem::create_directories(root + "/src/x");
  std::filesystem::create_directories(root + "/tools/checks");
  write_file(root + "/src/x/x.cpp", source_with_long_function(10));
  const std::string allow = root + "/tools/checks/function_length_allow.txt";
  write_file(allow, "# a comment\nsrc/x/x.cpp:long_one  a kernel that keeps its registers in one body\n");
  int rc = 0;
  std::string out = check(root, "--limit 8 src", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("src/x/x.cpp:14: 12 lines (limit 8): void long_one() { (allowed: a kernel that keeps "
                             "its registers in one body)"));
  EXPECT_THAT(out, HasSubstr("function_length: 0 function(s) over 8 lines in src"));
  // A line without a reason is refused.
  write_file(allow, "src/x/x.cpp:long_one\n");
  out = check(root, "--limit 8 src", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_THAT(out, HasSubstr("function_length_allow.txt:1: expected `path:function  reason`"));
  // A line naming a function within the limit (or none at all) must go.
  write_file(allow, "src/x/x.cpp:long_one  long\nsrc/x/x.cpp:short_one  long too\n");
  out = check(root, "--limit 8 src", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_THAT(out, HasSubstr("function_length_allow.txt:2: src/x/x.cpp:short_one is not a function over 8 lines: "
                             "remove the line"));
  // Lines for files outside the folders checked are not judged; --allow names another file.
  write_file(root + "/other_allow.txt", "src/x/x.cpp:long_one  long\nsrc/z.cpp:f  elsewhere\n");
  out = check(root, "--limit 8 --allow " + root + "/other_allow.txt src/x", &rc);
  EXPECT_EQ(rc, 0) << out;
}

TEST(FunctionLength, SrcAndCudaKeepWithinEightyLines) {
  std::string out;
  EXPECT_EQ(run_command("python3 tools/checks/function_length.py --limit 80 src cuda", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("function_length: 0 function(s) over 80 lines in src, cuda"));
}
