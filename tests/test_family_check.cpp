// tools/checks/family_check.py: no code outside the family descriptors (src/model/family*.cpp) asks
// which family a model is. Planted trees with each kind of switch must fail; the real tree must pass.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::run_command;
using smezo_test::write_file;
using testing::HasSubstr;

namespace {

int check_tree(const std::map<std::string, std::string>& files, std::string* out) {
  const std::string root = make_temp_dir("family_check");
  for (const auto& [path, text] : files) {
    std::filesystem::create_directories(std::filesystem::path(root + "/" + path).parent_path());
    write_file(root + "/" + path, text);
  }
  return run_command("python3 tools/checks/family_check.py --root " + root, out);
}

const char* const kDescriptor =
    "extern const FamilyDescriptor kOptFamily = {\n  \"opt\", \"opt\", \"OPTForCausalLM\", nullptr,\n};\n"
    "bool ok(const ModelConfig& c) { return c.family == \"opt\"; }  // a descriptor may\n";

}  // namespace

TEST(FamilyCheck, FailsOnEachKindOfFamilySwitch) {
  std::string out;
  EXPECT_EQ(check_tree({{"src/model/family_opt.cpp", kDescriptor},
                        {"src/model/model.cpp", "if (c.family != \"llama\") x();\n"},
                        {"src/train/checkpoint.cpp", "const bool rope = c.arch != ARCH_OPT;\n"},
                        {"cuda/x.cu", "if (model_type == \"opt\") y();  // a literal\n"},
                        {"src/tokenizer/kind.cpp", "if (ggml_model == \"opt\") z();\n"},  // not a family
                        {"tests/test_x.cpp", "if (c.family == \"opt\") t();\n"}},        // tests may
                       &out),
            1)
      << out;
  EXPECT_THAT(out, HasSubstr("src/model/model.cpp:1: a family comparison outside the descriptors"));
  EXPECT_THAT(out, HasSubstr("src/train/checkpoint.cpp:1: the Architecture enum outside the descriptors"));
  EXPECT_THAT(out, HasSubstr("cuda/x.cu:1: a family name compared as a string outside the descriptors"));
  EXPECT_THAT(out, HasSubstr("family_check: 3 family switch(es)"));
}

TEST(FamilyCheck, TheRealTreeHasNoFamilySwitch) {
  std::string out;
  EXPECT_EQ(run_command("python3 tools/checks/family_check.py", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("family_check: 0 family switch(es)"));
}
