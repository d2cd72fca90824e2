// Scoring candidates and the training losses (see objective.h).
#include "train/objective.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"

namespace smezo {

namespace {

// One sequence to run and the option tokens it scores. Usually one candidate's full tokens;
// when every candidate of an example has a single option token after the same prefix (SST-2,
// RTE, CB, ... with LLaMA's tokenizer), one run of the shared prefix scores them all from its
// last row. The row of a token depends only on the tokens before it, so both ways give the
// same numbers.
struct Target {
  size_t candidate;
  int64_t row;     // row in the sequence whose logits predict the token
  int32_t token;
};
struct PendingSequence {
  size_t example;
  const int32_t* tokens;
  int64_t len;
  std::vector<Target> targets;
  int64_t logit_rows() const {  // distinct rows (targets of one row are adjacent)
    int64_t n = 0;
    for (size_t i = 0; i < targets.size(); i++) n += i == 0 || targets[i].row != targets[i - 1].row;
    return n;
  }
};

// log p(target) from one row of logits, in double; NaN when any logit is not finite, so a
// diverged model shows up as a NaN loss instead of a plausible number.
double token_logprob(const float* logits, int64_t vocab, int32_t target) {
  float max_logit = logits[0];
  for (int64_t v = 0; v < vocab; v++) {
    if (!std::isfinite(logits[v])) return std::nan("");
    max_logit = std::max(max_logit, logits[v]);
  }
  double sum = 0.0;
  for (int64_t v = 0; v < vocab; v++) sum += std::exp(static_cast<double>(logits[v] - max_logit));
  return static_cast<double>(logits[target] - max_logit) - std::log(sum);
}

// out[0]: the scores under the probe (or the + half of a pair), out[1]: the - half of a pair.
using Scores = std::vector<std::vector<CandidateScore>>;

void run_chunk(Model& model, const std::vector<PendingSequence>& chunk, const Probe& probe, Scores* out) {
  ForwardBatch batch;
  std::vector<std::vector<int64_t>> target_logit_row(chunk.size());  // per target: row in logits
  for (size_t i = 0; i < chunk.size(); i++) {
    const PendingSequence& ps = chunk[i];
    const int64_t base = static_cast<int64_t>(batch.tokens.size());
    batch.tokens.insert(batch.tokens.end(), ps.tokens, ps.tokens + ps.len);
    batch.seq_lens.push_back(ps.len);
    for (size_t t = 0; t < ps.targets.size(); t++) {
      if (t == 0 || ps.targets[t].row != ps.targets[t - 1].row) batch.logit_rows.push_back(base + ps.targets[t].row);
      target_logit_row[i].push_back(static_cast<int64_t>(batch.logit_rows.size()) - 1);
    }
  }
  std::vector<float> logits;
  model.forward(batch, probe, &logits);
  const int64_t vocab = model.config().vocab_size;
  const int64_t half_rows = static_cast<int64_t>(batch.logit_rows.size());  // a pair's - rows follow
  for (int h = 0; h < (probe.pair ? 2 : 1); h++) {
    for (size_t i = 0; i < chunk.size(); i++) {
      for (size_t t = 0; t < chunk[i].targets.size(); t++) {
        const Target& tg = chunk[i].targets[t];
        CandidateScore& s = out[h][chunk[i].example][tg.candidate];
        s.sum_logprob += token_logprob(&logits[(h * half_rows + target_logit_row[i][t]) * vocab], vocab, tg.token);
        s.n_tokens++;
      }
    }
  }
}

// The sequences that score an example's candidates (all, or just the gold one).
std::vector<PendingSequence> plan_example(size_t e, const EncodedExample& ex, bool gold_only) {
  for (const EncodedCandidate& c : ex.candidates)
    SMEZO_REQUIRE(c.option_start >= 1 && c.option_start < (int64_t)c.tokens.size(),
                  "an encoded candidate needs a prefix and at least one option token");
  const EncodedCandidate& first = ex.candidates[0];
  bool shared = !gold_only && ex.candidates.size() > 1;
  for (const EncodedCandidate& c : ex.candidates)
    shared = shared && (int64_t)c.tokens.size() == first.option_start + 1 && c.option_start == first.option_start &&
             std::equal(c.tokens.begin(), c.tokens.begin() + c.option_start, first.tokens.begin());
  std::vector<PendingSequence> out;
  if (shared) {
    PendingSequence ps{e, first.tokens.data(), first.option_start, {}};
    for (size_t c = 0; c < ex.candidates.size(); c++)
      ps.targets.push_back(Target{c, first.option_start - 1, ex.candidates[c].tokens[first.option_start]});
    out.push_back(ps);
    return out;
  }
  for (size_t c = 0; c < ex.candidates.size(); c++) {
    if (gold_only && static_cast<int>(c) != ex.gold) continue;
    const EncodedCandidate& enc = ex.candidates[c];
    PendingSequence ps{e, enc.tokens.data(), (int64_t)enc.tokens.size(), {}};
    for (int64_t t = enc.option_start; t < ps.len; t++) ps.targets.push_back(Target{c, t - 1, enc.tokens[t]});
    out.push_back(ps);
  }
  return out;
}

// Scores under a single probe (out[0]) or both halves of a pair (out[0], out[1]). A pair's
// chunks hold half the workspace each (the model runs them twice side by side); chunking
// never changes a score, since every row depends only on its own sequence.
void score_all(Model& model, const std::vector<const EncodedExample*>& examples, const Probe& probe,
               bool gold_only, Scores* out) {
  const int64_t max_tokens = model.batch_tokens_capacity(probe);
  const int64_t max_rows = model.batch_logit_rows_capacity(probe);
  for (int h = 0; h < (probe.pair ? 2 : 1); h++) {
    out[h].assign(examples.size(), {});
    for (size_t e = 0; e < examples.size(); e++) out[h][e].resize(examples[e]->candidates.size());
  }
  std::vector<PendingSequence> chunk;
  int64_t chunk_tokens = 0, chunk_rows = 0;
  for (size_t e = 0; e < examples.size(); e++) {
    for (PendingSequence& ps : plan_example(e, *examples[e], gold_only)) {
      const int64_t rows = ps.logit_rows();
      SMEZO_REQUIRE(ps.len <= max_tokens && rows <= max_rows,
                    "a %lld-token candidate with %lld option tokens does not fit the workspace "
                    "(%lld tokens, %lld logit rows%s)", (long long)ps.len, (long long)rows,
                    (long long)max_tokens, (long long)max_rows, probe.pair ? " per half of a probe pair" : "");
      if (chunk_tokens + ps.len > max_tokens || chunk_rows + rows > max_rows) {
        run_chunk(model, chunk, probe, out);
        chunk.clear();
        chunk_tokens = chunk_rows = 0;
      }
      chunk_tokens += ps.len;
      chunk_rows += rows;
      chunk.push_back(std::move(ps));
    }
  }
  if (!chunk.empty()) run_chunk(model, chunk, probe, out);
}

double loss_of(const Scores& scores, const std::vector<const EncodedExample*>& examples, bool as_classification) {
  return as_classification ? classification_loss(scores, examples) : gold_token_loss(scores, examples);
}

}  // namespace

std::vector<std::vector<CandidateScore>> score_examples(Model& model,
                                                        const std::vector<const EncodedExample*>& examples,
                                                        const Probe& probe, bool gold_only) {
  SMEZO_REQUIRE(!probe.pair, "score_examples takes a single probe (batch_loss_pair takes pairs)");
  Scores out[1];
  score_all(model, examples, probe, gold_only, out);
  return out[0];
}

double classification_loss(const std::vector<std::vector<CandidateScore>>& scores,
                           const std::vector<const EncodedExample*>& examples) {
  double total = 0.0;
  for (size_t e = 0; e < scores.size(); e++) {
    double max_score = -INFINITY;
    for (const CandidateScore& s : scores[e]) max_score = std::max(max_score, s.mean_logprob());
    double sum = 0.0;
    for (const CandidateScore& s : scores[e]) sum += std::exp(s.mean_logprob() - max_score);
    total += -(scores[e][examples[e]->gold].mean_logprob() - max_score - std::log(sum));
  }
  return total / static_cast<double>(scores.size());
}

double gold_token_loss(const std::vector<std::vector<CandidateScore>>& scores,
                       const std::vector<const EncodedExample*>& examples) {
  double nll = 0.0;
  int64_t n = 0;
  for (size_t e = 0; e < scores.size(); e++) {
    const CandidateScore& s = scores[e][examples[e]->gold];
    nll -= s.sum_logprob;
    n += s.n_tokens;
  }
  return nll / static_cast<double>(n);
}

double batch_loss(Model& model, const std::vector<const EncodedExample*>& examples, const Probe& probe,
                  bool as_classification) {
  return loss_of(score_examples(model, examples, probe, !as_classification), examples, as_classification);
}

std::pair<double, double> batch_loss_pair(Model& model, const std::vector<const EncodedExample*>& examples,
                                          const Probe& pair, bool as_classification) {
  SMEZO_REQUIRE(pair.pair, "batch_loss_pair takes a probe pair");
  Scores out[2];
  score_all(model, examples, pair, !as_classification, out);
  return {loss_of(out[0], examples, as_classification), loss_of(out[1], examples, as_classification)};
}

int64_t count_correct(Model& model, const std::vector<const EncodedExample*>& examples, int64_t batch_examples) {
  int64_t correct = 0;
  for (size_t start = 0; start < examples.size(); start += batch_examples) {
    const std::vector<const EncodedExample*> batch(examples.begin() + start,
                                                   examples.begin() + std::min(examples.size(), start + batch_examples));
    auto scores = score_examples(model, batch, Probe{}, false);
    for (size_t e = 0; e < batch.size(); e++) {
      int best = 0;
      for (size_t c = 1; c < scores[e].size(); c++)
        if (scores[e][c].mean_logprob() > scores[e][best].mean_logprob()) best = static_cast<int>(c);
      correct += best == batch[e]->gold;
    }
  }
  return correct;
}

double accuracy(Model& model, const std::vector<EncodedExample>& examples, int64_t batch_examples) {
  SMEZO_REQUIRE(!examples.empty(), "accuracy of an empty example set");
  std::vector<const EncodedExample*> all;
  for (const EncodedExample& x : examples) all.push_back(&x);
  return static_cast<double>(count_correct(model, all, batch_examples)) / static_cast<double>(examples.size());
}

}  // namespace smezo
