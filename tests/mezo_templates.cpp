// MeZO's prompt templates and verbalizers (see mezo_templates.h).
#include "mezo_templates.h"

#include "common/check.h"

namespace smezo_test {

using smezo::template_lstrip_whitespace;
using smezo::template_rstrip_whitespace;
using smezo::template_strip_spaces;
using smezo::template_strip_whitespace;

static std::string ascii_lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// --- building an example from MeZO's encode()/verbalize() strings

// From MeZO's encode(sample) and verbalize(sample, c) of each candidate c, split as templates.h says.
static TaskExample make_example(const std::string& encoded,
                                const std::vector<std::string>& verbalized, int gold,
                                const char* task) {
  SMEZO_REQUIRE(gold >= 0 && gold < static_cast<int>(verbalized.size()),
                "%s: label index %d is not one of the %zu candidates of the verbalizer", task,
                gold, verbalized.size());
  TaskExample ex;
  std::string context = template_strip_spaces(encoded);
  for (const std::string& v : verbalized) {
    std::string full = template_strip_spaces(v);
    // verbalize() is encode() + label, so the stripped context is a prefix of it.
    SMEZO_REQUIRE(full.compare(0, context.size(), context) == 0,
                  "%s: internal template error: verbalized text does not start with the prompt",
                  task);
    ex.contexts.push_back(context);
    ex.options.push_back(full.substr(context.size()));
  }
  ex.gold = gold;
  return ex;
}

// --- templates

TaskExample template_sst2(const std::string& sentence, int label) {
  static const char* verbalizer[] = {"terrible", "great"};
  SMEZO_REQUIRE(label == 0 || label == 1, "sst2: label %d is not in the verbalizer {0, 1}", label);
  std::string text = template_strip_whitespace(sentence);
  std::string encoded = text + " It was";
  std::vector<std::string> v;
  for (const char* w : verbalizer) v.push_back(text + " It was " + w);
  return make_example(encoded, v, label, "sst2");
}

TaskExample template_rte(const std::string& premise, const std::string& hypothesis, int label) {
  static const char* verbalizer[] = {"Yes", "No"};
  std::string encoded =
      premise + "\nDoes this mean that \"" + hypothesis + "\" is true? Yes or No?\n";
  std::vector<std::string> v;
  for (const char* w : verbalizer) v.push_back(encoded + w);
  return make_example(encoded, v, label, "rte");
}

TaskExample template_cb(const std::string& premise, const std::string& hypothesis, int label) {
  static const char* verbalizer[] = {"Yes", "No", "Maybe"};
  std::string encoded = "Suppose " + premise + " Can we infer that \"" + hypothesis +
                        "\"? Yes, No, or Maybe?\n";
  std::vector<std::string> v;
  for (const char* w : verbalizer) v.push_back(encoded + w);
  return make_example(encoded, v, label, "cb");
}

TaskExample template_boolq(const std::string& passage, const std::string& question, bool answer) {
  SMEZO_REQUIRE(!question.empty(), "boolq: empty question");
  std::string q = question;
  if (q.back() != '?') q += "?";
  if (q[0] >= 'a' && q[0] <= 'z') q[0] = static_cast<char>(q[0] - 'a' + 'A');
  std::string encoded = passage + " " + q + "\n";
  std::vector<std::string> v = {encoded + "Yes", encoded + "No"};
  return make_example(encoded, v, answer ? 0 : 1, "boolq");
}

TaskExample template_wic(const std::string& word, const std::string& sentence1,
                         const std::string& sentence2, bool label) {
  std::string encoded = "Does the word \"" + word +
                        "\" have the same meaning in these two sentences? Yes, No?\n" +
                        sentence1 + "\n" + sentence2 + "\n";
  std::vector<std::string> v = {encoded + "No", encoded + "Yes"};
  return make_example(encoded, v, label ? 1 : 0, "wic");
}

TaskExample template_multirc(const std::string& paragraph, const std::string& question,
                             const std::string& answer, int label) {
  std::string encoded = paragraph + "\nQuestion: " + question + "\nI found this answer \"" +
                        answer + "\". Is that correct? Yes or No?\n";
  std::vector<std::string> v = {encoded + "No", encoded + "Yes"};
  return make_example(encoded, v, label, "multirc");
}

// MeZO's CopaTemplate.capitalize with capitalization "correct".
static std::string copa_capitalize(const std::string& choice) {
  size_t sp = choice.find(' ');
  std::string first = choice.substr(0, sp);
  if (first == "I") return choice;
  return ascii_lower(first) + (sp == std::string::npos ? "" : choice.substr(sp));
}

TaskExample template_copa(const std::string& premise, const std::string& choice1,
                          const std::string& choice2, const std::string& question, int label) {
  const char* conj = nullptr;
  if (question == "effect") conj = " so ";
  else if (question == "cause") conj = " because ";
  SMEZO_REQUIRE(conj != nullptr, "copa: question \"%s\" is neither \"cause\" nor \"effect\"",
                question.c_str());
  std::string p = template_rstrip_whitespace(premise);
  if (!p.empty() && p.back() == '.') p.pop_back();
  std::string encoded = p + conj;
  std::vector<std::string> v = {encoded + copa_capitalize(choice1),
                                encoded + copa_capitalize(choice2)};
  return make_example(encoded, v, label, "copa");
}

}  // namespace smezo_test
