// Generation loop and token sampling.
#include "train/generate.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/check.h"

namespace smezo {

namespace {

// xorshift64* — a tiny, seedable generator so sampling is reproducible everywhere.
float random_unit(uint64_t* state) {
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return static_cast<float>((*state * 0x2545F4914F6CDD1DULL) >> 40) / 16777216.0f;
}

}  // namespace

int32_t sample_token(const float* logits, int64_t vocab, float temperature, float top_p,
                     uint64_t* rng_state) {
  if (temperature == 0.0f) return static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
  std::vector<float> probs(logits, logits + vocab);
  float max_logit = *std::max_element(probs.begin(), probs.end());
  float sum = 0.0f;
  for (float& p : probs) {
    p = std::exp((p - max_logit) / temperature);
    sum += p;
  }
  for (float& p : probs) p /= sum;
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  int64_t keep = vocab;
  float mass = 1.0f;
  if (top_p < 1.0f) {
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return probs[a] > probs[b]; });
    float cumulative = 0.0f;
    for (keep = 0; keep < vocab;) {
      cumulative += probs[order[keep++]];
      if (cumulative >= top_p) break;
    }
    mass = cumulative;
  }
  float r = random_unit(rng_state) * mass, cdf = 0.0f;
  for (int64_t i = 0; i < keep; i++) {
    cdf += probs[order[i]];
    if (r < cdf) return order[i];
  }
  return order[keep - 1];
}

std::vector<int32_t> generate(Model& model, const Tokenizer& tokenizer, const GenerateOptions& opts,
                              const std::function<void(const std::string&)>& on_piece) {
  SMEZO_REQUIRE(opts.temperature >= 0.0f, "temperature %g must be >= 0", opts.temperature);
  SMEZO_REQUIRE(opts.top_p > 0.0f && opts.top_p <= 1.0f, "top-p %g must be in (0, 1]", opts.top_p);
  const bool bos = tokenizer_wants_bos(tokenizer);
  std::vector<int32_t> tokens = tokenizer.encode(opts.prompt, bos);
  SMEZO_REQUIRE(!tokens.empty(), "generate needs a prompt with this model: its tokenizer adds no BOS to start "
                "from ---> HINT: pass --prompt TEXT");
  const int64_t wanted = opts.new_tokens > 0 ? (int64_t)tokens.size() - 1 + opts.new_tokens : opts.steps;
  // a prefix (--tune prefix, --adapter) takes the first positions
  const int64_t context = model.config().max_seq_len - model.prefix_tokens();
  SMEZO_REQUIRE((int64_t)tokens.size() <= context, "the prompt (%zu tokens%s) is longer than the model's context "
                "(%lld positions%s) ---> HINT: shorten the prompt", tokens.size(), bos ? " with BOS" : "",
                (long long)context, model.prefix_tokens() > 0 ? " after its prefix" : "");
  const int64_t steps = std::min<int64_t>(wanted, context);
  SMEZO_REQUIRE((int64_t)tokens.size() <= steps,
                "the prompt (%zu tokens%s) does not fit --steps %lld, which counts the prompt's "
                "tokens ---> HINT: raise --steps, or use --new-tokens N", tokens.size(), bos ? " with BOS" : "", (long long)steps);
  model.enable_kv_cache(steps);
  uint64_t rng = opts.seed ? opts.seed : 0x9E3779B97F4A7C15ULL;
  std::vector<float> logits;
  model.forward_cached(tokens, 0, &logits);
  for (size_t i = bos ? 1 : 0; i < tokens.size(); i++)
    on_piece(tokenizer.decode_piece(i ? tokens[i - 1] : -1, tokens[i]));
  // Like llama2.c's -n: `steps` forward passes, so the last token sits at position `steps`.
  while ((int64_t)tokens.size() <= steps) {
    int32_t next = sample_token(logits.data(), model.config().vocab_size, opts.temperature, opts.top_p, &rng);
    if (next == tokenizer.bos_id() || next == tokenizer.eos_id()) break;
    on_piece(tokenizer.decode_piece(tokens.back(), next));
    tokens.push_back(next);
    if ((int64_t)tokens.size() <= steps) model.forward_cached({next}, (int64_t)tokens.size() - 1, &logits);
  }
  return tokens;
}

}  // namespace smezo
