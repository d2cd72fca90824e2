// Evaluating generation examples (templates.h: one candidate, contexts[0] the prompt, references the
// answers): greedy decoding under a probe, scored by SQuAD exact match and token F1 (text_metrics.h).
// The prompt is the example's prompt tokens ([BOS,] prompt, cut from the left to fit max_len).
// Decoding appends the argmax (the first of equal logits) and stops at BOS or EOS, after
// max_new_tokens, at max_seq_len, or once the text contains a stop string (cut before it). A token's
// text is Tokenizer::decode_piece after the token before it, as `smezo generate` streams it.
// Decoding uses the key/value cache (Model::forward_cached), one slot per example: the prompts run
// once, packed to fit the workspace, then one token per unfinished sequence a round. A probe pair's
// halves decode as two single probes (their sequences diverge). Against a full re-run per token the
// logits differ by float rounding only (other GEMM row blocks), so a greedy token can change only
// on a near-tie (tests/test_generation_cache.cpp).
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

// Throws naming `split` unless each example has one candidate with a completion and a reference.
void check_generation_examples(const std::vector<TaskExample>& examples, const std::string& split);

// Each prompt's greedy continuation, out[half][example]; grows the KV cache as needed.
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

// EM and F1 of the null-probe generations over `set` (set[i] from examples[i]); texts: each output.
GenerationScore evaluate_generation(Model& model, const Tokenizer& tokenizer, const std::vector<EncodedExample>& set,
                                    const std::vector<TaskExample>& examples, const GenerationLimits& limits,
                                    int64_t batch_examples, std::vector<std::string>* texts = nullptr);

}  // namespace smezo
