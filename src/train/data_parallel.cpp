// Data-parallel losses and accuracies (see data_parallel.h).
#include "train/data_parallel.h"

#include <cstring>

#include "common/check.h"

namespace smezo {

namespace {

constexpr size_t kBytesPerCandidate = 16;  // float64 sum_logprob + int64 n_tokens

void put_bytes(std::vector<uint8_t>* out, const void* p, size_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  out->insert(out->end(), b, b + n);
}

std::vector<uint8_t> int64_bytes(int64_t v) {
  std::vector<uint8_t> b;
  put_bytes(&b, &v, sizeof v);
  return b;
}

}  // namespace

std::vector<ExampleScores> gather_shard_scores(World& world, int shards, const std::function<int(int)>& scorer,
                                               const std::vector<ExampleScores>& local,
                                               const std::vector<const EncodedExample*>& batch, size_t probes,
                                               const std::string& what) {
  if (world.size() == 1) return local;
  std::vector<uint8_t> bytes;
  for (const ExampleScores& scores : local)
    for (const std::vector<CandidateScore>& example : scores)
      for (const CandidateScore& s : example) {  // the bit patterns: the loss must see the very same doubles
        put_bytes(&bytes, &s.sum_logprob, sizeof s.sum_logprob);
        put_bytes(&bytes, &s.n_tokens, sizeof s.n_tokens);
      }
  const std::vector<std::vector<uint8_t>> all = world.allgather(bytes, what);
  const int64_t n = static_cast<int64_t>(batch.size());
  std::vector<ExampleScores> out(probes, ExampleScores(batch.size()));
  for (int shard = 0; shard < shards; shard++) {
    const int from = scorer(shard);
    const Shard theirs = shard_of(n, shard, shards);
    size_t per_probe = 0;
    for (int64_t e = theirs.begin; e < theirs.end; e++) per_probe += batch[e]->candidates.size() * kBytesPerCandidate;
    const std::vector<uint8_t>& b = all[static_cast<size_t>(from)];
    SMEZO_REQUIRE(b.size() == per_probe * probes,
                  "%srank %d sent %zu bytes of %s, its %lld examples need %zu ---> HINT: every rank must run the "
                  "same smezo on the same data", world.rank_prefix().c_str(), from, b.size(), what.c_str(),
                  (long long)theirs.size(), per_probe * probes);
    size_t at = 0;
    for (size_t p = 0; p < probes; p++)
      for (int64_t e = theirs.begin; e < theirs.end; e++) {
        out[p][e].resize(batch[e]->candidates.size());
        for (CandidateScore& s : out[p][e]) {
          std::memcpy(&s.sum_logprob, b.data() + at, sizeof s.sum_logprob);
          std::memcpy(&s.n_tokens, b.data() + at + 8, sizeof s.n_tokens);
          at += kBytesPerCandidate;
        }
      }
  }
  return out;
}

std::vector<double> batch_loss_ranks(World& world, Model& model, const std::vector<const EncodedExample*>& batch,
                                     const std::vector<Probe>& probes, bool as_classification) {
  if (world.size() == 1) return batch_loss(model, batch, probes, as_classification);
  const Shard mine = shard_of(static_cast<int64_t>(batch.size()), world.rank(), world.size());
  const std::vector<const EncodedExample*> shard(batch.begin() + mine.begin, batch.begin() + mine.end);
  const std::vector<ExampleScores> local = score_examples(model, shard, probes, !as_classification);
  std::vector<double> losses;
  for (const ExampleScores& scores : gather_shard_scores(world, world.size(), [](int r) { return r; }, local, batch,
                                                         local.size(), "the probes' scores"))
    losses.push_back(task_loss(scores, batch, as_classification));
  return losses;
}

double accuracy_ranks(World& world, Model& model, const std::vector<EncodedExample>& examples,
                      int64_t batch_examples) {
  if (world.size() == 1) return accuracy(model, examples, batch_examples);
  SMEZO_REQUIRE(!examples.empty(), "accuracy of an empty example set");
  const Shard mine = shard_of(static_cast<int64_t>(examples.size()), world.rank(), world.size());
  std::vector<const EncodedExample*> shard;
  for (int64_t i = mine.begin; i < mine.end; i++) shard.push_back(&examples[i]);
  const int64_t correct = count_correct(model, shard, batch_examples);
  return static_cast<double>(sum_over_ranks(world, correct, "evaluation counts")) /
         static_cast<double>(examples.size());
}

int64_t sum_over_ranks(World& world, int64_t value, const std::string& what) {
  int64_t total = 0;
  for (const std::vector<uint8_t>& b : world.allgather(int64_bytes(value), what)) {
    SMEZO_REQUIRE(b.size() == sizeof(int64_t), "%sa rank sent %zu bytes of %s, not 8", world.rank_prefix().c_str(),
                  b.size(), what.c_str());
    int64_t v;
    std::memcpy(&v, b.data(), sizeof v);
    total += v;
  }
  return total;
}

int64_t value_of_rank0(World& world, int64_t value, const std::string& what) {
  if (world.size() == 1) return value;
  const std::vector<std::vector<uint8_t>> all = world.allgather(int64_bytes(value), what);
  SMEZO_REQUIRE(all[0].size() == sizeof(int64_t), "%srank 0 sent %zu bytes of %s, not 8", world.rank_prefix().c_str(),
                all[0].size(), what.c_str());
  std::memcpy(&value, all[0].data(), sizeof value);
  return value;
}

void require_same_on_all_ranks(World& world, const std::string& text, const std::string& what) {
  if (world.size() == 1) return;
  const std::vector<std::vector<uint8_t>> all =
      world.allgather(std::vector<uint8_t>(text.begin(), text.end()), what);
  std::string differ;
  for (int r = 1; r < world.size(); r++)
    if (all[static_cast<size_t>(r)] != all[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  SMEZO_REQUIRE(differ.empty(), "rank %s has other %s than rank 0 ---> HINT: start every rank with the same "
                "command, model and data (and, for --resume, an --out every rank sees)", differ.c_str(), what.c_str());
}

}  // namespace smezo
