// Scoring candidates and the training losses (see objective.h).
#include "train/objective.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"

namespace smezo {

namespace {

// One sequence to run and the option tokens it scores: a candidate's full tokens, or, when every
// candidate is one option token after the same prefix (SST-2, RTE, CB, ... with LLaMA's tokenizer),
// the shared prefix, scoring all from its last row (the same numbers: a row sees only earlier tokens).
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

// log p(target) from one row of logits, in double; NaN when any logit is not finite (a diverged model).
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
void run_chunk(Model& model, const ScoringChunk& chunk, const Probe& probe, ExampleScores* out) {
  std::vector<float> logits;
  model.forward(chunk.batch, probe, &logits);
  const int64_t vocab = model.config().vocab_size;
  const size_t half = chunk.batch.logit_rows.size() * static_cast<size_t>(vocab);  // a pair's - rows follow
  for (size_t h = 0; h < probe_halves(probe); h++) add_chunk_scores(chunk, logits.data() + h * half, vocab, &out[h]);
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

// Scores under a single probe (out[0]) or both halves of a pair (out[0], out[1]; half the workspace).
void score_all(Model& model, const std::vector<const EncodedExample*>& examples, const Probe& probe,
               bool gold_only, ExampleScores* out) {
  const std::vector<ScoringChunk> chunks =
      plan_scoring(examples, gold_only, model.batch_tokens_capacity(probe), model.batch_logit_rows_capacity(probe),
                   probe.pair ? " per half of a probe pair" : "");
  for (size_t h = 0; h < probe_halves(probe); h++) out[h] = empty_scores(examples);
  for (const ScoringChunk& chunk : chunks) run_chunk(model, chunk, probe, out);
}


}  // namespace

std::vector<ScoringChunk> plan_scoring(const std::vector<const EncodedExample*>& examples, bool gold_only,
                                       int64_t max_tokens, int64_t max_rows, const std::string& capacity_note) {
  std::vector<ScoringChunk> chunks;
  ScoringChunk chunk;
  auto close_chunk = [&] {
    if (!chunk.batch.tokens.empty()) chunks.push_back(std::move(chunk));
    chunk = ScoringChunk{};
  };
  for (size_t e = 0; e < examples.size(); e++) {
    for (const PendingSequence& ps : plan_example(e, *examples[e], gold_only)) {
      const int64_t rows = ps.logit_rows();
      SMEZO_REQUIRE(ps.len <= max_tokens && rows <= max_rows,
                    "a %lld-token candidate with %lld option tokens does not fit the workspace "
                    "(%lld tokens, %lld logit rows%s)", (long long)ps.len, (long long)rows,
                    (long long)max_tokens, (long long)max_rows, capacity_note.c_str());
      if ((int64_t)chunk.batch.tokens.size() + ps.len > max_tokens ||
          (int64_t)chunk.batch.logit_rows.size() + rows > max_rows)
        close_chunk();
      const int64_t base = static_cast<int64_t>(chunk.batch.tokens.size());
      chunk.batch.tokens.insert(chunk.batch.tokens.end(), ps.tokens, ps.tokens + ps.len);
      chunk.batch.seq_lens.push_back(ps.len);
      for (size_t t = 0; t < ps.targets.size(); t++) {
        if (t == 0 || ps.targets[t].row != ps.targets[t - 1].row) chunk.batch.logit_rows.push_back(base + ps.targets[t].row);
        chunk.targets.push_back(ScoreTarget{ps.example, ps.targets[t].candidate,
                                            static_cast<int64_t>(chunk.batch.logit_rows.size()) - 1, ps.targets[t].token});
      }
    }
  }
  close_chunk();
  return chunks;
}

ExampleScores empty_scores(const std::vector<const EncodedExample*>& examples) {
  ExampleScores out(examples.size());
  for (size_t e = 0; e < examples.size(); e++) out[e].resize(examples[e]->candidates.size());
  return out;
}

void add_chunk_scores(const ScoringChunk& chunk, const float* logits, int64_t vocab, ExampleScores* scores) {
  for (const ScoreTarget& t : chunk.targets) {
    CandidateScore& s = (*scores)[t.example][t.candidate];
    s.sum_logprob += token_logprob(logits + t.logit_row * vocab, vocab, t.token);
    s.n_tokens++;
  }
}

std::vector<ExampleScores> score_examples(Model& model, const std::vector<const EncodedExample*>& examples,
                                          const std::vector<Probe>& probes, bool gold_only) {
  std::vector<ExampleScores> out(probe_halves(probes));
  size_t half = 0;
  for (const Probe& probe : probes) {
    score_all(model, examples, probe, gold_only, &out[half]);
    half += probe_halves(probe);
  }
  return out;
}

double task_loss(const ExampleScores& scores, const std::vector<const EncodedExample*>& examples, bool as_classification) {
  return as_classification ? classification_loss(scores, examples) : gold_token_loss(scores, examples);
}

double classification_loss(const ExampleScores& scores, const std::vector<const EncodedExample*>& examples) {
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

double gold_token_loss(const ExampleScores& scores, const std::vector<const EncodedExample*>& examples) {
  double nll = 0.0;
  int64_t n = 0;
  for (size_t e = 0; e < scores.size(); e++) {
    const CandidateScore& s = scores[e][examples[e]->gold];
    nll -= s.sum_logprob;
    n += s.n_tokens;
  }
  return nll / static_cast<double>(n);
}

std::vector<double> batch_loss(Model& model, const std::vector<const EncodedExample*>& examples,
                               const std::vector<Probe>& probes, bool as_classification) {
  std::vector<double> losses;
  for (const ExampleScores& scores : score_examples(model, examples, probes, !as_classification))
    losses.push_back(task_loss(scores, examples, as_classification));
  return losses;
}

int64_t count_correct(Model& model, const std::vector<const EncodedExample*>& examples, int64_t batch_examples) {
  int64_t correct = 0;
  for (size_t start = 0; start < examples.size(); start += batch_examples) {
    const std::vector<const EncodedExample*> batch(examples.begin() + start,
                                                   examples.begin() + std::min(examples.size(), start + batch_examples));
    correct += count_best_is_gold(score_examples(model, batch, {Probe{}}, false)[0], batch);
  }
  return correct;
}

int64_t count_best_is_gold(const ExampleScores& scores, const std::vector<const EncodedExample*>& examples) {
  int64_t correct = 0;
  for (size_t e = 0; e < examples.size(); e++) {
    int best = 0;  // the first of equal scores
    for (size_t c = 1; c < scores[e].size(); c++)
      if (scores[e][c].mean_logprob() > scores[e][best].mean_logprob()) best = static_cast<int>(c);
    correct += best == examples[e]->gold;
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
