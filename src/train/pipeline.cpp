// Pipeline-parallel scoring, losses, accuracies and checkpoints (see pipeline.h).
#include "train/pipeline.h"

#include <algorithm>
#include <map>
#include <memory>

#include "common/check.h"
#include "model/model_params.h"

namespace smezo {

namespace {

// Point-to-point tags, one per kind of message, so messages of a kind arrive in the order sent.
constexpr int kHiddenTag = 1;             // a micro-batch's hidden states, stage s -> s + 1
constexpr int kTensorRequestTag = 2;      // rank 0 -> a stage: the canonical index wanted, or -1
constexpr int kTensorValuesTag = 3;       // a stage -> rank 0: that tensor's fp32 values

std::vector<const EncodedExample*> shard_of_batch(const std::vector<const EncodedExample*>& batch,
                                                  const PipelineLayout& layout) {
  const Shard s = shard_of(static_cast<int64_t>(batch.size()), layout.replica, layout.replicas);
  return std::vector<const EncodedExample*>(batch.begin() + s.begin, batch.begin() + s.end);
}

// Every example's scores per probe, the same on every rank, from each replica's last stage.
std::vector<ExampleScores> gather_last_stage_scores(World& world, const PipelineLayout& layout,
                                                    const std::vector<ExampleScores>& local,
                                                    const std::vector<const EncodedExample*>& batch, size_t probes,
                                                    const std::string& what) {
  return gather_shard_scores(world, layout.replicas, [&layout](int r) { return layout.rank_of(r, layout.stages - 1); },
                             local, batch, probes, what);
}

}  // namespace

PipelineLayout pipeline_layout(const World& world, int stages) {
  SMEZO_REQUIRE(stages >= 1, "--pipeline-stages %d must be at least 1", stages);
  SMEZO_REQUIRE(world.size() % stages == 0,
                "--pipeline-stages %d needs a multiple of %d ranks, this job has %d ---> HINT: start it with "
                "mpirun -np %d (or a multiple: the stages then form data-parallel replicas)", stages, stages,
                world.size(), stages);
  PipelineLayout l;
  l.stages = stages;
  l.replicas = world.size() / stages;
  l.stage = world.rank() % stages;
  l.replica = world.rank() / stages;
  return l;
}

std::vector<ScoringChunk> pipeline_micro_batches(const Model& model, const std::vector<const EncodedExample*>& examples,
                                                 bool gold_only, int64_t micro_batches, const std::vector<Probe>& probes) {
  SMEZO_REQUIRE(!probes.empty(), "pipeline_micro_batches: no probe");
  // the probe that needs the most room per chunk: a pair runs two copies side by side
  const Probe& probe = *std::max_element(probes.begin(), probes.end(), [](const Probe& a, const Probe& b) {
    return probe_halves(a) < probe_halves(b);
  });
  const int64_t capacity = model.batch_tokens_capacity(probe), rows = model.batch_logit_rows_capacity(probe);
  const std::string note = probe.pair ? " per half of a probe pair" : "";
  std::vector<ScoringChunk> chunks = plan_scoring(examples, gold_only, capacity, rows, note);
  if (static_cast<int64_t>(chunks.size()) >= micro_batches) return chunks;
  int64_t total = 0, longest = 0;
  for (const ScoringChunk& c : chunks)
    for (int64_t len : c.batch.seq_lens) {
      total += len;
      longest = std::max(longest, len);
    }
  const int64_t cap = std::max(longest, (total + micro_batches - 1) / std::max<int64_t>(1, micro_batches));
  return plan_scoring(examples, gold_only, std::min(cap, capacity), rows, note);
}

std::vector<ExampleScores> pipeline_run(World& world, const PipelineLayout& layout, Model& model,
                                        const std::vector<const EncodedExample*>& examples,
                                        const std::vector<ScoringChunk>& chunks, const std::vector<Probe>& probes,
                                        const std::string& what) {
  const int64_t dim = model.config().dim, vocab = model.config().vocab_size;
  // the scores of every half: a pair's + and - halves, or a single probe
  std::vector<size_t> first_half;
  size_t halves = 0;
  for (const Probe& p : probes) {
    first_half.push_back(halves);
    halves += probe_halves(p);
  }
  std::vector<ExampleScores> scores;
  if (layout.last_stage()) scores.assign(halves, empty_scores(examples));
  const size_t n_items = probes.size() * chunks.size();  // probe-major: a separate + probe's micro-batches first
  if (n_items == 0) return scores;
  const int prev = layout.first_stage() ? -1 : layout.rank_of(layout.replica, layout.stage - 1);
  const int next = layout.last_stage() ? -1 : layout.rank_of(layout.replica, layout.stage + 1);
  auto chunk_of = [&](size_t item) -> const ScoringChunk& { return chunks[item % chunks.size()]; };
  auto probe_of = [&](size_t item) -> const Probe& { return probes[item / chunks.size()]; };
  auto item_name = [&](size_t item) {
    const Probe& p = probe_of(item);
    return format_string("the hidden states of micro-batch %zu/%zu (%s) in %s", item % chunks.size() + 1,
                         chunks.size(), p.pair ? "probe pair" : p.scale >= 0 ? "+ probe" : "- probe", what.c_str());
  };
  auto hidden_bytes = [&](size_t item) {  // a pair runs the micro-batch twice
    return static_cast<size_t>(chunk_of(item).batch.tokens.size()) * probe_halves(probe_of(item)) *
           static_cast<size_t>(dim) * sizeof(float);
  };
  // Two buffers each way: one in use, one in flight.
  std::vector<float> in[2], out[2];
  World::Transfer receiving[2], sending[2];
  auto start_receive = [&](size_t item) {
    std::vector<float>& buf = in[item % 2];
    buf.resize(hidden_bytes(item) / sizeof(float));
    receiving[item % 2] = world.recv_start(prev, kHiddenTag, buf.data(), hidden_bytes(item), item_name(item));
  };
  if (prev >= 0) start_receive(0);
  std::vector<float> logits;
  for (size_t item = 0; item < n_items; item++) {
    const ScoringChunk& chunk = chunk_of(item);
    const Probe& probe = probe_of(item);
    if (prev >= 0) {
      world.wait(&receiving[item % 2]);
      if (item + 1 < n_items) start_receive(item + 1);  // its buffer held item - 1, used by now
    }
    if (next >= 0) {
      std::vector<float>& buf = out[item % 2];
      world.wait(&sending[item % 2]);  // item - 2 has left that buffer
      model.forward_stage(chunk.batch, probe, in[item % 2], &buf);
      sending[item % 2] = world.send_start(next, kHiddenTag, buf.data(), buf.size() * sizeof(float), item_name(item));
    } else {
      model.forward_stage(chunk.batch, probe, in[item % 2], &logits);
      const size_t half = chunk.batch.logit_rows.size() * static_cast<size_t>(vocab);  // a pair's - rows follow
      for (size_t h = 0; h < probe_halves(probe); h++)
        add_chunk_scores(chunk, logits.data() + h * half, vocab, &scores[first_half[item / chunks.size()] + h]);
    }
  }
  for (World::Transfer& t : sending) world.wait(&t);
  return scores;
}

std::vector<double> pipeline_loss(World& world, const PipelineLayout& layout, Model& model,
                                  const std::vector<const EncodedExample*>& batch, const std::vector<Probe>& probes,
                                  bool as_classification, int64_t micro_batches) {
  const std::vector<const EncodedExample*> shard = shard_of_batch(batch, layout);
  const bool gold_only = !as_classification;
  const std::vector<ScoringChunk> chunks = pipeline_micro_batches(model, shard, gold_only, micro_batches, probes);
  const std::vector<ExampleScores> local = pipeline_run(world, layout, model, shard, chunks, probes, "a training step");
  std::vector<double> losses;
  for (const ExampleScores& scores :
       gather_last_stage_scores(world, layout, local, batch, probe_halves(probes), "the probes' scores"))
    losses.push_back(task_loss(scores, batch, as_classification));
  return losses;
}

double pipeline_accuracy(World& world, const PipelineLayout& layout, Model& model,
                         const std::vector<EncodedExample>& examples, int64_t micro_batches) {
  SMEZO_REQUIRE(!examples.empty(), "accuracy of an empty example set");
  std::vector<const EncodedExample*> all;
  for (const EncodedExample& x : examples) all.push_back(&x);
  const std::vector<const EncodedExample*> shard = shard_of_batch(all, layout);
  const std::vector<ScoringChunk> chunks = pipeline_micro_batches(model, shard, false, micro_batches, {Probe{}});
  const std::vector<ExampleScores> local = pipeline_run(world, layout, model, shard, chunks, {Probe{}}, "an evaluation");
  const int64_t correct = layout.last_stage() ? count_best_is_gold(local[0], shard) : 0;
  return static_cast<double>(sum_over_ranks(world, correct, "evaluation counts")) / static_cast<double>(examples.size());
}

nlohmann::json pipeline_merge_objects(World& world, const nlohmann::json& mine, const std::string& what) {
  const std::string text = mine.dump();
  nlohmann::json merged = nlohmann::json::object();
  for (const std::vector<uint8_t>& b : world.allgather(std::vector<uint8_t>(text.begin(), text.end()), what)) {
    const nlohmann::json theirs = nlohmann::json::parse(b.begin(), b.end(), nullptr, false);
    SMEZO_REQUIRE(theirs.is_object(), "%sa rank sent %zu bytes of %s that are not a JSON object",
                  world.rank_prefix().c_str(), b.size(), what.c_str());
    for (auto& kv : theirs.items()) {
      // replicas of a stage hold the same tensors: their values must agree
      SMEZO_REQUIRE(!merged.contains(kv.key()) || merged[kv.key()] == kv.value(),
                    "%sranks disagree on %s of %s (%s and %s) ---> HINT: every rank must load the same model",
                    world.rank_prefix().c_str(), what.c_str(), kv.key().c_str(), merged[kv.key()].dump().c_str(),
                    kv.value().dump().c_str());
      merged[kv.key()] = kv.value();
    }
  }
  return merged;
}

int64_t pipeline_sum_owned(World& world, const PipelineLayout& layout, Model& model,
                           const std::function<int64_t(const Param&)>& count) {
  int64_t mine = 0;
  if (layout.replica == 0) {
    ModelParams scratch;
    const std::vector<ParamSlot> slots = list_param_slots(model.config(), scratch);  // names and places only
    for (const Param* p : model.params())
      if (stage_owns(model.stage(), slots[p->info.tensor_id])) mine += count(*p);
  }
  return sum_over_ranks(world, mine, "parameter counts");
}

CheckpointSource pipeline_checkpoint_source(World& world, const PipelineLayout& layout, Model& model) {
  SMEZO_REQUIRE(world.is_root(), "the pipeline checkpoint is written by rank 0");
  CheckpointSource source;
  source.config = model.config();
  source.storage = model.storage_dtype();  // a packed weight's w is F32 whatever the storage
  ModelParams scratch;
  const std::vector<ParamSlot> slots = list_param_slots(model.config(), scratch);  // names and places only
  std::vector<int> owner(slots.size(), 0);                  // stage that owns each canonical tensor
  auto requested = std::make_shared<std::vector<int64_t>>(layout.stages, 0);  // per stage, asked so far
  auto owned = std::make_shared<std::vector<int64_t>>(layout.stages, 0);
  for (size_t i = 0; i < slots.size(); i++) {
    for (int s = 0; s < layout.stages; s++)
      if (stage_owns(model_stage(model.config(), s, layout.stages), slots[i])) owner[i] = s;
    (*owned)[owner[i]]++;
    const int64_t rows = slots[i].shape.size() == 2 ? slots[i].shape[0] : 1;
    source.tensors.push_back({slots[i].name, rows, slots[i].shape.back(), slots[i].role, slots[i].is_bias});
  }
  std::vector<Param*> local(slots.size(), nullptr);
  for (Param* p : model.params()) local[p->info.tensor_id] = p;
  source.fetch = [&world, &model, layout, owner, local, requested, names = source.tensors](size_t i,
                                                                                          std::vector<float>* values) {
    const int s = owner[i];
    (*requested)[s]++;
    if (s == 0) {
      SMEZO_REQUIRE(local[i] != nullptr, "the first stage does not hold %s", names[i].name.c_str());
      values->resize(static_cast<size_t>(local[i]->w.numel()));
      model.backend().download(local[i]->w, values->data());
      return;
    }
    const int from = layout.rank_of(0, s);
    const int64_t index = static_cast<int64_t>(i);
    const std::string what = "checkpoint tensor " + names[i].name;
    values->resize(static_cast<size_t>(names[i].rows * names[i].cols));
    World::Transfer ask = world.send_start(from, kTensorRequestTag, &index, sizeof index, "the request for " + what);
    World::Transfer get = world.recv_start(from, kTensorValuesTag, values->data(), values->size() * sizeof(float), what);
    world.wait(&ask);
    world.wait(&get);
  };
  source.abandon = [&world, layout, requested, owned] {
    const int64_t stop = -1;
    for (int s = 1; s < layout.stages; s++) {
      if ((*requested)[s] >= (*owned)[s]) continue;  // that stage has sent all it had
      World::Transfer t = world.send_start(layout.rank_of(0, s), kTensorRequestTag, &stop, sizeof stop,
                                           "the end of a failed checkpoint");
      world.wait(&t);  // a stage that does not take it is gone: PeerTimeout ends the job
    }
  };
  return source;
}

void pipeline_serve_checkpoint(World& world, const PipelineLayout& layout, Model& model) {
  SMEZO_REQUIRE(layout.replica == 0 && !layout.first_stage(), "only the later stages of replica 0 serve checkpoints");
  ModelParams scratch;
  const std::vector<ParamSlot> slots = list_param_slots(model.config(), scratch);  // names and places only
  std::map<int64_t, const Param*> owned;  // tensor id -> this stage's tensor
  for (const Param* p : model.params())
    if (stage_owns(model.stage(), slots[p->info.tensor_id])) owned[p->info.tensor_id] = p;
  std::vector<float> values;
  // rank 0 asks in the order the file is laid out, each tensor once
  for (size_t served = 0; served < owned.size(); served++) {
    int64_t index = -2;
    World::Transfer ask = world.recv_start(0, kTensorRequestTag, &index, sizeof index,
                                           "rank 0's request for a checkpoint tensor");
    world.wait(&ask);
    if (index == -1) return;  // rank 0's write failed: it says why
    const auto it = owned.find(index);
    SMEZO_REQUIRE(it != owned.end(), "rank 0 asked for checkpoint tensor %lld, which pipeline stage %d does not own",
                  (long long)index, layout.stage);
    const Param* p = it->second;
    values.resize(static_cast<size_t>(p->w.numel()));
    model.backend().download(p->w, values.data());
    World::Transfer send = world.send_start(0, kTensorValuesTag, values.data(), values.size() * sizeof(float),
                                            "checkpoint tensor " + p->info.name);
    world.wait(&send);
  }
}

}  // namespace smezo
