// The CLI's shared pieces: subcommand settings, model options, option checks, help layout.
#include "cli/cli.h"

#include <cctype>
#include <cerrno>
#include <cfloat>
#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <utility>

#include "common/check.h"

namespace smezo {

namespace {

// Plain decimal integer: optional '-', then "0" or digits without a leading zero.
bool parse_decimal(const std::string& text, bool allow_negative, long double* out) {
  size_t i = 0;
  if (allow_negative && !text.empty() && text[0] == '-') i = 1;
  if (i >= text.size()) return false;
  if (text[i] == '0' && text.size() > i + 1) return false;
  for (size_t j = i; j < text.size(); j++)
    if (text[j] < '0' || text[j] > '9') return false;
  *out = std::strtold(text.c_str(), nullptr);
  return true;
}

// A finite real number (no hex floats, no "nan"/"inf") within float range (float fields: 1e39 -> inf).
bool parse_finite(const std::string& text, double* out) {
  if (text.empty() || text.find_first_of("xXnN") != std::string::npos) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !(std::fabs(v) <= FLT_MAX)) return false;
  *out = v;
  return true;
}

// description: "integer >= 1" (ValueRange::describe)
CLI::Validator integer_check(long double lo, long double hi, const std::string& description) {
  return CLI::Validator(
      [lo, hi, description](std::string& text) -> std::string {
        long double v = 0;
        if (!parse_decimal(text, lo < 0, &v)) return "'" + text + "' is not an " + description + " in plain decimal";
        if (v < lo || v > hi) return "must be an " + description + ", got " + text;
        return "";
      },
      description);
}

CLI::Validator number_check(std::function<bool(double)> ok, const std::string& description) {
  return CLI::Validator(
      [ok, description](std::string& text) -> std::string {
        double v = 0;
        if (!parse_finite(text, &v)) return "'" + text + "' is not a finite number (|x| <= 3.4e38)";
        if (!ok(v)) return "must be " + description + ", got " + text;
        return "";
      },
      description);
}

std::string join(const std::vector<std::string>& words, const char* sep) {
  std::string out;
  for (size_t i = 0; i < words.size(); i++) out += (i ? sep : "") + words[i];
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

CLI::App* add_command(CLI::App& smezo, const std::string& name, const std::string& description) {
  CLI::App* cmd = smezo.add_subcommand(name, description);
  cmd->group("Commands");
  cmd->allow_extras();  // main() names the first unknown argument in its error
  cmd->option_defaults()->always_capture_default();
  cmd->footer("Every option is --name VALUE or --name=VALUE.");
  return cmd;
}

CLI::Option* add_model_options(CLI::App* cmd, ModelOpenOptions* o, bool with_tokenizer) {
  CLI::Option* model = cmd->add_option("--model", o->model_path,
                                       "a Hugging Face model directory (config.json + safetensors), a LLaMA "
                                       "GGUF file or a llama2.c .bin")
                           ->type_name("PATH")
                           ->default_str("the bundled stories260K");
  if (with_tokenizer)
    cmd->add_option("--tokenizer", o->tokenizer_path,
                    "the tokenizer: a sentencepiece .model, a tokenizer.json, a Hugging Face directory or a "
                    "GGUF file")
        ->type_name("PATH")
        ->default_str("the model's own: a GGUF's metadata, the directory's tokenizer files, tokenizer.model "
                      "beside a .bin; the bundled one for stories260K");
  add_enum_option(cmd, "--device", &o->device, device_names(), "where the model runs");
  add_optional_enum_option(cmd, "--dtype", &o->dtype, dtype_option_names(), "how the weights are stored (the CPU "
                           "stores f32 only)")
      ->default_str("cpu: f32, cuda: bf16");
  return model;
}

CLI::Option* add_weights_option(CLI::App* cmd, WeightStorage* weights) {
  return add_enum_option(cmd, "--weights", weights, weight_storage_names(),
                         "how a GGUF's block-quantised weights (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) are held: "
                         "dequantized to the storage dtype at load, or packed, kept in the file's blocks and dequantised "
                         "row block by row block as each linear and the embedding read them (the same values, a "
                         "quarter to an eighth of the memory). packed holds frozen weights only: for --tune "
                         "lora|prefix|scales and for eval/generate; full-weight MeZO/S-MeZO updates every weight and "
                         "needs dequantized. auto: packed unless the run updates the weights (train --tune full)");
}

CLI::Option* add_linear_path_option(CLI::App* cmd, LinearPathMode* linear_path) {
  return add_enum_option(cmd, "--linear-path", linear_path, linear_mode_names(),
                         "how a perturbed linear runs on the GPU: wprime writes W' = W + eps*m*z to scratch and "
                         "multiplies with cuBLAS; fused forms W' tile by tile in shared memory and multiplies there "
                         "(W' never written; tensor cores for f16/bf16, FMAs for f32); auto takes fused only where "
                         "a measured crossover table says it is faster, and no GPU has measured it yet, so auto is "
                         "wprime. The CPU has one path: fused is refused there");
}

CLI::Option* add_graphs_option(CLI::App* cmd, bool* graphs) {
  return cmd->add_option_function<std::string>("--graphs", [graphs](const std::string& v) { *graphs = v == "on"; },
                                               "on: each forward pass runs as a CUDA graph (captured anew, the "
                                               "shape's executable graph updated and launched; the first pass of "
                                               "each shape runs uncaptured); the same results as off bit for bit. "
                                               "Off by default until a GPU has timed it; refused on the CPU, with "
                                               "--pipeline-stages and under MPI")
      ->check(one_of({"on", "off"}))
      ->default_str("off");
}

CLI::Option* add_adapter_option(CLI::App* cmd, CLI::Option* model_option, std::string* adapter) {
  model_option->default_str("with --adapter its base_model_name_or_path, else the bundled stories260K");
  return cmd->add_option("--adapter", *adapter, "a PEFT adapter folder applied to the model: LoRA or prefix "
                                                "(PREFIX_TUNING), as `smezo train --tune lora|prefix` writes its "
                                                "checkpoint/")
      ->type_name("DIR")
      ->default_str("none");
}

CLI::Validator in_range(const ValueRange& r) {
  if (!r.integer) return number_check([r](double v) { return r.contains(v); }, r.describe());
  // the int64 fields' own bounds where the range has none
  return integer_check(std::isinf(r.lo) ? INT64_MIN : r.lo, std::isinf(r.hi) ? INT64_MAX : r.hi, r.describe());
}

CLI::Validator integer_at_least(int64_t lo) { return in_range(ValueRange::integers_from(static_cast<double>(lo))); }

CLI::Validator integer_in(int64_t lo, int64_t hi) {
  return in_range({true, static_cast<double>(lo), static_cast<double>(hi)});
}

CLI::Validator unsigned_integer() {
  return integer_check(0.0L, static_cast<long double>(UINT64_MAX), "integer in [0, 2^64)");
}

CLI::Validator number_at_least(double lo) { return in_range(ValueRange::at_least(lo)); }

CLI::Validator number_in(double lo, double hi) { return in_range({false, lo, hi}); }

CLI::Validator number_where(std::function<bool(double)> ok, const std::string& description) {
  return number_check(std::move(ok), description);
}

CLI::Validator one_of(const std::vector<std::string>& choices, bool ignore_case) {
  const std::string listed = join(choices, ", ");
  return CLI::Validator(
      [choices, ignore_case, listed](std::string& text) -> std::string {
        for (const std::string& c : choices)
          if (text == c || (ignore_case && lower(text) == lower(c))) return "";
        return "'" + text + "' is not one of " + listed;
      },
      "one of " + listed);
}

// --- help layout

namespace {

// Splits "TYPE:check 1:check 2" (CLI11's type name followed by the checks' descriptions).
std::vector<std::string> split_type_name(const std::string& full) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(full);
  while (std::getline(in, part, ':')) parts.push_back(part);
  return parts;
}

std::string wrap(const std::string& text, size_t width) {
  std::string out, line, word;
  std::istringstream in(text);
  while (in >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line;
}

class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() {
    column_width(30);
    label("OPTIONS", "OPTIONS");
  }

  std::string make_description(const CLI::App* app) const override {
    const std::string desc = app->get_description();
    return desc.empty() ? "" : wrap(desc, 100) + "\n";
  }

  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true), wrap(sub->get_description(), 100 - get_column_width()),
                             get_column_width());
    return out.str();
  }

  std::string make_option_opts(const CLI::Option* opt) const override {
    const std::string label = option_value_label(opt);
    return label.empty() ? "" : " " + label;
  }

  std::string make_option_desc(const CLI::Option* opt) const override {
    return wrap(option_help_text(opt), 100 - get_column_width());
  }
};

}  // namespace

std::string option_value_label(const CLI::Option* opt) {
  if (opt->get_expected_max() == 0) return "";  // a switch
  const std::string full = opt->get_type_name();
  const std::vector<std::string> parts = split_type_name(full);
  std::string label = parts.empty() ? "VALUE" : parts[0];
  if (label == "INT" || label == "UINT") label = "N";
  if (label == "FLOAT") label = "X";
  if (label == "TEXT" && full.find(":one of ") != std::string::npos) label = "NAME";
  return label;
}

std::string option_help_text(const CLI::Option* opt) {
  std::string text = opt->get_description();
  std::vector<std::string> facts;
  if (opt->get_required()) facts.push_back("required");
  else if (opt->get_expected_max() != 0 && !opt->get_default_str().empty())
    facts.push_back("default: " + opt->get_default_str());
  const std::vector<std::string> parts = split_type_name(opt->get_type_name());
  std::vector<std::string> checks;
  for (size_t i = 1; i < parts.size(); i++)
    if (!parts[i].empty()) checks.push_back(parts[i]);
  if (!checks.empty()) facts.push_back("allowed: " + join(checks, ", "));
  if (!opt->get_excludes().empty()) facts.push_back("not with " + (*opt->get_excludes().begin())->get_name());
  if (!facts.empty()) text += " (" + join(facts, "; ") + ")";
  return text;
}

std::shared_ptr<CLI::FormatterBase> make_help_formatter() { return std::make_shared<HelpFormatter>(); }

}  // namespace smezo
