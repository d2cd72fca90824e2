// --graphs on (cuda/cuda_graphs.cu): each forward pass captured as a CUDA graph and launched must give the
// bits of the uncaptured pass:
//   - the model: S-MeZO steps of stories260K with real forwards (the pair, the fold held and applied in a
//     captured pass, an unperturbed pass between steps), logits and every weight bit for bit, and the
//     graphs were launched (the first pass of each shape runs uncaptured; later ones update the shape's
//     executable graph rather than instantiating another);
//   - training: graphs on = graphs off for the metrics (the losses and the evaluations, mid-run and final:
//     evaluation passes run as graphs too), the seed log's records and the checkpoint, with gaussian z and
//     the fold (--accumulate 2), and with the sign noise kind, the fold off and --probes separate;
//   - refusals: the CPU backend (one line with the hint). Resuming a run of the other setting:
//     tests/test_run_path.cpp (RunPathCuda.ResumeRefusesTheOtherGraphsSetting).
// The *Cuda* cases run on a GPU or emulated (make emu-test, EMU_SCHED=rev, EMU_SAN=1).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/model.h"
#include "run/seed_log.h"
#include "setup/model_setup.h"
#include "smezo/train.h"
#include "test_util.h"
#include "train/spsa.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#endif

using namespace smezo;
using smezo_test::read_file;
using smezo_test::same_bits;
using testing::HasSubstr;

TEST(Graphs, CpuBackendRefusesThem) {
  EXPECT_THROW_MSG(make_backend(DEVICE_CPU, LINEAR_MODE_AUTO, true), "--graphs on: CUDA graphs are a GPU's");
  EXPECT_THROW_MSG(make_backend(DEVICE_CPU, LINEAR_MODE_AUTO, true), "---> HINT: leave --graphs out on the CPU");
  EXPECT_NE(make_backend(DEVICE_CPU, LINEAR_MODE_AUTO, false), nullptr);
}

#ifdef SMEZO_WITH_CUDA
namespace {

// Four S-MeZO steps (fold as asked) on stories260K, steps 2 and 4 followed by an unperturbed pass (which
// applies the held updates before its reads: step 3's pair holds none, step 4's folds step 3's); returns
// every pass's logits, then every weight.
std::vector<std::vector<float>> steps_and_weights(LoadedModel& lm, bool fold) {
  SpsaOptions o;
  o.method = METHOD_SMEZO;
  o.sparsity = 0.5;
  o.lr = 1e-2f;
  o.noise = NOISE_GAUSSIAN;
  SpsaOptimizer opt(*lm.model, o);
  opt.set_fold_update(fold);
  ForwardBatch batch;
  batch.tokens = {1, 5, 9, 2, 7, 3, 11, 4, 8, 6};
  batch.seq_lens = {6, 4};
  batch.logit_rows = {4, 5, 9};
  std::vector<std::vector<float>> out;
  for (int64_t step = 1; step <= 4; step++) {
    batch.tokens[0] = static_cast<int32_t>(step);  // another batch each step, the same shape
    std::vector<float> logits;
    lm.model->forward(batch, opt.probes(step, true)[0], &logits);  // the pair: + rows, then - rows
    out.push_back(logits);
    const size_t half = logits.size() / 2;
    double plus = 0, minus = 0;
    for (size_t i = 0; i < half; i++) plus += logits[i], minus += logits[half + i];
    opt.finish(step, {plus / half, minus / half});
    if (step % 2 == 1) continue;
    out.emplace_back();
    lm.model->forward(batch, Probe{}, &out.back());
  }
  lm.backend->flush_updates();
  for (const Param* p : lm.model->params()) out.push_back(smezo_test::download(*lm.backend, p->w));
  return out;
}

LoadedModel open_cuda(bool graphs) {
  ModelOpenOptions mo;
  mo.device = DEVICE_CUDA;
  mo.dtype = DTYPE_BF16;
  mo.max_tokens = 32;
  mo.max_logit_rows = 8;
  mo.graphs = graphs;
  return open_model(mo);
}

}  // namespace
#endif

TEST(GraphsCuda, ModelStepsEqualUncapturedBitForBit) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  for (bool fold : {true, false}) {
    LoadedModel off = open_cuda(false), on = open_cuda(true);
    const std::vector<std::vector<float>> a = steps_and_weights(off, fold), b = steps_and_weights(on, fold);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); i++) EXPECT_TRUE(same_bits(a[i], b[i])) << "fold " << fold << ", item " << i;
    const CudaBackend& cuda = static_cast<const CudaBackend&>(*on.backend);
    EXPECT_EQ(static_cast<const CudaBackend&>(*off.backend).graph_launches(), 0);
    // 6 passes of two shapes, the pair and the unperturbed pass, each run uncaptured first (folding: the
    // pair with and without a fold held, the unperturbed pass with); later ones update its executable graph
    EXPECT_EQ(cuda.graph_launches(), fold ? 3 : 4) << "fold " << fold;
    EXPECT_EQ(cuda.graph_instantiations(), fold ? 3 : 2) << "fold " << fold;
    if (fold) EXPECT_EQ(cuda.held_updates().folded, static_cast<const CudaBackend&>(*off.backend).held_updates().folded);
    if (fold) EXPECT_GT(cuda.held_updates().folded, 0);
    EXPECT_FALSE(same_bits(a[1], a[3])) << "the weights did not move between steps";
  }
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

#ifdef SMEZO_WITH_CUDA
namespace {

TrainOptions graphs_run_options() {
  TrainOptions o;
  o.model_path = default_model_path();
  o.device = DEVICE_CUDA;
  o.dtype = DTYPE_BF16;
  o.task = "sst2";
  o.n_train = 16;
  o.n_dev = 2;
  o.skip_test = true;
  o.max_len = 40;
  o.batch = 2;
  o.steps = 3;
  o.eval_every = 2;
  o.flush_every = 1;
  o.progress_every = 1000;
  o.spsa.method = METHOD_SMEZO;
  o.spsa.sparsity = 0.5;
  o.spsa.lr = 2e-3f;
  return o;
}

// The seed log's records (its header differs: it records the graphs setting).
std::string seed_log_records(const std::string& path) {
  std::string text;
  for (const auto& r : seed_log_read(path).records) text += seed_log_format_record(r);
  return text;
}

void expect_graphs_on_equals_off(TrainOptions o, const std::string& what) {
  const std::string dir = smezo_test::make_temp_dir("cuda_graphs");
  for (bool graphs : {true, false}) {
    o.graphs = graphs;
    o.out_dir = dir + (graphs ? "/on" : "/off");
    const TrainResult r = train(o);
    EXPECT_EQ(r.checkpoint_error, "") << what;
    const nlohmann::json header = seed_log_read(o.out_dir + "/seed_log.txt").header;
    EXPECT_EQ(header["graphs"], graphs ? "on" : "off") << what;
    EXPECT_EQ(smezo_test::read_json(o.out_dir + "/summary.json")["graphs"], graphs ? "on" : "off") << what;
  }
  for (const char* file : {"metrics.jsonl", "checkpoint/model.safetensors"})
    EXPECT_EQ(read_file(dir + "/on/" + file), read_file(dir + "/off/" + file)) << what << ": " << file;
  EXPECT_EQ(seed_log_records(dir + "/on/seed_log.txt"), seed_log_records(dir + "/off/seed_log.txt")) << what;
}

}  // namespace
#endif

TEST(GraphsCuda, TrainingEqualsGraphsOffBitForBit) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  TrainOptions o = graphs_run_options();
  o.accumulate = 2;
  expect_graphs_on_equals_off(o, "smezo gaussian pair, fold on, accumulate 2");
  o = graphs_run_options();
  o.spsa.noise = NOISE_SIGN;
  o.fold_update = false;
  o.probe_passes = PROBES_SEPARATE;
  expect_graphs_on_equals_off(o, "smezo sign noise, fold off, probes separate");
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}
