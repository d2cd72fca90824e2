// Greedy generation under a probe and its EM/F1 score (see generation_eval.h).
#include "train/generation_eval.h"

#include <algorithm>

#include "common/check.h"
#include "tasks/text_metrics.h"
#include "train/generate.h"  // sample_token

namespace smezo {

namespace {

// One example's decoding: its tokens so far, how many its cache slot holds, the text generated.
struct Decoding {
  std::vector<int32_t> tokens;  // (prompt_len + generated) [BOS,] prompt tokens, generated tokens
  int64_t fed = 0;              // tokens[0, fed) are in the key/value cache
  int64_t generated = 0;
  std::string text;
  bool done = false;
};

std::vector<int32_t> prompt_tokens(const EncodedExample& ex) {
  SMEZO_REQUIRE(ex.candidates.size() == 1, "a generation example has one candidate (its prompt and completion), "
                "not %zu", ex.candidates.size());
  const EncodedCandidate& c = ex.candidates[0];
  SMEZO_REQUIRE(c.option_start > 0, "a generation example needs a prompt to continue: this one encodes to none "
                "(no BOS, empty context)");
  return std::vector<int32_t>(c.tokens.begin(), c.tokens.begin() + c.option_start);
}

// Appends `next` to d, or ends it (BOS/EOS, a stop string, the length limits); max_run: the longest.
void advance(Decoding* d, int32_t next, const Tokenizer& tok, const GenerationLimits& limits, int64_t max_run) {
  if (next == tok.bos_id() || next == tok.eos_id()) {
    d->done = true;
    return;
  }
  d->text += tok.decode_piece(d->tokens.back(), next);
  d->tokens.push_back(next);
  d->generated++;
  size_t cut = std::string::npos;
  for (const std::string& s : limits.stop)
    if (!s.empty()) cut = std::min(cut, d->text.find(s));
  if (cut != std::string::npos) {
    d->text.resize(cut);
    d->done = true;
  }
  // a sequence of max_run tokens still gives one more token; a longer one cannot run
  if (d->generated >= limits.max_new_tokens || (int64_t)d->tokens.size() > max_run) d->done = true;
}

int64_t max_run_len(const Model& model) { return model.config().max_seq_len - model.prefix_tokens(); }

// One round under a single probe: uncached tokens through forward_cached; a sequence fully in gets one.
void decode_round(Model& model, const Tokenizer& tok, const Probe& probe, const GenerationLimits& limits,
                  std::vector<Decoding>* ds) {
  const int64_t cap_tokens = model.batch_tokens_capacity(probe), cap_rows = model.batch_logit_rows_capacity(probe);
  const int64_t vocab = model.config().vocab_size;
  std::vector<float> logits;
  size_t i = 0;
  while (true) {
    std::vector<CachedChunk> chunks;
    int64_t used = 0;
    while (i < ds->size() && (int64_t)chunks.size() < cap_rows && used < cap_tokens) {
      Decoding& d = (*ds)[i];
      const int64_t pending = static_cast<int64_t>(d.tokens.size()) - d.fed;
      if (d.done) {
        i++;
        continue;
      }
      const int64_t take = std::min(pending, cap_tokens - used);
      chunks.push_back(CachedChunk{static_cast<int64_t>(i), d.fed,
                                   std::vector<int32_t>(d.tokens.begin() + d.fed, d.tokens.begin() + d.fed + take)});
      used += take;
      if (take == pending) i++;  // else the rest of its prompt opens the next run
    }
    if (chunks.empty()) return;
    model.forward_cached(chunks, probe, &logits);
    for (size_t m = 0; m < chunks.size(); m++) {
      Decoding& d = (*ds)[static_cast<size_t>(chunks[m].slot)];
      d.fed += static_cast<int64_t>(chunks[m].tokens.size());
      if (d.fed < static_cast<int64_t>(d.tokens.size())) continue;  // its prompt goes on
      uint64_t unused_rng = 0;  // temperature 0: argmax
      const int32_t next = sample_token(logits.data() + m * vocab, vocab, 0.0f, 1.0f, &unused_rng);
      advance(&d, next, tok, limits, max_run_len(model));
    }
  }
}

// Cache rows per slot: the tokens ever fed, rounded up to a power of two (the cache only grows).
int64_t cache_rows_for(const Model& model, int64_t longest, int64_t max_new_tokens) {
  const int64_t need = std::min(longest + max_new_tokens - 1, max_run_len(model));
  int64_t rows = 1;
  while (rows < need) rows *= 2;
  return std::min(rows, max_run_len(model));
}

std::vector<std::string> decode_under(Model& model, const Tokenizer& tok, const std::vector<const EncodedExample*>& xs,
                                      const Probe& probe, const GenerationLimits& limits) {
  std::vector<Decoding> ds(xs.size());
  int64_t longest = 0;
  for (size_t e = 0; e < xs.size(); e++) {
    ds[e].tokens = prompt_tokens(*xs[e]);
    ds[e].done = limits.max_new_tokens <= 0 || (int64_t)ds[e].tokens.size() > max_run_len(model);
    if (!ds[e].done) longest = std::max(longest, (int64_t)ds[e].tokens.size());
  }
  if (longest == 0) return std::vector<std::string>(xs.size());
  // one slot per example: the examples of one call (an evaluation batch, a training minibatch)
  model.enable_kv_cache(cache_rows_for(model, longest, limits.max_new_tokens), static_cast<int64_t>(xs.size()));
  while (std::any_of(ds.begin(), ds.end(), [](const Decoding& d) { return !d.done; }))
    decode_round(model, tok, probe, limits, &ds);
  std::vector<std::string> texts;
  for (const Decoding& d : ds) texts.push_back(d.text);
  return texts;
}

}  // namespace

void check_generation_examples(const std::vector<TaskExample>& examples, const std::string& split) {
  for (size_t i = 0; i < examples.size(); i++) {
    const TaskExample& x = examples[i];
    SMEZO_REQUIRE(x.contexts.size() == 1 && x.options.size() == 1, "generation task: %s example %zu has %zu "
                  "candidates; a generation example has one (its prompt and completion)", split.c_str(), i,
                  x.contexts.size());
    SMEZO_REQUIRE(!x.options[0].empty(), "generation task: %s example %zu has an empty completion", split.c_str(), i);
    SMEZO_REQUIRE(!x.references.empty(), "generation task: %s example %zu has no reference answer to score "
                  "against", split.c_str(), i);
  }
}

std::vector<std::vector<std::string>> greedy_generations(Model& model, const Tokenizer& tokenizer,
                                                         const std::vector<const EncodedExample*>& examples,
                                                         const std::vector<Probe>& probes,
                                                         const GenerationLimits& limits) {
  std::vector<std::vector<std::string>> out;
  for (const Probe& p : probes) {
    if (!p.pair) {
      out.push_back(decode_under(model, tokenizer, examples, p, limits));
      continue;
    }
    out.push_back(decode_under(model, tokenizer, examples, half_probe(p, +1), limits));
    out.push_back(decode_under(model, tokenizer, examples, half_probe(p, -1), limits));
  }
  return out;
}

GenerationScore score_generations(const std::vector<std::string>& texts,
                                  const std::vector<const std::vector<std::string>*>& references) {
  SMEZO_REQUIRE(!texts.empty() && texts.size() == references.size(), "generation scores: %zu texts for %zu "
                "reference lists", texts.size(), references.size());
  GenerationScore s;
  for (size_t e = 0; e < texts.size(); e++) {
    s.exact_match += max_exact_match(texts[e], *references[e]);
    s.f1 += max_token_f1(texts[e], *references[e]);
  }
  s.exact_match /= static_cast<double>(texts.size());
  s.f1 /= static_cast<double>(texts.size());
  return s;
}

GenerationScore evaluate_generation(Model& model, const Tokenizer& tokenizer, const std::vector<EncodedExample>& set,
                                    const std::vector<TaskExample>& examples, const GenerationLimits& limits,
                                    int64_t batch_examples, std::vector<std::string>* texts_out) {
  SMEZO_REQUIRE(!set.empty() && set.size() <= examples.size(), "generation evaluation of %zu encoded examples "
                "from %zu", set.size(), examples.size());
  std::vector<std::string> texts;
  std::vector<const std::vector<std::string>*> refs;
  for (size_t start = 0; start < set.size(); start += batch_examples) {
    std::vector<const EncodedExample*> batch;
    for (size_t e = start; e < std::min(set.size(), start + batch_examples); e++) {
      batch.push_back(&set[e]);
      refs.push_back(&examples[e].references);
    }
    const std::vector<std::vector<std::string>> out = greedy_generations(model, tokenizer, batch, {Probe{}}, limits);
    texts.insert(texts.end(), out[0].begin(), out[0].end());
  }
  if (texts_out) *texts_out = texts;
  return score_generations(texts, refs);
}

}  // namespace smezo
