// The folded update (src/backend/pending_updates.h, --fold-update): a linear weight's update held by
// the backend and applied inside the next step's first W' pass must give the bits of the plain update
// (Backend::update in turn, then the read): the weights, the linear's output and every loss.
//   - the backend: the first perturbed linear applies a held update once (the later passes read the
//     updated W), with every mask and noise kind, q = 1 and 3 with weight decay, single probes and
//     the pair, shapes with a partial group of 8; a linear that cannot fold (an unperturbed read,
//     the CPU's reference loops) applies it first; every other read of a held weight throws;
//   - training: fold on = fold off bit for bit (metrics, seed log, checkpoint) for each kind of pass
//     a step makes (the pair, --probes separate, --accumulate, scoring chunks, q probes, FZOO's
//     unperturbed pass) with mid-run evaluations and checkpoints, for MeZO, S-MeZO and R-MeZO;
//   - a planted missed flush: a checkpoint read of a held weight fails, and flushed it equals the
//     plain run's.
// The *Cuda* cases run the same on the CUDA backend (f32, f16, bf16 with stochastic rounding; make
// emu runs them emulated). Pipelines and data parallel: tools/checks/behaviour_record.sh (mpirun).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cpu/cpu_backend.h"
#include "model/model.h"
#include "run/metrics_log.h"
#include "setup/model_setup.h"
#include "smezo/train.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/spsa.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#endif

using namespace smezo;
using smezo_test::download;
using smezo_test::linear_weight_info;
using smezo_test::make_param;
using smezo_test::random_floats;
using smezo_test::read_file;
using smezo_test::same_bits;
using testing::HasSubstr;

namespace {

struct FoldCase {
  MaskKind mask;
  NoiseKind noise;
  bool pair;
  int q;          // updates held (probes of the step)
  int64_t Mh, N, K;  // rows per probe half, the weight's shape
};

// q updates of a step, weight decay with the first; coefficients large enough that S-MeZO entries
// cross the threshold between updates (each update's mask is read from the previous one's result).
std::vector<UpdateArgs> step_updates(int q, uint64_t seed) {
  std::vector<UpdateArgs> u;
  for (int i = 0; i < q; i++) u.push_back(UpdateArgs{0.11f * (i % 2 ? -1.0f : 1.0f) / q, i == 0 ? 0.05f : 0.0f,
                                                      seed + 1000 * static_cast<uint64_t>(i)});
  return u;
}

// One weight on each of two backends of `device`: one gets the updates plainly (update() in turn)
// then the probe's linear; the other holds them (defer_updates) and the same linear applies them.
// Then a second pass (the - probe alone) on both. Weights and outputs must agree bit for bit.
// Returns the backend that folded, for its counts.
std::unique_ptr<Backend> expect_fold_equals_plain(Device device, DType dt, bool rounding,
                                                  const FoldCase& c, uint32_t seed,
                                                  LinearPathMode linear_path = LINEAR_MODE_AUTO) {
  const std::string what = std::string(device_name(device)) + " " + dtype_name(dt) + (rounding ? "+sr" : "") + " mask " +
                           std::to_string(c.mask) + " noise " + std::to_string(c.noise) +
                           (c.pair ? " pair" : " single") + " q " + std::to_string(c.q) + " " +
                           std::to_string(c.N) + "x" + std::to_string(c.K) + " " + smezo_test::seed_note();
  std::unique_ptr<Backend> fold = make_backend(device, linear_path), plain = make_backend(device, linear_path);
  ParamInfo info = linear_weight_info(7);
  info.mask = c.mask;
  info.threshold = 0.45f;
  info.keep_prob = 0.6f;
  info.mask_seed = 99;
  info.noise = c.noise;
  info.stochastic_rounding = rounding;
  const std::vector<float> w = rounded(dt, random_floats(c.N * c.K, seed, -1.0f, 1.0f));
  const int64_t M = c.pair ? 2 * c.Mh : c.Mh;
  const std::vector<float> x = random_floats(M * c.K, seed + 1);
  const Probe probe{0.01f, smezo_test::mixed_seed(seed), c.pair};
  const std::vector<UpdateArgs> updates = step_updates(c.q, smezo_test::mixed_seed(seed + 2));
  std::vector<float> outs[2], weights[2];
  for (int b = 0; b < 2; b++) {
    Backend& be = b == 0 ? *fold : *plain;
    // W between guard rows that must come back unchanged; outputs poisoned (NaN) before the calls
    const smezo_test::GuardedTensor g = smezo_test::make_guarded(be, c.N, c.K, dt, w, seed + 3);
    Param p{g.view, info};
    const Tensor in = be.alloc(M, c.K, DTYPE_F32), out = be.alloc(M, c.N, DTYPE_F32);
    const Tensor in_h = tensor_rows(in, 0, c.Mh), out_h = be.alloc(c.Mh, c.N, DTYPE_F32);
    be.upload(in, x.data());
    const std::vector<float> poison(static_cast<size_t>(M * c.N), std::nanf(""));
    be.upload(out, poison.data());
    be.upload(out_h, poison.data());
    if (b == 0) be.defer_updates(p, updates);
    for (const UpdateArgs& u : updates)
      if (b == 1) be.update(p, u.coef, u.decay, u.seed);
    be.linear(out, in, p, nullptr, probe);  // the fold
    be.linear(out_h, in_h, p, nullptr, Probe{-probe.scale, probe.seed});  // a later pass: W as updated
    outs[b] = download(be, out);
    const std::vector<float> second = download(be, out_h);
    outs[b].insert(outs[b].end(), second.begin(), second.end());
    weights[b] = download(be, p.w);  // throws if the update were still held
    EXPECT_TRUE(same_bits(smezo_test::download_checked(be, g, what), weights[b])) << what;
  }
  EXPECT_TRUE(same_bits(weights[0], weights[1])) << what;
  EXPECT_TRUE(same_bits(outs[0], outs[1])) << what;
  EXPECT_FALSE(same_bits(weights[0], w)) << what << ": the updates moved nothing";
  return fold;
}

const std::vector<FoldCase>& fold_cases(int64_t Mh, int64_t N, int64_t K) {
  static std::vector<FoldCase> cases;
  cases.clear();
  for (MaskKind mask : {MASK_DENSE, MASK_MAGNITUDE, MASK_RANDOM})
    for (NoiseKind noise : {NOISE_GAUSSIAN, NOISE_GAUSSIAN_V1, NOISE_RADEMACHER, NOISE_SIGN})
      for (bool pair : {true, false})
        for (int q : {1, 3}) cases.push_back(FoldCase{mask, noise, pair, q, Mh, N, K});
  return cases;
}

}  // namespace

// The CPU: shapes through OpenBLAS fold, one with more than one group of 768 perturbed rows and a
// partial group of 8 at the end; a shape the reference loops take (no sgemm scheme for it with this
// OpenBLAS: cpu_linear_path) applies the update first.
TEST(FoldUpdate, CpuLinearAppliesHeldUpdatesOnceInItsWPrimePass) {
  uint32_t seed = smezo_test::base_seed();
  for (const auto& [N, K] : {std::pair<int64_t, int64_t>{801, 63}, {13, 1}}) {
    const bool folds = std::string(cpu_linear_path(N, K)) != "reference";
    for (const FoldCase& c : fold_cases(N > 100 ? 5 : 3, N, K)) {
      const std::unique_ptr<Backend> be = expect_fold_equals_plain(DEVICE_CPU, DTYPE_F32, false, c, seed++);
      const PendingUpdates& held = static_cast<CpuBackend&>(*be).held_updates();
      EXPECT_EQ(held.folded, folds ? 1 : 0) << N << "x" << K;
      EXPECT_EQ(held.settled, folds ? 0 : 1) << N << "x" << K;
      EXPECT_EQ(held.size(), 0);
    }
  }
}

// Reads that are not a step's perturbed pass: an unperturbed linear applies the held update first;
// download, upload and abs_quantile of a held weight throw (a missing flush is loud); update() and a
// second defer_updates apply the held ones first; only trainable linear weights are held.
TEST(FoldUpdate, OtherReadsOfAHeldWeightApplyItOrThrow) {
  CpuBackend be, ref;
  const std::vector<float> w = random_floats(40 * 24, 5, -1.0f, 1.0f);
  ParamInfo info = linear_weight_info(3);
  Param p = make_param(be, 40, 24, DTYPE_F32, w, info), r = make_param(ref, 40, 24, DTYPE_F32, w, info);
  const std::vector<UpdateArgs> u = step_updates(2, 77);
  be.defer_updates(p, u);
  std::vector<float> host(w.size());
  EXPECT_THROW_MSG(be.download(p.w, host.data()), "flush_updates() is missing");
  EXPECT_THROW_MSG(be.upload(p.w, w.data()), "flush_updates() is missing");
  EXPECT_THROW_MSG(be.abs_quantile(p, 0.5), "flush_updates() is missing");
  const std::vector<float> x = random_floats(6 * 24, 6);
  const Tensor in = be.alloc(6, 24, DTYPE_F32), out = be.alloc(6, 40, DTYPE_F32);
  const Tensor in_r = ref.alloc(6, 24, DTYPE_F32), out_r = ref.alloc(6, 40, DTYPE_F32);
  be.upload(in, x.data());
  ref.upload(in_r, x.data());
  be.linear(out, in, p, nullptr, Probe{});  // unperturbed: the update first
  for (const UpdateArgs& a : u) ref.update(r, a.coef, a.decay, a.seed);
  ref.linear(out_r, in_r, r, nullptr, Probe{});
  EXPECT_TRUE(same_bits(download(be, out), download(ref, out_r)));
  EXPECT_EQ(be.held_updates().settled, 1);
  // update() and a later defer_updates keep the order: the held ones first
  be.defer_updates(p, u);
  be.update(p, 0.02f, 0.0f, 5);
  be.defer_updates(p, u);
  be.defer_updates(p, step_updates(1, 9));
  be.flush_updates();
  for (const UpdateArgs& a : u) ref.update(r, a.coef, a.decay, a.seed);
  ref.update(r, 0.02f, 0.0f, 5);
  for (const UpdateArgs& a : u) ref.update(r, a.coef, a.decay, a.seed);
  for (const UpdateArgs& a : step_updates(1, 9)) ref.update(r, a.coef, a.decay, a.seed);
  EXPECT_TRUE(same_bits(download(be, p.w), download(ref, r.w)));
  // embeddings, norms, biases, adapters and frozen weights stay on the plain update
  for (int kind = 0; kind < 4; kind++) {
    Param q = make_param(be, 1, 8, DTYPE_F32, random_floats(8, 7), info);
    if (kind == 0) q.info.is_linear = false;
    if (kind == 1) q.info.adapter = ADAPTER_LORA_A;
    if (kind == 2) q.info.trainable = false;
    if (kind == 3) {
      q.info.role = ROLE_TOKEN_EMBEDDING;
      q.info.is_linear = false;
    }
    EXPECT_THROW_MSG(be.defer_updates(q, u), "only a trainable linear weight's update can be held");
  }
}

namespace {

TrainOptions fold_run_options(Device device, std::optional<DType> dtype) {
  TrainOptions o;
  o.model_path = default_model_path();
  o.device = device;
  o.dtype = dtype;
  o.task = "sst2";
  o.n_train = 32;
  o.n_dev = 8;
  o.n_test = 8;
  o.max_len = 48;
  o.batch = 4;
  o.steps = 4;
  o.eval_every = 2;        // evaluations mid-run (each flushes)
  o.checkpoint_every = 3;  // and a checkpoint at a step without one
  o.flush_every = 1;
  o.progress_every = 1000;
  o.spsa.lr = 2e-3f;
  o.spsa.weight_decay = 0.01f;
  return o;
}

// Runs o with --fold-update on and off: metrics (losses and evaluations), seed log and final
// checkpoint byte for byte, and no warning (a checkpoint that failed mid-run warns).
void expect_fold_on_equals_off(TrainOptions o, const std::string& what) {
  const std::string dir = smezo_test::make_temp_dir("fold_update");
  for (bool fold : {true, false}) {
    o.fold_update = fold;
    o.out_dir = dir + (fold ? "/on" : "/off");
    testing::internal::CaptureStderr();
    TrainResult r;
    try {
      r = train(o);
    } catch (...) {
      testing::internal::GetCapturedStderr();
      throw;
    }
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(r.checkpoint_error, "") << what;
    EXPECT_THAT(err, testing::Not(HasSubstr("warning"))) << what << (fold ? " fold on" : " fold off");
    EXPECT_EQ(smezo_test::read_json(o.out_dir + "/summary.json")["fold_update"], fold) << what;
  }
  for (const char* file : {"metrics.jsonl", "seed_log.txt", "checkpoint/model.safetensors"})
    EXPECT_EQ(read_file(dir + "/on/" + file), read_file(dir + "/off/" + file)) << what << ": " << file;
}

}  // namespace

// Every kind of pass a step makes, each with evaluations and a checkpoint mid-run.
TEST(FoldUpdate, TrainingEqualsThePlainUpdateBitForBit) {
  TrainOptions o = fold_run_options(DEVICE_CPU, std::nullopt);
  o.spsa.method = METHOD_SMEZO;
  o.spsa.sparsity = 0.5;
  o.accumulate = 2;
  o.max_tokens = 64;  // several scoring chunks per probe
  expect_fold_on_equals_off(o, "smezo pair, accumulate 2, chunks");
  o = fold_run_options(DEVICE_CPU, std::nullopt);
  o.spsa.method = METHOD_SMEZO;
  o.spsa.sparsity = 0.5;
  o.spsa.probes = 3;
  o.probe_passes = PROBES_SEPARATE;
  expect_fold_on_equals_off(o, "smezo separate, q 3");
  o = fold_run_options(DEVICE_CPU, std::nullopt);
  o.spsa.method = METHOD_MEZO;
  o.spsa.probes = 2;
  expect_fold_on_equals_off(o, "mezo pair, q 2");
  o = fold_run_options(DEVICE_CPU, std::nullopt);
  o.spsa.method = METHOD_RMEZO;
  o.spsa.sparsity = 0.5;
  expect_fold_on_equals_off(o, "rmezo pair");
  o = fold_run_options(DEVICE_CPU, std::nullopt);
  o.spsa.method = METHOD_FZOO;
  o.spsa.probes = 3;
  o.spsa.weight_decay = 0.0f;
  expect_fold_on_equals_off(o, "fzoo 3 probes");
}

namespace {

// Two S-MeZO steps on stories260K whose losses come from real forwards; `fold` as asked.
void two_steps(Model& model, bool fold) {
  SpsaOptions o;
  o.method = METHOD_SMEZO;
  o.sparsity = 0.5;
  o.lr = 1e-2f;
  SpsaOptimizer opt(model, o);
  opt.set_fold_update(fold);
  ForwardBatch batch;
  batch.tokens = {1, 5, 9, 2, 7, 3, 11, 4};
  batch.seq_lens = {8};
  batch.logit_rows = {6, 7};
  for (int64_t step = 1; step <= 2; step++) {
    std::vector<float> logits;
    model.forward(batch, opt.probes(step, true)[0], &logits);  // the pair: + rows, then - rows
    const size_t half = logits.size() / 2;
    double plus = 0, minus = 0;
    for (size_t i = 0; i < half; i++) plus += logits[i], minus += logits[half + i];
    opt.finish(step, {plus / half, minus / half});
  }
}

}  // namespace

// A planted missed flush: the checkpoint's read of a held weight fails; flushed, it equals the plain run's.
TEST(FoldUpdate, AMissedFlushBeforeACheckpointFails) {
  const std::string dir = smezo_test::make_temp_dir("fold_flush");
  LoadedModel plain = open_model_paths(default_model_path(), "", DEVICE_CPU, 32, 8);
  two_steps(*plain.model, false);
  save_hf_checkpoint(*plain.model, dir + "/plain", "");
  LoadedModel folded = open_model_paths(default_model_path(), "", DEVICE_CPU, 32, 8);
  two_steps(*folded.model, true);
  const PendingUpdates& held = static_cast<CpuBackend&>(*folded.backend).held_updates();
  EXPECT_GT(held.size(), 0);     // step 2's update, held
  EXPECT_GT(held.folded, 0);     // step 1's, applied by step 2's forward in its W' passes
  EXPECT_EQ(held.folded + held.settled, held.size());  // every linear weight once per step
  EXPECT_THROW_MSG(save_hf_checkpoint(*folded.model, dir + "/folded", ""), "flush_updates() is missing");
  folded.backend->flush_updates();
  save_hf_checkpoint(*folded.model, dir + "/folded", "");
  EXPECT_EQ(read_file(dir + "/folded/model.safetensors"), read_file(dir + "/plain/model.safetensors"));
}

// ---- CUDA (a GPU, or emulated: make emu)

TEST(FoldUpdate, CudaLinearAppliesHeldUpdatesOnceInItsWPrimePass) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  uint32_t seed = smezo_test::base_seed() + 500;
  for (DType dt : {DTYPE_F32, DTYPE_F16, DTYPE_BF16}) {
    for (bool rounding : {false, true}) {
      if (rounding && dt != DTYPE_BF16) continue;
      // 21 x 13: a partial group of 8 and, behind a guard row of 13, unaligned rows (scalar loads)
      for (const auto& [N, K] : {std::pair<int64_t, int64_t>{21, 13}, {24, 16}}) {
        for (const FoldCase& c : fold_cases(3, N, K)) {
          const std::unique_ptr<Backend> be = expect_fold_equals_plain(DEVICE_CUDA, dt, rounding, c, seed++);
          const PendingUpdates& held = static_cast<CudaBackend&>(*be).held_updates();
          EXPECT_EQ(held.folded, 1);
          EXPECT_EQ(held.settled, 0);
        }
      }
      // --linear-path fused does not fold: the held update is applied by update() before it
      for (const FoldCase& c : {FoldCase{MASK_MAGNITUDE, NOISE_GAUSSIAN, true, 3, 4, 40, 32},
                                FoldCase{MASK_DENSE, NOISE_RADEMACHER, false, 1, 3, 24, 16}}) {
        const std::unique_ptr<Backend> be = expect_fold_equals_plain(DEVICE_CUDA, dt, rounding, c, seed++, LINEAR_MODE_FUSED);
        const PendingUpdates& held = static_cast<CudaBackend&>(*be).held_updates();
        EXPECT_EQ(held.folded, 0);
        EXPECT_EQ(held.settled, 1);
      }
    }
  }
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

TEST(FoldUpdate, TrainingOnCudaEqualsThePlainUpdateBitForBit) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  // The pair's W' passes, a second minibatch's, rounding to bf16 in the fold; short, emulated CUDA
  // being slow: a checkpoint after step 1, the final evaluation after step 2. (The f32 fold against
  // the CPU's plain update: determinism_check.sh's CPU replay of an emulated --device cuda run.)
  TrainOptions o = fold_run_options(DEVICE_CUDA, DTYPE_BF16);
  o.steps = 2;
  o.batch = 2;
  o.n_dev = 2;
  o.skip_test = true;
  o.checkpoint_every = 1;
  o.accumulate = 2;
  o.spsa.method = METHOD_SMEZO;
  o.spsa.sparsity = 0.5;
  o.spsa.stochastic_rounding = true;
  expect_fold_on_equals_off(o, "cuda bf16 smezo pair, accumulate 2, stochastic rounding");
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}
