// `smezo help --markdown`: every command and its options as one Markdown page, from the CLI11 tables
// that parse them. Committed as docs/CLI.md (tests/test_cli_help.cpp compares); nothing
// machine-dependent: lines are not wrapped and the assets folder in a default is written ASSETS.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace smezo {

// The reference page of `smezo` (the top-level app, its subcommands registered).
std::string cli_markdown(const CLI::App& smezo);

}  // namespace smezo
