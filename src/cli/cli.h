// The smezo command line (CLI11): how a command plugs in, and the option checks --help shows.
// A command lives in src/cli/command_<name>.cpp and exports `Command register_<name>(CLI::App&)`
// (listed in commands.h). It adds its subcommand with add_command(), binds every option to a field
// of a state struct held in a std::shared_ptr, attaches the checks below, and returns the subcommand
// plus a `run` closure (capturing the state) that main() calls after parsing:
//   Command register_hello(CLI::App& smezo) {
//     auto s = std::make_shared<HelloState>();
//     CLI::App* cmd = add_command(smezo, "hello", "greets N times");
//     cmd->add_option("--times", s->times, "how many greetings")->check(integer_at_least(1));
//     cmd->add_option("--name", s->name, "who")->check(one_of({"world", "you"}));
//     return {cmd, [s] { return run_hello(*s); }};
//   }
// Help prints each option's description, default (the bound field's, or default_str()) and checks.
// An option error is one line naming the option ("--times: must be an integer >= 1, got 0");
// main() prints it as "smezo: error: ..." (exit 2).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/device_names.h"
#include "common/enum_names.h"
#include "common/value_range.h"
#include "setup/model_setup.h"

namespace smezo {

struct Command {
  CLI::App* app = nullptr;  // the subcommand, owned by the top-level app
  std::function<int()> run;  // called after a successful parse; returns the exit code
};

// A new subcommand with the house settings: defaults shown in --help, unknown options reported.
CLI::App* add_command(CLI::App& smezo, const std::string& name, const std::string& description);

// --model, --tokenizer (unless with_tokenizer is false), --device, --dtype, bound to *o.
CLI::Option* add_model_options(CLI::App* cmd, ModelOpenOptions* o, bool with_tokenizer = true);
// --linear-path auto|wprime|fused (train, bench --shape): how a perturbed linear runs on the GPU.
// --weights packed|dequantized, bound to *weights (ModelOpenOptions::weights).
CLI::Option* add_weights_option(CLI::App* cmd, WeightStorage* weights);
CLI::Option* add_linear_path_option(CLI::App* cmd, LinearPathMode* linear_path);
// --graphs on|off into *graphs
CLI::Option* add_graphs_option(CLI::App* cmd, bool* graphs);

// --adapter DIR (eval, generate, logits): a PEFT adapter folder; --model defaults to its base model.
CLI::Option* add_adapter_option(CLI::App* cmd, CLI::Option* model_option, std::string* adapter);

// --- checks (attach with ->check(...)); their descriptions are the "allowed" part of --help.
CLI::Validator in_range(const ValueRange& range);
// Integers in plain decimal (no 0x, no leading zeros, no overflow).
CLI::Validator integer_at_least(int64_t lo);
CLI::Validator integer_in(int64_t lo, int64_t hi);
CLI::Validator unsigned_integer();  // 0 .. 2^64-1 (seeds)
// Finite real numbers within a float's range (nan, inf and 1e39 are refused everywhere).
CLI::Validator number_at_least(double lo);
CLI::Validator number_in(double lo, double hi);  // [lo, hi]
// Any other condition: ok(v) decides, description says it ("in (0, 1]").
CLI::Validator number_where(std::function<bool(double)> ok, const std::string& description);
// One of the listed words (ignore_case: any capitalisation is accepted).
CLI::Validator one_of(const std::vector<std::string>& choices, bool ignore_case = false);

// An option taking the names of an enum's table (common/enum_names.h); help and errors list them.
template <typename E>
CLI::Option* add_enum_option(CLI::App* cmd, const std::string& name, E* value, const EnumNames<E>& names,
                             const std::string& description) {
  auto set = [value, &names](const std::string& text) { *value = enum_parse(names, text, "value"); };
  return cmd->add_option_function<std::string>(name, set, description)
      ->check(one_of(enum_choices(names)))
      ->default_str(enum_name(names, *value));
}
// The same for an option whose absence means a default the caller states (->default_str).
template <typename E>
CLI::Option* add_optional_enum_option(CLI::App* cmd, const std::string& name, std::optional<E>* value,
                                      const EnumNames<E>& names, const std::string& description) {
  auto set = [value, &names](const std::string& text) { *value = enum_parse(names, text, "value"); };
  return cmd->add_option_function<std::string>(name, set, description)->check(one_of(enum_choices(names)));
}

// The help layout: "--name VALUE   description (default: D; allowed: A)".
std::shared_ptr<CLI::FormatterBase> make_help_formatter();
// Its two parts for one option, unwrapped (also `smezo help --markdown`): the value's label ("N",
// "PATH"; "" for a switch) and "description (default: D; allowed: A)".
std::string option_value_label(const CLI::Option* opt);
std::string option_help_text(const CLI::Option* opt);

}  // namespace smezo
