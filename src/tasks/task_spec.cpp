// Task specs: parsing, templates, record -> example. See task_spec.h for the format.
#include "tasks/task_spec.h"

#include <set>
#include <sstream>

#include "common/check.h"
#include "formats/json_read.h"

namespace smezo {

using nlohmann::json;

// --- filters

namespace {

// MeZO's CopaTemplate.capitalize with capitalization "correct" (ASCII lower-casing).
std::string lower_first_word(const std::string& s) {
  size_t sp = s.find(' ');
  std::string first = s.substr(0, sp);
  if (first == "I") return s;
  for (char& c : first)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return first + (sp == std::string::npos ? "" : s.substr(sp));
}

const char* const kFilters[] = {"strip", "rstrip", "capitalize_first", "ensure_question_mark",
                                "drop_final_period", "lower_first_word"};

struct Where {  // a record, for messages
  const DataFile& file;
  const DataRow& row;
  std::string at() const {
    return format_string("%s:%lld:", printable(file.path).c_str(), static_cast<long long>(row.line));
  }
};

std::string apply_filter(const TaskSpec& spec, const std::string& filter, const std::string& text,
                         const std::string& field, const Where& w) {
  if (filter == "strip") return template_strip_whitespace(text);
  if (filter == "rstrip") return template_rstrip_whitespace(text);
  if (filter == "capitalize_first") {
    std::string t = text;
    if (!t.empty() && t[0] >= 'a' && t[0] <= 'z') t[0] = static_cast<char>(t[0] - 'a' + 'A');
    return t;
  }
  if (filter == "ensure_question_mark") return !text.empty() && text.back() == '?' ? text : text + "?";
  if (filter == "drop_final_period") return !text.empty() && text.back() == '.' ? text.substr(0, text.size() - 1) : text;
  if (filter == "lower_first_word") return lower_first_word(text);
  // map:NAME (checked when the spec was read)
  const auto& map = spec.maps.at(filter.substr(4));
  auto it = map.find(text);
  if (it != map.end()) return it->second;
  std::string known;
  for (const auto& [k, v] : map) known += (known.empty() ? "\"" : ", \"") + printable(k, 40) + "\"";
  throw_error("%s field \"%s\": value \"%s\" is not in the spec's map \"%s\" (known: %s)", w.at().c_str(),
              printable(field).c_str(), printable(text, 80).c_str(), printable(filter.substr(4)).c_str(),
              known.c_str());
}

const json& record_field(const std::string& field, const Where& w) {
  auto it = w.row.fields.find(field);
  SMEZO_REQUIRE(it != w.row.fields.end(), "%s missing field \"%s\"", w.at().c_str(), printable(field).c_str());
  return *it;
}

std::string record_string(const std::string& field, const Where& w) {
  const json& v = record_field(field, w);
  SMEZO_REQUIRE(v.is_string(), "%s field \"%s\" should be a string, got %s", w.at().c_str(),
                printable(field).c_str(), data_value_brief(v, w.file.format).c_str());
  return v.get<std::string>();
}

std::vector<std::string> record_strings(const std::string& field, const Where& w, bool list_only) {
  const json& v = record_field(field, w);
  if (v.is_string() && !list_only) return {v.get<std::string>()};
  bool ok = v.is_array() && !v.empty();
  for (const json& e : v) ok = ok && e.is_string();
  SMEZO_REQUIRE(ok, "%s field \"%s\" should be %sa non-empty list of strings, got %s", w.at().c_str(),
                printable(field).c_str(), list_only ? "" : "a string or ", data_value_brief(v, w.file.format).c_str());
  return v.get<std::vector<std::string>>();
}

std::string render(const TaskSpec& spec, const SpecTemplate& t, const Where& w) {
  std::string out;
  for (const SpecTemplatePiece& p : t.pieces) {
    if (p.field.empty()) {
      out += p.literal;
      continue;
    }
    std::string text = record_string(p.field, w);
    for (const std::string& f : p.filters) text = apply_filter(spec, f, text, p.field, w);
    out += text;
  }
  return out;
}

// --- parsing a spec

SpecTemplate parse_template(const std::string& text, const TaskSpec& spec, const char* key) {
  SpecTemplate t;
  t.text = text;
  std::string literal;
  auto bad = [&](const char* why) {
    throw_error("%s: \"%s\": %s in template \"%s\" ---> HINT: {field} inserts a field, {field|filter} filters "
                "it, {{ and }} are literal braces", spec.origin.c_str(), key, why, printable(text, 80).c_str());
  };
  for (size_t i = 0; i < text.size(); i++) {
    const char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      literal += c;
      i++;
    } else if (c == '}') {
      bad("a single '}'");
    } else if (c == '{') {
      size_t close = text.find('}', i);
      if (close == std::string::npos) bad("an unclosed '{'");
      if (!literal.empty()) t.pieces.push_back({literal, "", {}});
      literal.clear();
      SpecTemplatePiece p;
      std::stringstream parts(text.substr(i + 1, close - i - 1));
      std::string part;
      std::getline(parts, p.field, '|');
      if (p.field.empty() || p.field.find('{') != std::string::npos) bad("an empty or malformed {field}");
      while (std::getline(parts, part, '|')) p.filters.push_back(part);
      t.pieces.push_back(p);
      i = close;
    } else {
      literal += c;
    }
  }
  if (!literal.empty()) t.pieces.push_back({literal, "", {}});
  return t;
}

void check_filters(const TaskSpec& spec, const SpecTemplate& t) {
  for (const SpecTemplatePiece& p : t.pieces)
    for (const std::string& f : p.filters) {
      bool known = f.rfind("map:", 0) == 0 && spec.maps.count(f.substr(4));
      for (const char* k : kFilters) known = known || f == k;
      SMEZO_REQUIRE(known, "%s: unknown filter \"%s\" in template \"%s\" (filters: strip, rstrip, capitalize_first, "
                    "ensure_question_mark, drop_final_period, lower_first_word, map:NAME with NAME in \"maps\")",
                    spec.origin.c_str(), printable(f, 40).c_str(), printable(t.text, 80).c_str());
    }
}

// The first two positions holding the same text, or {0, 0} when all differ.
std::pair<size_t, size_t> first_repeat(const std::vector<std::string>& texts) {
  std::map<std::string, size_t> seen;  // a spec may have thousands of candidates: no pairwise loop
  for (size_t i = 0; i < texts.size(); i++) {
    const auto [it, fresh] = seen.emplace(texts[i], i);
    if (!fresh) return {it->second, i};
  }
  return {0, 0};
}

// Equal label values make a candidate unreachable; trailing spaces (stripped) make no other one.
void check_candidates_differ(const TaskSpec& s) {
  std::vector<std::string> texts;
  for (const SpecTemplate& c : s.candidates) texts.push_back(c.text.substr(0, c.text.find_last_not_of(' ') + 1));
  const auto [a, b] = first_repeat(texts);
  SMEZO_REQUIRE(a == b, "%s: \"candidates\" %zu and %zu are the same text \"%s\": the model cannot tell them "
                "apart ---> HINT: give each candidate its own words", s.origin.c_str(), a, b,
                printable(texts[b], 80).c_str());
  const auto [x, y] = first_repeat(s.label_values);
  SMEZO_REQUIRE(x == y, "%s: \"label.values\" %zu and %zu are both \"%s\": a label cannot name one of the two "
                "candidates ---> HINT: give each candidate its own label value", s.origin.c_str(), x, y,
                printable(s.label_values[y], 80).c_str());
}

const json& spec_get(const json& j, const char* key, const TaskSpec& spec, bool (json::*is)() const,
                     const char* type) {
  auto it = j.find(key);
  SMEZO_REQUIRE(it != j.end(), "%s: missing \"%s\" (%s)", spec.origin.c_str(), key, type);
  SMEZO_REQUIRE(((*it).*is)(), "%s: \"%s\" should be %s, got %s", spec.origin.c_str(), key, type,
                json_brief(*it).c_str());
  return *it;
}

void parse_classification(const json& j, TaskSpec* s) {
  const json& cands = spec_get(j, "candidates", *s, &json::is_structured, "a list of templates or {\"field\": F}");
  if (cands.is_object()) {
    s->candidates_field = spec_get(cands, "field", *s, &json::is_string, "a field name").get<std::string>();
    if (cands.contains("prefix"))
      s->candidates_prefix = spec_get(cands, "prefix", *s, &json::is_string, "a string").get<std::string>();
    for (const auto& [k, v] : cands.items())
      SMEZO_REQUIRE(k == "field" || k == "prefix", "%s: unknown key \"candidates.%s\"", s->origin.c_str(),
                    printable(k).c_str());
  } else {
    SMEZO_REQUIRE(cands.size() >= 2, "%s: \"candidates\" should list at least 2 templates", s->origin.c_str());
    for (const json& c : cands) {
      SMEZO_REQUIRE(c.is_string(), "%s: \"candidates\" should hold strings, got %s", s->origin.c_str(),
                    json_brief(c).c_str());
      s->candidates.push_back(parse_template(c.get<std::string>(), *s, "candidates"));
    }
  }
  const json& label = spec_get(j, "label", *s, &json::is_object, "{\"field\": F, \"values\": [...]}");
  s->label_field = spec_get(label, "field", *s, &json::is_string, "a field name").get<std::string>();
  for (const auto& [k, v] : label.items())
    SMEZO_REQUIRE(k == "field" || k == "values", "%s: unknown key \"label.%s\"", s->origin.c_str(),
                  printable(k).c_str());
  if (label.contains("values")) {
    const json& values = spec_get(label, "values", *s, &json::is_array, "a list, one label value per candidate");
    for (const json& v : values) {
      SMEZO_REQUIRE(v.is_string() || v.is_number_integer() || v.is_boolean(), "%s: \"label.values\" should hold "
                    "strings, integers or booleans (a label is matched by its text), got %s", s->origin.c_str(),
                    json_brief(v).c_str());
      s->label_values.push_back(task_spec_value_text(v));
    }
    SMEZO_REQUIRE(s->candidates_field.empty() && values.size() == s->candidates.size(),
                  "%s: \"label.values\" lists %zu values for %zu fixed candidates (one per candidate)",
                  s->origin.c_str(), values.size(), s->candidates.size());
  }
  check_candidates_differ(*s);
  if (j.contains("train_as_classification"))
    s->train_as_classification =
        spec_get(j, "train_as_classification", *s, &json::is_boolean, "true or false").get<bool>();
}

void parse_generation(const json& j, TaskSpec* s) {
  s->completion_field = spec_get(j, "completion_field", *s, &json::is_string, "a field name").get<std::string>();
  if (j.contains("completion_prefix"))
    s->completion_prefix = spec_get(j, "completion_prefix", *s, &json::is_string, "a string").get<std::string>();
  if (j.contains("max_new_tokens")) {
    const json& m = spec_get(j, "max_new_tokens", *s, &json::is_number_integer, "an integer >= 1");
    SMEZO_REQUIRE(m.get<int64_t>() >= 1, "%s: \"max_new_tokens\" should be >= 1, got %s", s->origin.c_str(),
                  json_brief(m).c_str());
    // bounded before it sizes anything: decoding also stops at the model's context
    SMEZO_REQUIRE(m.get<int64_t>() <= kSpecMaxNewTokens, "%s: \"max_new_tokens\" %s is more than any model's "
                  "context (at most %lld)", s->origin.c_str(), json_brief(m).c_str(), (long long)kSpecMaxNewTokens);
    s->max_new_tokens = m.get<int64_t>();
  }
  if (j.contains("stop")) {
    const json& stop = spec_get(j, "stop", *s, &json::is_array, "a list of strings");
    for (const json& t : stop) {
      SMEZO_REQUIRE(t.is_string() && !t.get<std::string>().empty(), "%s: \"stop\" should hold non-empty strings, "
                    "got %s", s->origin.c_str(), json_brief(t).c_str());
      s->stop.push_back(t.get<std::string>());
    }
  }
  s->train_as_classification = false;
}

const std::set<std::string> kKeys[2] = {
    {"name", "kind", "prompt", "maps", "candidates", "label", "train_as_classification"},
    {"name", "kind", "prompt", "maps", "completion_field", "completion_prefix", "max_new_tokens", "stop"}};

}  // namespace

TaskSpec task_spec_parse(const std::string& json_text, const std::string& origin) {
  TaskSpec s;
  s.origin = printable(origin);
  const size_t nul = json_text.find('\0');  // JSON's parser would stop there and accept what came before
  SMEZO_REQUIRE(nul == std::string::npos, "%s: byte 0x00 (NUL) at offset %zu: a task spec is JSON text, which "
                "holds no NUL bytes", s.origin.c_str(), nul);
  const json j = json_parse_strict(json_text.data(), json_text.data() + json_text.size(), s.origin);
  SMEZO_REQUIRE(j.is_object(), "%s: a task spec is a JSON object, got %s", s.origin.c_str(), json_brief(j).c_str());
  s.name = spec_get(j, "name", s, &json::is_string, "the task's name").get<std::string>();
  SMEZO_REQUIRE(!s.name.empty(), "%s: \"name\" is empty", s.origin.c_str());
  const std::string kind = j.contains("kind") ? spec_get(j, "kind", s, &json::is_string, "a string").get<std::string>()
                                              : "classification";
  SMEZO_REQUIRE(kind == "classification" || kind == "generation",
                "%s: \"kind\" is \"%s\"; expected \"classification\" or \"generation\"", s.origin.c_str(),
                printable(kind, 40).c_str());
  s.kind = kind == "generation" ? SPEC_GENERATION : SPEC_CLASSIFICATION;
  for (const auto& [k, v] : j.items())
    SMEZO_REQUIRE(kKeys[s.kind].count(k), "%s: unknown key \"%s\" for a %s spec", s.origin.c_str(),
                  printable(k, 40).c_str(), kind.c_str());
  if (j.contains("maps")) {
    for (const auto& [name, m] : spec_get(j, "maps", s, &json::is_object, "an object of maps").items()) {
      SMEZO_REQUIRE(m.is_object(), "%s: map \"%s\" should be an object", s.origin.c_str(), printable(name).c_str());
      for (const auto& [from, to] : m.items()) {
        SMEZO_REQUIRE(to.is_string(), "%s: map \"%s\": \"%s\" should map to a string", s.origin.c_str(),
                      printable(name).c_str(), printable(from).c_str());
        s.maps[name][from] = to.get<std::string>();
      }
    }
  }
  s.prompt = parse_template(spec_get(j, "prompt", s, &json::is_string, "a template").get<std::string>(), s, "prompt");
  if (s.kind == SPEC_CLASSIFICATION) parse_classification(j, &s);
  else parse_generation(j, &s);
  check_filters(s, s.prompt);
  for (const SpecTemplate& c : s.candidates) check_filters(s, c);
  return s;
}

TaskSpec task_spec_read(const std::string& path) {
  return task_spec_parse(data_read_file(path, "task spec"), path);
}

std::vector<std::string> task_spec_fields(const TaskSpec& spec) {
  std::vector<std::string> out;
  auto add = [&](const std::string& f) {
    if (!f.empty() && std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  };
  auto add_template = [&](const SpecTemplate& t) {
    for (const SpecTemplatePiece& p : t.pieces) add(p.field);
  };
  add_template(spec.prompt);
  for (const SpecTemplate& c : spec.candidates) add_template(c);
  add(spec.candidates_field);
  add(spec.label_field);
  add(spec.completion_field);
  return out;
}

std::string task_spec_value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return "";
}

// --- record -> example

namespace {

// The candidate in [0, n) a label names as an index (the rule: task_spec.h, "label"); -1 if none.
int64_t label_as_index(const json& v, size_t n) {
  if (const std::optional<int64_t> i = json_number<int64_t>(v))  // -0 too: JSON's "-0" reads as the integer 0
    return *i >= 0 && static_cast<uint64_t>(*i) < n ? *i : -1;
  if (!v.is_string()) return -1;
  const std::string& t = v.get_ref<const std::string&>();
  const bool digits = !t.empty() && t.size() <= 9 && t.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || (t.size() > 1 && t[0] == '0')) return -1;
  const int64_t i = std::stoll(t);
  return i < static_cast<int64_t>(n) ? i : -1;
}

// The per-record option (after the prefix) whose text the label is; -1 if none or fixed candidates.
int64_t label_as_option_text(const TaskSpec& spec, const json& v, const std::vector<std::string>& options) {
  if (spec.candidates_field.empty() || !v.is_string()) return -1;
  for (size_t i = 0; i < options.size(); i++)
    if (spec.candidates_prefix + v.get_ref<const std::string&>() == options[i]) return static_cast<int64_t>(i);
  return -1;
}

[[noreturn]] void throw_label_not_found(const TaskSpec& spec, const json& v, size_t n, const Where& w) {
  std::string expected;
  for (size_t i = 0; i < spec.label_values.size(); i++)
    expected += (i ? ", \"" : "one of \"") + printable(spec.label_values[i], 40) + "\"";
  if (spec.label_values.empty())
    expected = format_string("an index 0..%zu (a number, or its digits as a string)%s", n - 1,
                             spec.candidates_field.empty() ? "" : " or an option's text");
  throw_error("%s label %s is not in the verbalizer of %s (field \"%s\"; expected %s)", w.at().c_str(),
              data_value_brief(v, w.file.format).c_str(), printable(spec.name).c_str(),
              printable(spec.label_field).c_str(), expected.c_str());
}

// The gold candidate, by the "label" rules of task_spec.h.
int gold_index(const TaskSpec& spec, const std::vector<std::string>& options, const Where& w) {
  const json& v = record_field(spec.label_field, w);
  const bool scalar = v.is_string() || v.is_boolean() || v.is_number_integer();
  if (!spec.label_values.empty()) {
    const std::string text = task_spec_value_text(v);
    for (size_t i = 0; i < spec.label_values.size() && scalar; i++)
      if (text == spec.label_values[i]) return static_cast<int>(i);
    throw_label_not_found(spec, v, spec.label_values.size(), w);
  }
  const int64_t by_index = label_as_index(v, options.size()), by_text = label_as_option_text(spec, v, options);
  SMEZO_REQUIRE(by_text < 0 || by_index < 0 || by_text == by_index, "%s label %s in field \"%s\" names two options: "
                "option %lld by its text and option %lld by index ---> HINT: give the gold option's 0-based index "
                "as a JSON number", w.at().c_str(), data_value_brief(v, w.file.format).c_str(),
                printable(spec.label_field).c_str(), static_cast<long long>(by_text), static_cast<long long>(by_index));
  if (by_text >= 0) return static_cast<int>(by_text);
  if (by_index >= 0) return static_cast<int>(by_index);
  throw_label_not_found(spec, v, options.size(), w);
}

// context = prompt stripped of spaces; option = the rest of (prompt + continuation), stripped.
void add_candidate(const std::string& prompt, const std::string& continuation, const char* what, size_t index,
                   const Where& w, TaskExample* ex) {
  const std::string context = template_strip_spaces(prompt);
  const std::string full = template_strip_spaces(prompt + continuation);
  SMEZO_REQUIRE(full.size() > context.size() && full.compare(0, context.size(), context) == 0,
                "%s %s %zu renders empty (nothing to score after the prompt)", w.at().c_str(), what, index);
  ex->contexts.push_back(context);
  ex->options.push_back(full.substr(context.size()));
}

// The spec's fixed candidates were compared when it was read; these are the rendered ones.
void require_options_differ(const TaskSpec& spec, const TaskExample& ex, const Where& w) {
  const auto [a, b] = first_repeat(ex.options);
  if (a == b) return;
  const std::string text = printable(ex.options[b], 80);
  if (!spec.candidates_field.empty())
    throw_error("%s field \"%s\": options %zu and %zu are the same text \"%s\": the model cannot tell them apart",
                w.at().c_str(), printable(spec.candidates_field).c_str(), a, b, text.c_str());
  throw_error("%s candidates %zu and %zu render the same text \"%s\" (templates \"%s\" and \"%s\"): the model "
              "cannot tell them apart", w.at().c_str(), a, b, text.c_str(),
              printable(spec.candidates[a].text, 40).c_str(), printable(spec.candidates[b].text, 40).c_str());
}

}  // namespace

TaskExample task_spec_example(const TaskSpec& spec, const DataFile& file, const DataRow& row) {
  const Where w{file, row};
  TaskExample ex;
  ex.source = format_string("%s:%lld", printable(file.path).c_str(), static_cast<long long>(row.line));
  const std::string prompt = render(spec, spec.prompt, w);
  if (spec.kind == SPEC_GENERATION) {
    ex.references = record_strings(spec.completion_field, w, false);
    for (const std::string& r : ex.references)
      SMEZO_REQUIRE(!template_strip_whitespace(r).empty(), "%s field \"%s\": empty completion", w.at().c_str(),
                    printable(spec.completion_field).c_str());
    add_candidate(prompt, spec.completion_prefix + ex.references[0], "completion", 0, w, &ex);
    ex.gold = 0;
    return ex;
  }
  std::vector<std::string> continuations;
  if (!spec.candidates_field.empty()) {
    for (const std::string& o : record_strings(spec.candidates_field, w, true))
      continuations.push_back(spec.candidates_prefix + o);
    SMEZO_REQUIRE(continuations.size() >= 2, "%s field \"%s\" holds 1 option: a classification needs at least 2 "
                  "(with one, every prediction is right)", w.at().c_str(), printable(spec.candidates_field).c_str());
  }
  for (const SpecTemplate& c : spec.candidates) continuations.push_back(render(spec, c, w));
  ex.gold = gold_index(spec, continuations, w);
  for (size_t i = 0; i < continuations.size(); i++) add_candidate(prompt, continuations[i], "candidate", i, w, &ex);
  require_options_differ(spec, ex, w);
  return ex;
}

std::string task_spec_candidate_name(const TaskSpec& spec, size_t i) {
  if (spec.kind == SPEC_GENERATION)
    return format_string("field \"%s\" (the completion)", printable(spec.completion_field).c_str());
  if (!spec.candidates_field.empty())
    return format_string("field \"%s\", option %zu", printable(spec.candidates_field).c_str(), i);
  return format_string("candidate %zu (template \"%s\")", i,
                       i < spec.candidates.size() ? printable(spec.candidates[i].text, 40).c_str() : "");
}

void task_spec_apply(const TaskSpec& spec, TaskSplits* splits) {
  splits->name = spec.name;
  splits->train_as_classification = spec.train_as_classification;
  splits->generation = spec.kind == SPEC_GENERATION;
  splits->max_new_tokens = spec.max_new_tokens;
  splits->stop = spec.stop;
}

}  // namespace smezo
