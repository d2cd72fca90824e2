// Encoding task examples into token sequences, as MeZO's utils.encode_prompt does.
// For each candidate (context c, option o; see templates.h):
//   prompt  = (icl_prefix + c).lstrip()        MeZO: (demos + "\n\n" + eval_prompt).lstrip()
//   C = encode(c), F = encode(c + o)           (no BOS)
//   * C a prefix of F (the normal case: sentencepiece and byte-level BPE do not merge across the
//     space or newline that starts the option): tokens = BOS + encode(prompt) + F[|C|:],
//     option_start = 1 + |encode(prompt)|, BOS only when tokenizer_wants_bos (SmolLM2: none, no 1),
//     so candidates with the same context share their prompt tokens exactly. (With LLaMA-2's
//     tokenizer this equals MeZO's BOS + encode(prompt + o) on every row of the seven tasks.)
//   * Otherwise a token spans the boundary: tokens = BOS + encode(prompt + o), as MeZO always does,
//     scoring its last |F| - k tokens, k = |common prefix of C and F| (MeZO scores |F| - |C|; counting
//     from the divergence keeps the boundary token, which carries option text, among the option
//     tokens). An option that adds no tokens throws.
// Truncation: over max_len, tokens are dropped from the left of the prompt right after BOS (BOS stays
// at 0, the option is never cut: MeZO's left truncation with add_bos_token); an option that does not
// fit in max_len - 1 (max_len without BOS) throws. A prompt far longer than max_len is tokenized from
// a byte tail with the same last tokens, and C and F of a context over 8 KB come from its last 8 KB.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tasks/templates.h"
#include "tokenizer/tokenizer.h"

namespace smezo {

struct EncodedCandidate {
  std::vector<int32_t> tokens;  // (seq_len) [BOS,] prompt tokens, option tokens
  int64_t option_start = 0;     // option tokens are tokens[option_start .. seq_len)
  int64_t prompt_tokens_cut = 0;  // dropped from the left to fit max_len (a tail-tokenized prompt: the tail's)
};

struct EncodedExample {
  std::vector<EncodedCandidate> candidates;  // (n_candidates), same order as TaskExample
  int gold = 0;
};

// Errors name the example's record (TaskExample::source) and the candidate, when known.
EncodedExample encode_example(const Tokenizer& tok, const TaskExample& ex, int64_t max_len,
                              const std::string& icl_prefix = "");

// The tokens option adds after context, as encode_example counts them (never cut); throws if none.
// An option far longer than `limit` tokens is counted from its head alone: then the count, a lower
// bound above limit, comes with *exact false.
int64_t encode_option_tokens(const Tokenizer& tok, const std::string& context, const std::string& option,
                             int64_t limit, bool* exact = nullptr);

// MeZO's demonstrations: each context + gold option stripped, joined by "\n\n", stripped, + "\n\n".
std::string build_icl_prefix(const std::vector<TaskExample>& demos);

// How many demonstrations survive left truncation whole in ex's most-cut candidate (text compared as
// decode(encode(.)) with whitespace folded, so token boundaries at the cut do not matter).
class IclDemoCounter {
 public:
  IclDemoCounter(const Tokenizer& tok, const std::vector<TaskExample>& demos);
  int64_t whole_demos(const EncodedExample& ex) const;

 private:
  const Tokenizer& tok_;
  int64_t n_bos_;                   // 1 when candidates start with BOS
  std::vector<std::string> demos_;  // each demonstration's text, read back and folded
};

}  // namespace smezo
