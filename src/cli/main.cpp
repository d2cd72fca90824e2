// smezo command-line entry point: builds the CLI11 app from the registrars (commands.h), parses,
// runs the chosen command, and turns every error into ONE line "smezo: error: ..." on stderr:
// exit code 2 for a bad command line, 1 for an error while running.
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/help_markdown.h"
#include "cli/version.h"
#include "common/check.h"
#include "cpu/cpu_threads.h"

namespace {

int fail(int code, const std::string& text) {
  std::fflush(stdout);
  // smezo::Error folds line breaks, so whatever the source, the error stays one line
  std::fprintf(stderr, "smezo: error: %s\n", smezo::Error(text).what());
  return code;
}

// CLI11's own wording, where it is unclear, in ours (still naming the option).
std::string parse_error_text(const CLI::ParseError& e) {
  const std::string text = e.what();
  const size_t colon = text.find(": ");
  const std::string option = colon == std::string::npos ? "" : text.substr(0, colon);
  if (e.get_name() == "ArgumentMismatch" && !option.empty()) {
    if (text.find("missing") != std::string::npos) return "option " + option + " needs a value";
    if (text.find("At Most") != std::string::npos) return "option " + option + " is given more than once";
  }
  if (e.get_name() == "ConversionError" && text.rfind("Could not convert: ", 0) == 0) {
    const std::string rest = text.substr(19);  // "--resume = maybe"
    const size_t eq = rest.find(" = ");
    if (eq != std::string::npos)
      return rest.substr(0, eq) + ": cannot use '" + rest.substr(eq + 3) + "' (a switch takes true or false)";
  }
  return text;
}

// The first argument no option consumed, as an error (CLI11 collects them with allow_extras).
int report_extras(const std::vector<std::string>& extras, const std::string& command) {
  const std::string& first = extras.front();
  const std::string see = command.empty() ? "see 'smezo help'" : "see 'smezo help " + command + "'";
  if (first.rfind("--", 0) == 0)
    return fail(2, "unknown option " + first.substr(0, first.find('=')) +
                       (command.empty() ? "" : " for smezo " + command) + " (" + see + ")");
  return fail(2, "unexpected argument '" + first + "'" + (command.empty() ? "" : " for smezo " + command) +
                     " (options are --name VALUE; " + see + ")");
}

// smezo help [COMMAND] [--markdown]: the command list, one command's options, or all as Markdown.
int run_help(const CLI::App& app, const std::string& topic, bool markdown) {
  if (markdown)
    std::cout << smezo::cli_markdown(app);
  else if (topic.empty())  // app.help() would explain the selected subcommand, "help" itself
    std::cout << app.get_formatter()->make_help(&app, "smezo", CLI::AppFormatMode::Normal);
  else
    std::cout << app.get_subcommand(topic)->help("smezo");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // OpenMP's defaults before anything runs: may re-execute this program once (cpu_threads.h)
  smezo::cpu_threads_apply_defaults(argv);
  // Past ulimit -f SIGXFSZ would kill us silently; ignored, the write fails with EFBIG and is reported.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app("smezo: fine-tune Llama (1-3.x), Mistral, Qwen2/Qwen2.5, Qwen3 and OPT models with zeroth-order "
               "optimisation (MeZO, Sparse-MeZO, R-MeZO), forward passes only.",
               "smezo");
  app.formatter(smezo::make_help_formatter());
  app.set_version_flag("--version", smezo::version_text(), "print the version and git commit, then exit");
  app.allow_extras();
  app.require_subcommand(0, 1);
  app.footer("Run 'smezo help COMMAND' or 'smezo COMMAND --help' for a command's options, with their\n"
             "defaults and allowed values.");

  std::vector<smezo::Command> commands;
  std::vector<std::string> names;
  for (smezo::CommandRegistrar registrar : smezo::kCommandRegistrars) {
    commands.push_back(registrar(app));
    names.push_back(commands.back().app->get_name());
  }
  std::string topic;
  bool markdown = false;
  CLI::App* help = smezo::add_command(app, "help", "list the commands, or explain one: smezo help COMMAND");
  CLI::Option* topic_option = help->add_option("COMMAND", topic, "the command to explain")->check(smezo::one_of(names));
  help->add_flag("--markdown", markdown, "print every command and its options as Markdown (docs/CLI.md)")
      ->excludes(topic_option);

  if (argc < 2) {
    std::cout << app.help();
    return 2;
  }
  const std::string first = argv[1];
  if (first.empty() || first[0] != '-') {
    bool known = first == "help";
    for (const std::string& n : names) known = known || n == first;
    if (!known) {
      std::string listed;
      for (const std::string& n : names) listed += (listed.empty() ? "" : ", ") + n;
      return fail(2, "unknown command '" + first + "' (commands: " + listed + "; see 'smezo help')");
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    std::cout << e.what() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    return fail(2, parse_error_text(e));
  }

  if (!app.remaining().empty() && app.get_subcommands().empty()) return report_extras(app.remaining(), "");
  if (help->parsed()) return run_help(app, topic, markdown);
  for (const smezo::Command& c : commands) {
    if (!c.app->parsed()) continue;
    if (!c.app->remaining().empty()) return report_extras(c.app->remaining(), c.app->get_name());
    try {
      return c.run();
    } catch (const std::exception& e) {  // smezo::Error and the rest alike: one line
      return fail(1, e.what());
    }
  }
  std::cout << app.help();  // options only (e.g. none at all after "smezo")
  return 2;
}
