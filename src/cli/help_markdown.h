// `smezo help --markdown`: every command and its options as one Markdown page, from the same
// CLI11 tables that parse them and that `smezo help COMMAND` prints (option_value_label,
// option_help_text in cli.h). Its output is committed as docs/CLI.md, and a test
// (tests/test_cli_help.cpp) fails when the two differ. The page depends on nothing of the
// machine: no terminal width (lines are not wrapped) and no path of this checkout (the assets
// folder in a default is written ASSETS).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace smezo {

// The reference page of `smezo` (the top-level app, its subcommands registered).
std::string cli_markdown(const CLI::App& smezo);

}  // namespace smezo
