// The command line explains itself: --help and `smezo help CMD` list every option with its
// default and allowed values, --version names the commit, bad input is one line naming the
// option, errors carry their hint on the same line, and the library does not depend on the CLI.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/assets.h"
#include "common/check.h"
#include "test_util.h"

using smezo_test::read_file;
using smezo_test::run_command;
using testing::HasSubstr;

namespace {

const std::string kSmezo = smezo_test::smezo_binary();
const char* const kCommands[] = {"train", "eval", "generate", "replay", "info", "logits", "bench"};

std::string output_of(const std::string& args, int* rc = nullptr) {
  std::string out;
  const int code = run_command(kSmezo + " " + args, &out);
  if (rc) *rc = code;
  return out;
}


}  // namespace

TEST(CliHelp, TopLevelListsEveryCommand) {
  for (const char* args : {"help", "--help", "-h"}) {
    int rc = -1;
    const std::string out = output_of(args, &rc);
    EXPECT_EQ(rc, 0) << args;
    for (const char* c : kCommands) EXPECT_THAT(out, testing::ContainsRegex(std::string("\n  ") + c + " ")) << args;
    EXPECT_THAT(out, HasSubstr("smezo help COMMAND"));
  }
  int rc = -1;
  EXPECT_THAT(output_of("", &rc), HasSubstr("Commands:"));  // no command: the list, exit 2
  EXPECT_EQ(rc, 2);
}

// `smezo CMD --help` and `smezo help CMD` print the same text, exit 0, and every option line
// carries its default or "required" (switches excepted).
TEST(CliHelp, EveryCommandAnswersHelpBothWays) {
  for (const char* c : kCommands) {
    int rc1 = -1, rc2 = -1;
    const std::string a = output_of(std::string(c) + " --help", &rc1), b = output_of(std::string("help ") + c, &rc2);
    EXPECT_EQ(rc1, 0) << c << ": " << a;
    EXPECT_EQ(rc2, 0) << c;
    EXPECT_EQ(a, b) << c;
    EXPECT_THAT(a, HasSubstr(std::string("Usage: smezo ") + c)) << c;
    // every "--name VALUE" option line states its default or that it is required
    std::istringstream lines(a);
    std::string line, option;
    std::string block;
    auto check_block = [&] {
      if (option.empty()) return;
      EXPECT_TRUE(block.find("default: ") != std::string::npos || block.find("required") != std::string::npos)
          << c << ": " << block;
    };
    while (std::getline(lines, line)) {
      std::smatch m;
      if (std::regex_search(line, m, std::regex("^  (--[a-z-]+) [A-Z]"))) {
        check_block();
        option = m[1];
        block = line;
      } else if (std::regex_search(line, std::regex("^  [-A-Z]"))) {
        check_block();
        option.clear();
      } else if (!option.empty()) {
        block += line;
      }
    }
    check_block();
  }
}

TEST(CliHelp, TrainHelpShowsDefaultsAndAllowedValues) {
  const std::string out = output_of("help train");
  std::string flat = std::regex_replace(out, std::regex("\\s+"), " ");
  for (const char* want : {"--task NAME", "one of sst2, rte, boolq, wic, multirc, copa, cb", "--method NAME",
                           "one of mezo, smezo, rmezo, fzoo", "--lr-schedule NAME", "one of constant, linear",
                           "--device NAME", "one of cpu, cuda", "--dtype NAME", "one of f32, f16, bf16",
                           "--max-len N", "default: 256; allowed: integer >= 2", "--steps N", "default: 20000",
                           "--sparsity X", "default: 0.75; mezo, fzoo: 0; allowed: in [0, 1)", "--lr X",
                           "above 0.1 prints a warning", "--dev-examples N", "0: no dev evaluation", "--resume",
                           "--freeze-embeddings", "--stochastic-rounding", "--out DIR", "--noise NAME",
                           "default: gaussian; fzoo: rademacher; --resume: the run's own; allowed: one of gaussian, "
                           "gaussian-v1, rademacher, sign", "--probes NAME", "one of pair, separate",
                           "--probes-per-step N", "--accumulate N", "an effective batch of K x --batch"})
    EXPECT_THAT(flat, HasSubstr(want));
  flat = std::regex_replace(output_of("eval --help"), std::regex("\\s+"), " ");
  for (const char* want : {"--mode NAME", "one of zero-shot, icl", "--split NAME", "one of dev, test",
                           "--shots N", "16 with --mode icl, else 0", "--max-len N", "the run's, else 256"})
    EXPECT_THAT(flat, HasSubstr(want));
  flat = std::regex_replace(output_of("generate --help"), std::regex("\\s+"), " ");
  for (const char* want : {"--steps N", "the prompt's tokens and BOS included (llama2.c's -n)", "--new-tokens N",
                           "not with --steps", "--seed N", "from the clock, printed on stderr", "--top-p X",
                           "in (0, 1]"})
    EXPECT_THAT(flat, HasSubstr(want));
  flat = std::regex_replace(output_of("bench --help"), std::regex("\\s+"), " ");
  for (const char* want : {"--kernel NAME", "required", "--reps N", "integer in [1, 100000]", "--quantile X",
                           "--shape NAME", "smollm2-135m", "--probes NAME", "one of pair, separate, both"})
    EXPECT_THAT(flat, HasSubstr(want));
}

TEST(CliHelp, VersionNamesTheCommit) {
  int rc = -1;
  const std::string out = output_of("--version", &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_THAT(out, testing::MatchesRegex("smezo [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit ([0-9a-f]{7,40}(-dirty)?|unknown)\\)"
                                         "(, without MPI|, with MPI: [^\n]+)\n"));
}

// Bad command lines: one line "smezo: error: ..." naming the option, exit code 2.
TEST(CliErrors, BadOptionsAreOneLineNamingTheOption) {
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"train --max-len 1", "--max-len: must be an integer >= 2, got 1"},
      {"eval --max-len 1", "--max-len: must be an integer >= 2, got 1"},
      {"train --steps", "option --steps needs a value"},
      {"train --steps 2 --steps 3", "option --steps is given more than once"},
      {"train --steps 1.5", "--steps: '1.5' is not an integer >= 1"},
      {"train --seed -1", "--seed: '-1' is not an integer in [0, 2^64)"},
      {"train --batch 99999999999999999999", "--batch: must be an integer >= 1"},
      {"train --lr nan", "--lr: 'nan' is not a finite number"},
      {"train --lr inf", "--lr: 'inf' is not a finite number"},
      {"train --eps 1e999", "--eps: '1e999' is not a finite number"},
      {"train --task winogrande", "--task: 'winogrande' is not one of sst2, rte"},
      {"train --lr-schedule cosine", "--lr-schedule: 'cosine' is not one of constant, linear"},
      {"train --device gpu", "--device: 'gpu' is not one of cpu, cuda"},
      {"train --dtype fp8", "--dtype: 'fp8' is not one of f32, f16, bf16"},
      {"eval --mode few-shot", "--mode: 'few-shot' is not one of zero-shot, icl"},
      {"eval --split val", "--split: 'val' is not one of dev, test"},
      {"generate --top-p 0", "--top-p: must be in (0, 1], got 0"},
      {"generate --steps 5 --new-tokens 3", "--steps excludes --new-tokens"},
      {"train --resume=maybe", "--resume: cannot use 'maybe'"},
      {"train stray", "unexpected argument 'stray' for smezo train"},
      {"eval --stepz 3", "unknown option --stepz for smezo eval"},
      {"replay", "BASE is required"},
      {"replay a b", "--out is required"},
      {"bench", "--kernel or --shape is required"},
      {"bench --kernel linear --shape tiny", "--kernel excludes --shape"},
      {"bench --shape gpt-5", "--shape: 'gpt-5' is not one of llama-7b, mistral-7b"},
      {"help nope", "'nope' is not one of train"},
      {"--bogus", "unknown option --bogus"},
      {"frobnicate", "unknown command 'frobnicate'"},
  };
  for (const Case& c : cases) {
    int rc = -1;
    const std::string out = output_of(c.args, &rc);
    EXPECT_EQ(rc, 2) << c.args << ": " << out;
    EXPECT_THAT(out, testing::StartsWith("smezo: error: ")) << c.args;
    EXPECT_THAT(out, HasSubstr(c.expect)) << c.args;
    EXPECT_TRUE(smezo_test::is_one_line_output(out)) << c.args;
  }
}

// Existing spellings keep working: --name=value, switches with =true/=false, case-insensitive task.
TEST(CliErrors, OptionSpellingsAccepted) {
  int rc = -1;
  std::string out = output_of("info --model=" + smezo::asset_path("models/stories260K.bin"), &rc);
  EXPECT_EQ(rc, 0) << out;
  out = output_of("generate --steps=3 --temperature=0", &rc);
  EXPECT_EQ(rc, 0) << out;
  // a switch given =false parses (and the bad --max-len behind it is what fails)
  out = output_of("train --skip-test=false --task RTE --max-len 1", &rc);
  EXPECT_THAT(out, HasSubstr("--max-len"));
}

// An error's hint sits on the same line; Error splits it off for records such as summary.json.
TEST(CliErrors, HintIsPartOfTheOneLine) {
  smezo::Error e("cannot open x\n---> HINT: pass --data DIR");
  EXPECT_EQ(e.message(), "cannot open x");
  EXPECT_EQ(e.hint(), "pass --data DIR");
  EXPECT_STREQ(e.what(), "cannot open x ---> HINT: pass --data DIR");
  smezo::Error f("a; ---> HINT: b\nc");
  EXPECT_EQ(f.message(), "a");
  EXPECT_EQ(f.hint(), "b c");
  smezo::Error g("plain\nmessage");
  EXPECT_STREQ(g.what(), "plain message");
  EXPECT_EQ(g.hint(), "");
  EXPECT_STREQ(smezo::Error("m", "h").what(), "m ---> HINT: h");

  int rc = -1;
  const std::string out =
      output_of("generate --tokenizer " + smezo::asset_path("tokenizers/llama2.model"), &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_TRUE(smezo_test::is_one_line_output(out));
  EXPECT_THAT(out, HasSubstr("has 32000 tokens but model"));
  EXPECT_THAT(out, HasSubstr(" ---> HINT: pass the tokenizer the model was trained with (--tokenizer)"));
  // a missing data file names the file and says what --data is
  const std::string dir = smezo_test::make_temp_dir("hint_data");
  const std::string data_err = output_of("eval --data " + dir + " --test-examples 5");
  EXPECT_TRUE(smezo_test::is_one_line_output(data_err));
  EXPECT_THAT(data_err, HasSubstr("cannot open data file " + dir + "/glue/SST-2/"));
  EXPECT_THAT(data_err, HasSubstr("---> HINT: --data DIR names the folder holding glue/ and superglue/"));
}

// The default model is found from any working directory (through the binary's location), and
// when nothing is found the error says where smezo looked.
TEST(CliAssets, DefaultModelFromAnyDirectory) {
  const std::string abs_binary = std::filesystem::absolute(kSmezo).string();
  std::string out;
  ASSERT_EQ(run_command("cd / && env -u SMEZO_ASSETS " + abs_binary + " info", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("parameters   260032"));
  // a copy of the binary far from any shared/assets
  char tmpl[] = "/tmp/smezo_noassets_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::filesystem::copy_file(abs_binary, dir + "/smezo");
  std::filesystem::permissions(dir + "/smezo", std::filesystem::perms::owner_exec, std::filesystem::perm_options::add);
  const int rc = run_command("cd " + dir + " && env -u SMEZO_ASSETS ./smezo info", &out);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(rc, 1);
  EXPECT_TRUE(smezo_test::is_one_line_output(out));
  EXPECT_THAT(out, HasSubstr("the default model ../shared/assets/models/stories260K.bin does not exist"));
  EXPECT_THAT(out, HasSubstr("smezo looked for the assets folder at ../shared/assets, /tmp/shared/assets and /shared/assets"));
  EXPECT_THAT(out, HasSubstr("---> HINT: pass --model PATH, or set SMEZO_ASSETS"));
}

// Layering: the library never includes the CLI; src/cli/ is not part of libsmezo.a.
TEST(CliLayering, LibraryDoesNotIncludeCliHeaders) {
  namespace fs = std::filesystem;
  ASSERT_TRUE(fs::is_directory("src/cli")) << "run the tests from the repository root";
  int files = 0;
  for (const char* root : {"src", "include", "cuda"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      const std::string path = entry.path().string();
      if (!entry.is_regular_file() || path.rfind("src/cli/", 0) == 0) continue;
      files++;
      EXPECT_THAT(read_file(path), testing::Not(HasSubstr("#include \"cli/"))) << path;
    }
  }
  EXPECT_GT(files, 50);
}

namespace {

// "line N: 'a' against 'b'" for the first line where a and b differ ("" when they are equal).
std::string first_different_line(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int line = 1;; line++) {
    const bool more_a = static_cast<bool>(std::getline(sa, la)), more_b = static_cast<bool>(std::getline(sb, lb));
    if (!more_a && !more_b) return a == b ? "" : "the line ends differ";
    if (!more_a || !more_b || la != lb)
      return "line " + std::to_string(line) + ": '" + (more_a ? la : "(end)") + "' against '" + (more_b ? lb : "(end)") + "'";
  }
}

}  // namespace

// docs/CLI.md is `smezo help --markdown`, committed: it must be what this build prints, and that
// must not depend on the machine (the working directory, the terminal width, the assets folder,
// the CPUs OpenMP may use).
TEST(CliHelp, MarkdownReferenceIsCurrent) {
  std::string here, elsewhere;
  ASSERT_EQ(run_command(kSmezo + " help --markdown", &here), 0) << here;
  const std::string binary = std::filesystem::absolute(kSmezo).string();
  ASSERT_EQ(run_command("cd /tmp && COLUMNS=37 OMP_NUM_THREADS=1 SMEZO_ASSETS=/nonexistent/assets " + binary +
                            " help --markdown",
                        &elsewhere),
            0)
      << elsewhere;
  EXPECT_EQ(first_different_line(here, elsewhere), "") << "smezo help --markdown depends on the machine";
  EXPECT_THAT(here, HasSubstr("\n## smezo train\n"));
  EXPECT_THAT(here, HasSubstr("- `--lr X`: learning rate"));
  EXPECT_EQ(first_different_line(read_file("docs/CLI.md"), here), "")
      << "docs/CLI.md differs from `build/smezo help --markdown` ---> HINT: regenerate it: "
         "build/smezo help --markdown > docs/CLI.md";
}
