// Scoring candidates and the training losses (see objective.h).
#include "train/objective.h"

#include <cmath>

#include "common/check.h"

namespace smezo {

namespace {

struct PendingCandidate {
  size_t example;
  size_t candidate;
  const EncodedCandidate* enc;
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

void run_chunk(Model& model, const std::vector<PendingCandidate>& chunk, const Probe& probe,
               std::vector<std::vector<CandidateScore>>* out) {
  ForwardBatch batch;
  std::vector<int32_t> targets;
  for (const PendingCandidate& pc : chunk) {
    const EncodedCandidate& c = *pc.enc;
    const int64_t base = static_cast<int64_t>(batch.tokens.size());
    const int64_t len = static_cast<int64_t>(c.tokens.size());
    batch.tokens.insert(batch.tokens.end(), c.tokens.begin(), c.tokens.end());
    batch.seq_lens.push_back(len);
    for (int64_t t = c.option_start; t < len; t++) {
      batch.logit_rows.push_back(base + t - 1);  // the row before a token predicts it
      targets.push_back(c.tokens[t]);
    }
  }
  std::vector<float> logits;
  model.forward(batch, probe, &logits);
  const int64_t vocab = model.config().vocab_size;
  size_t row = 0;
  for (const PendingCandidate& pc : chunk) {
    CandidateScore& s = (*out)[pc.example][pc.candidate];
    const int64_t n = static_cast<int64_t>(pc.enc->tokens.size()) - pc.enc->option_start;
    for (int64_t i = 0; i < n; i++, row++) s.sum_logprob += token_logprob(&logits[row * vocab], vocab, targets[row]);
    s.n_tokens = n;
  }
}

}  // namespace

std::vector<std::vector<CandidateScore>> score_examples(Model& model,
                                                        const std::vector<const EncodedExample*>& examples,
                                                        const Probe& probe, bool gold_only) {
  std::vector<std::vector<CandidateScore>> out(examples.size());
  std::vector<PendingCandidate> chunk;
  int64_t chunk_tokens = 0, chunk_rows = 0;
  for (size_t e = 0; e < examples.size(); e++) {
    const EncodedExample& ex = *examples[e];
    out[e].resize(ex.candidates.size());
    for (size_t c = 0; c < ex.candidates.size(); c++) {
      if (gold_only && static_cast<int>(c) != ex.gold) continue;
      const EncodedCandidate& enc = ex.candidates[c];
      const int64_t len = static_cast<int64_t>(enc.tokens.size());
      SMEZO_REQUIRE(enc.option_start >= 1 && enc.option_start < len,
                    "an encoded candidate needs a prefix and at least one option token");
      const int64_t rows = len - enc.option_start;  // logit rows it needs
      SMEZO_REQUIRE(len <= model.max_tokens() && rows <= model.max_logit_rows(),
                    "a %lld-token candidate with %lld option tokens does not fit the workspace "
                    "(%lld tokens, %lld logit rows)", (long long)len, (long long)rows,
                    (long long)model.max_tokens(), (long long)model.max_logit_rows());
      if (chunk_tokens + len > model.max_tokens() || chunk_rows + rows > model.max_logit_rows()) {
        run_chunk(model, chunk, probe, &out);
        chunk.clear();
        chunk_tokens = chunk_rows = 0;
      }
      chunk.push_back(PendingCandidate{e, c, &enc});
      chunk_tokens += len;
      chunk_rows += rows;
    }
  }
  if (!chunk.empty()) run_chunk(model, chunk, probe, &out);
  return out;
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
  auto scores = score_examples(model, examples, probe, !as_classification);
  return as_classification ? classification_loss(scores, examples) : gold_token_loss(scores, examples);
}

double accuracy(Model& model, const std::vector<EncodedExample>& examples, int64_t batch_examples) {
  SMEZO_REQUIRE(!examples.empty(), "accuracy of an empty example set");
  int64_t correct = 0;
  for (size_t start = 0; start < examples.size(); start += batch_examples) {
    std::vector<const EncodedExample*> batch;
    for (size_t i = start; i < std::min(examples.size(), start + batch_examples); i++) batch.push_back(&examples[i]);
    auto scores = score_examples(model, batch, Probe{}, false);
    for (size_t e = 0; e < batch.size(); e++) {
      int best = 0;
      for (size_t c = 1; c < scores[e].size(); c++)
        if (scores[e][c].mean_logprob() > scores[e][best].mean_logprob()) best = static_cast<int>(c);
      correct += best == batch[e]->gold;
    }
  }
  return static_cast<double>(correct) / static_cast<double>(examples.size());
}

}  // namespace smezo
