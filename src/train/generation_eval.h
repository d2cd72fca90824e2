// Evaluating generation examples (templates.h: one candidate, contexts[0] the prompt,
// references the answers): greedy decoding from each prompt under a probe, scored by SQuAD
// exact match and token F1 (tasks/text_metrics.h).
//
// The prompt is the encoded example's own prompt tokens (task_encode.h: [BOS,] prompt, cut
// from the left to fit max_len), the tokens before its option. Decoding appends the argmax
// token (the first of equal logits, as generate.h's greedy sampling) and stops at BOS or EOS,
// after max_new_tokens tokens, at the model's max_seq_len, or as soon as the generated text
// contains a stop string; the text is cut before that stop string. The text of a token is
// Tokenizer::decode_piece after the token before it, as `smezo generate` streams it.
//
// Decoding uses the model's key/value cache (Model::forward_cached), one slot per example of
// the call: the prompts run once, packed into runs that fit the workspace, then each round one
// token per unfinished sequence. A probe pair's halves are decoded as two single probes (the
// halves' sequences diverge). Against re-running the whole sequence for every token (the first
// version) the logits differ by float rounding only (other GEMM row blocks), so a greedy token
// can change only where two logits tie within that rounding: not seen on the tests
// (tests/test_generation_cache.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"
#include "tasks/task_encode.h"
#include "tokenizer/tokenizer.h"

namespace smezo {

struct GenerationLimits {
  int64_t max_new_tokens = 32;
  std::vector<std::string> stop;  // cut the text at the first of these; none: decode to the limit
};

// Checks that the examples of one split (named in the error, e.g. "dev") are generation
// examples: one candidate with a non-empty completion, and at least one reference.
void check_generation_examples(const std::vector<TaskExample>& examples, const std::string& split);

// The greedy continuation of every example's prompt under each probe: out[half][example],
// one half per probe_halves (a pair: +, then -). Sizes the model's key/value cache for
// examples.size() sequences of the longest prompt plus limits.max_new_tokens (it only grows).
std::vector<std::vector<std::string>> greedy_generations(Model& model, const Tokenizer& tokenizer,
                                                         const std::vector<const EncodedExample*>& examples,
                                                         const std::vector<Probe>& probes,
                                                         const GenerationLimits& limits);

// Means over examples of the best exact match and token F1 against each one's references.
struct GenerationScore {
  double exact_match = 0, f1 = 0;
};
GenerationScore score_generations(const std::vector<std::string>& texts,
                                  const std::vector<const std::vector<std::string>*>& references);

// Exact match and F1 of the null-probe generations over `set`, whose references are those
// of examples[i] for set[i] (examples: the TaskExamples set was encoded from, in order), in
// batches of batch_examples sequences. texts: when given, receives each example's generated
// text, in order (smezo eval --examples-out).
GenerationScore evaluate_generation(Model& model, const Tokenizer& tokenizer, const std::vector<EncodedExample>& set,
                                    const std::vector<TaskExample>& examples, const GenerationLimits& limits,
                                    int64_t batch_examples, std::vector<std::string>* texts = nullptr);

}  // namespace smezo
