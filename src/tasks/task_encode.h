// Encoding task examples into token sequences, as MeZO's utils.encode_prompt does.
//
// For each candidate (context c, option o; see templates.h):
//   prompt  = (icl_prefix + c).lstrip()        MeZO: (demos + "\n\n" + eval_prompt).lstrip()
//   C = encode(c), F = encode(c + o)           (no BOS)
//   * If C is a prefix of F (the normal case: sentencepiece and byte-level BPE do not merge
//     across the space or newline that starts the option), the option tokens are F[|C|:] and
//       tokens = BOS + encode(prompt) + F[|C|:],   option_start = 1 + |encode(prompt)|,
//     where BOS is there only when tokenizer_wants_bos (SmolLM2: none, option_start loses the 1),
//     so candidates with the same context share their prompt tokens exactly.
//     (With the LLaMA-2 tokenizer this equals MeZO's BOS + encode(prompt + o) on every row
//     of the seven tasks, with and without demonstrations; tests check a sample of rows.)
//   * Otherwise the tokenizer merged text across the context/option boundary. We then tokenise
//     the whole string, as MeZO always does: tokens = BOS + encode(prompt + o), and score its
//     last |F| - k tokens, k = the length of the common prefix of C and F. (MeZO scores the last
//     |F| - |C|; counting from the divergence instead keeps the boundary-spanning token, which
//     carries option text, among the option tokens. The prompt tokens may then differ between
//     candidates.) An option that adds no tokens throws.
// Truncation: when tokens exceed max_len, tokens are dropped from the left of the prompt,
// right after BOS (BOS stays at position 0, the option is never cut, as MeZO's left
// truncation with add_bos_token); an option that does not fit in max_len - 1 (max_len without
// BOS) throws. A prompt far longer than max_len (beyond 8 KB and ~32 bytes per token
// kept) is tokenized from a tail of its bytes only, which holds at least twice the tokens
// kept: its last tokens are the whole text's (task_encode.cpp says why), and a 10 MB record
// costs what an 8 KB one does; C and F of a longer context come from its last 8 KB.
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
  int64_t prompt_tokens_cut = 0;  // prompt tokens dropped from the left to fit max_len (of a
                                  // prompt tokenized from a tail: the tail's, fewer than the whole's)
};

struct EncodedExample {
  std::vector<EncodedCandidate> candidates;  // (n_candidates), same order as TaskExample
  int gold = 0;
};

// Errors name the example's record (TaskExample::source) and the candidate, when known.
EncodedExample encode_example(const Tokenizer& tok, const TaskExample& ex, int64_t max_len,
                              const std::string& icl_prefix = "");

// How many tokens option adds after context, as encode_example counts them (they are never
// cut: with BOS they must fit in max_len); throws when it adds none.
int64_t encode_option_tokens(const Tokenizer& tok, const std::string& context, const std::string& option);

// MeZO's in-context demonstrations: each demo's context + gold option, stripped of
// surrounding whitespace, joined by "\n\n" (MeZO's train_sep), the whole stripped, and a final
// "\n\n" so the evaluated example follows directly. Empty for no demos.
std::string build_icl_prefix(const std::vector<TaskExample>& demos);

// How many in-context demonstrations survive left truncation whole. Made once per evaluation
// from the demonstrations given to build_icl_prefix; whole_demos(ex) is the number of
// demonstrations still complete in the most-cut candidate of an example encoded with that
// prefix (all of them when nothing was cut; truncation drops the first ones first). It
// compares text as the tokenizer reads it back (decode(encode(.)), whitespace runs folded),
// so the count does not depend on how tokens fall at the cut.
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
