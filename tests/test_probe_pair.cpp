// The probe pair (Probe::pair): the + and - probes of an SPSA step in one pass,
// the two batches side by side, each weight's noise generated once for both. On the CPU every
// number must equal the two separate probes' bit for bit: the linear on fresh random inputs
// (poisoned, guarded outputs), a model forward (LLaMA and OPT layouts: biases, LayerNorm,
// learned positions), and training runs (losses, seed logs and final weights) for MeZO,
// S-MeZO and R-MeZO with the dense embeddings/norms tuned too. Also: the GPU linear's path
// dispatcher and scratch plan (cuda/cuda_plan.h), pure functions tested here. (On
// CUDA the halves equal separate probes within the GEMM tolerance, not bit for bit:
// tests/test_backend_ops.cu, LinearProbePairMatchesSeparateProbes.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cuda/cuda_plan.h"
#include "model/model.h"
#include "model_fixture.h"
#include "run/metrics_log.h"
#include "setup/model_setup.h"
#include "smezo/train.h"
#include "test_util.h"
#include "train/spsa.h"

using namespace smezo;
using smezo_test::host_param;
using smezo_test::kPoison;
using smezo_test::linear_weight_info;
using smezo_test::PoisonedBuffer;
using smezo_test::random_floats;
using smezo_test::same_bits;
using smezo_test::tiny_opt_config;

// CpuBackend::linear under a pair: each row half equals the single-probe call on it, for the
// OpenBLAS path and the reference loops (K = 1 takes no sgemm scheme), every mask kind and
// noise kind, trainable and frozen weights, with a perturbed bias.
TEST(ProbePair, LinearHalvesEqualSingleProbes) {
  struct Shape {
    int64_t Mh, N, K;
  };
  int checked = 0;
  for (Shape s : {Shape{7, 200, 96}, Shape{150, 800, 64}, Shape{3, 5, 1}}) {
    for (MaskKind mask : {MASK_DENSE, MASK_MAGNITUDE, MASK_RANDOM}) {
      for (NoiseKind noise : {NOISE_GAUSSIAN, NOISE_GAUSSIAN_V1, NOISE_RADEMACHER, NOISE_SIGN}) {
        for (bool trainable : {true, false}) {
          const uint32_t seed = static_cast<uint32_t>(100 + checked);
          std::vector<float> wd = random_floats(s.N * s.K, seed), bd = random_floats(s.N, seed + 1);
          Param w = host_param(wd, s.N, s.K, linear_weight_info(3));
          Param b = host_param(bd, 1, s.N, linear_weight_info(4));
          b.info.is_linear = false;
          w.info.mask = mask;
          w.info.threshold = 0.5f;
          w.info.keep_prob = 0.6f;
          w.info.mask_seed = 77;
          w.info.noise = b.info.noise = noise;
          w.info.trainable = trainable;
          std::vector<float> x = random_floats(2 * s.Mh * s.K, seed + 2);
          Tensor in;
          in.data = x.data();
          in.rows = 2 * s.Mh;
          in.cols = s.K;
          const Probe pair{3e-2f, 991 + static_cast<uint64_t>(checked), true};
          CpuBackend be;
          PoisonedBuffer both(2 * s.Mh, s.N), plus(s.Mh, s.N), minus(s.Mh, s.N);
          be.linear(both.t, in, w, &b, pair);
          be.linear(plus.t, tensor_rows(in, 0, s.Mh), w, &b, half_probe(pair, +1));
          be.linear(minus.t, tensor_rows(in, s.Mh, s.Mh), w, &b, half_probe(pair, -1));
          EXPECT_TRUE(both.guards_intact() && plus.guards_intact() && minus.guards_intact());
          EXPECT_TRUE(same_bits(both.rows(0, s.Mh), plus.rows(0, s.Mh))) << s.N << "x" << s.K << " mask " << mask;
          EXPECT_TRUE(same_bits(both.rows(s.Mh, s.Mh), minus.rows(0, s.Mh))) << s.N << "x" << s.K << " mask " << mask;
          // and the halves differ where the probe does anything (no test that cannot fail)
          if (trainable) {
            EXPECT_FALSE(same_bits(plus.rows(0, s.Mh), minus.rows(0, s.Mh)));
          }
          checked++;
        }
      }
    }
  }
  EXPECT_EQ(checked, 72);  // 3 shapes x 3 masks x 4 noise kinds x trainable or not
}

TEST(ProbePair, ReadParamPairEqualsTwoReads) {
  std::vector<float> wd = random_floats(300001, 5);
  Param p = host_param(wd, 1, 300001, linear_weight_info(9));
  p.info.mask = MASK_RANDOM;
  p.info.keep_prob = 0.3f;
  p.info.mask_seed = 4;
  const Probe pair{1e-2f, 42, true};
  std::vector<float> a(299990, kPoison), b(299990, kPoison), pa(299990, kPoison), mb(299990, kPoison);
  cpu_read_param_pair(p, pair, 7, 299990, a.data(), b.data());
  cpu_read_param(p, half_probe(pair, +1), 7, 299990, pa.data());
  cpu_read_param(p, half_probe(pair, -1), 7, 299990, mb.data());
  EXPECT_TRUE(same_bits(a, pa));
  EXPECT_TRUE(same_bits(b, mb));
}

// Model::forward under a pair: logits of the + rows equal forward under +scale, the - rows
// forward under -scale (embeddings, norms and LayerNorm biases, learned positions, linears
// with biases, Qwen3's q/k norms over the per-head view, all perturbed densely: nothing here is frozen).
TEST(ProbePair, ForwardHalvesEqualSingleProbes) {
  ModelConfig llama = smezo_test::tiny_llama_config();
  ModelConfig qwen = llama;  // q/k/v biases, q/k norms, Llama 3 scaling: every newer feature at once
  qwen.family = "qwen3";
  qwen.qk_norm = qwen.qkv_bias = qwen.o_bias = true;
  qwen.rope_scaling.kind = ROPE_SCALING_LLAMA3;
  qwen.rope_scaling.factor = 4.0f;
  qwen.rope_scaling.original_max_positions = 16;
  for (const ModelConfig& c : {llama, tiny_opt_config(), qwen}) {
    CpuBackend be;
    Model m(smezo_test::random_weight_source(c, 23), be, DTYPE_F32, 64, 32);
    for (Param* p : m.params()) p->info.noise = NOISE_GAUSSIAN;
    ForwardBatch b;
    for (int64_t len : {9, 5, 12}) {
      b.seq_lens.push_back(len);
      for (int64_t i = 0; i < len; i++) b.tokens.push_back(static_cast<int32_t>((i * 7 + len) % c.vocab_size));
    }
    b.logit_rows = {0, 8, 9, 13, 20, 25};
    const Probe pair{2e-2f, 5, true};
    std::vector<float> both, plus, minus, plain;
    m.forward(b, pair, &both);
    m.forward(b, half_probe(pair, +1), &plus);
    m.forward(b, half_probe(pair, -1), &minus);
    m.forward(b, Probe{}, &plain);
    const size_t half = plus.size();
    ASSERT_EQ(both.size(), 2 * half);
    EXPECT_TRUE(same_bits(std::vector<float>(both.begin(), both.begin() + half), plus)) << c.family;
    EXPECT_TRUE(same_bits(std::vector<float>(both.begin() + half, both.end()), minus)) << c.family;
    EXPECT_FALSE(same_bits(plus, plain));
    EXPECT_FALSE(same_bits(plus, minus));
  }
}

namespace {

struct RunOutcome {
  std::vector<double> loss_plus, loss_minus;
  std::vector<float> weights;  // every parameter after the run, canonical order
};

RunOutcome train_run(Method method, bool pair, const std::string& task, const std::string& dir) {
  TrainOptions o;
  o.model_path = default_model_path();
  o.task = task;
  o.n_train = 32;
  o.n_dev = 0;
  o.max_len = 48;
  o.batch = 4;
  o.steps = 5;
  o.eval_every = 0;
  o.skip_test = true;
  o.progress_every = 1000;
  o.max_tokens = 64;  // several chunks per probe, so chunking is exercised too
  o.probe_passes = pair ? PROBES_PAIR : PROBES_SEPARATE;
  o.spsa.method = method;
  o.spsa.sparsity = method == METHOD_MEZO ? 0.0 : 0.5;
  o.spsa.lr = 2e-3f;
  o.spsa.weight_decay = 0.01f;
  o.out_dir = dir;
  train(o);
  RunOutcome r;
  for (const nlohmann::json& rec : metrics_log_read(dir + "/metrics.jsonl")) {
    if (!rec.contains("loss_plus")) continue;
    r.loss_plus.push_back(rec["loss_plus"].get<double>());
    r.loss_minus.push_back(rec["loss_minus"].get<double>());
  }
  LoadedModel lm = open_model_paths(dir + "/checkpoint", "", DEVICE_CPU, 1, 1);
  for (const Param* p : lm.model->params()) r.weights.insert(r.weights.end(), p->w.f32(), p->w.f32() + p->w.numel());
  return r;
}

}  // namespace

// Training with the pair equals training with two passes, bit for bit: every step's l+ and l-
// (so every g) and the final weights, for each method, on a classification task and on a
// gold-token task (COPA), with weight decay and the dense non-linear parameters tuned.
TEST(ProbePair, TrainingEqualsSeparateProbesBitForBit) {
  for (Method method : {METHOD_MEZO, METHOD_SMEZO, METHOD_RMEZO}) {
    for (const char* task : {"sst2", "copa"}) {
      if (method != METHOD_SMEZO && std::string(task) == "copa") continue;
      const std::string dir = smezo_test::make_temp_dir("probe_pair");
      const RunOutcome a = train_run(method, true, task, dir + "/pair");
      const RunOutcome b = train_run(method, false, task, dir + "/separate");
      ASSERT_EQ(a.loss_plus.size(), 5u);
      EXPECT_EQ(a.loss_plus, b.loss_plus) << method_name(method) << " " << task;
      EXPECT_EQ(a.loss_minus, b.loss_minus) << method_name(method) << " " << task;
      EXPECT_NE(a.loss_plus, a.loss_minus);
      EXPECT_TRUE(same_bits(a.weights, b.weights)) << method_name(method) << " " << task;
      const nlohmann::json summary = nlohmann::json::parse(smezo_test::read_file(dir + "/pair/summary.json"));
      EXPECT_EQ(summary["probes"], "pair");
      EXPECT_EQ(summary["noise"], "gaussian");
    }
  }
}

// ---- the GPU linear's dispatcher

TEST(LinearDispatch, ChoosesByShape) {
  LinearCall c;
  c.n = 4096;
  c.k = 4096;
  c.rows_per_probe = 16;
  c.storage = DTYPE_BF16;
  // unperturbed: cuBLAS on W whatever the rest
  EXPECT_EQ(linear_path_choose(c), LINEAR_GEMM);
  c.pair = true;
  EXPECT_EQ(linear_path_choose(c), LINEAR_GEMM);
  // a pair materialises both copies at once
  c.perturbed = true;
  EXPECT_EQ(linear_path_choose(c), LINEAR_MATERIALISE_PAIR);
  c.pair = false;
  EXPECT_EQ(linear_path_choose(c), LINEAR_MATERIALISE);
  // the largest heads too (one noise generation): LLaMA-3's 2 x 128256 x 4096 x 2 B = 2.1 GB of
  // copies and OPT-30B's 50272 x 7168 are formed block by block, and the pair's blocks ask no
  // more scratch than a single probe's, apart from x of the second half
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{128256, 4096}, {50272, 7168}}) {
    c.n = n;
    c.k = k;
    c.pair = true;
    EXPECT_EQ(linear_path_choose(c), LINEAR_MATERIALISE_PAIR) << n << " x " << k;
    const LinearScratch pair = linear_scratch_plan(c, LINEAR_MATERIALISE_PAIR);
    c.pair = false;
    const LinearScratch single = linear_scratch_plan(c, LINEAR_MATERIALISE);
    EXPECT_LE(pair.copies * pair.w_bytes, single.w_bytes) << n << " x " << k;
    EXPECT_LE(pair.total(), (int64_t(64) << 20) + pair.x_bytes) << n << " x " << k;
    EXPECT_EQ(pair.x_bytes, 2 * single.x_bytes) << n << " x " << k;
  }
  EXPECT_STREQ(linear_path_name(LINEAR_MATERIALISE_PAIR), "materialise-pair");
}

// The scratch CudaBackend::linear requests (and model/memory_estimate.cpp counts): the row
// blocks of W' within kCudaWeightChunkBytes, two copies for a pair, x in 16 bits.
TEST(LinearDispatch, ScratchPlanBlocksTheWeightAndCountsBothCopiesOfAPair) {
  LinearCall c;
  c.n = 4101;
  c.k = 4096;
  c.rows_per_probe = 3;
  c.perturbed = true;
  c.storage = DTYPE_BF16;
  // single probe: 8192 rows of 8 KiB fit 64 MiB, so all 4101 in one block
  LinearScratch s = linear_scratch_plan(c, LINEAR_MATERIALISE);
  EXPECT_EQ(s.block_rows, 4101);
  EXPECT_EQ(s.copies, 1);
  EXPECT_EQ(s.w_bytes, 4101LL * 8192);  // multiples of 256 already
  EXPECT_EQ(s.x_bytes, 3 * 4096 * 2);
  EXPECT_EQ(s.total(), s.w_bytes + s.x_bytes);
  // the pair: two copies of 4096-row blocks (2 blocks: 4096 + 5 rows), x of both halves
  c.pair = true;
  s = linear_scratch_plan(c, LINEAR_MATERIALISE_PAIR);
  EXPECT_EQ(s.block_rows, 4096);
  EXPECT_EQ(s.copies, 2);
  EXPECT_EQ(s.w_bytes, 4096LL * 8192);
  EXPECT_EQ(s.x_bytes, 6 * 4096 * 2);
  EXPECT_EQ(s.total(), (int64_t(64) << 20) + 6 * 4096 * 2);
  // f32: no copy of x; a pair's blocks are 2048 rows (3 blocks: 2048 + 2048 + 5)
  c.storage = DTYPE_F32;
  s = linear_scratch_plan(c, LINEAR_MATERIALISE_PAIR);
  EXPECT_EQ(s.block_rows, 2048);
  EXPECT_EQ(s.x_bytes, 0);
  EXPECT_EQ(s.total(), int64_t(64) << 20);
  // a small weight (1536 x 576 bf16, 1.7 MB) fits whole, twice for a pair
  c.storage = DTYPE_BF16;
  c.n = 1536;
  c.k = 576;
  c.rows_per_probe = 32;
  s = linear_scratch_plan(c, LINEAR_MATERIALISE_PAIR);
  EXPECT_EQ(s.block_rows, 1536);
  EXPECT_EQ(s.total(), 2 * 1536 * 576 * 2 + 64 * 576 * 2);
  // unperturbed: x only (both halves of a pair)
  s = linear_scratch_plan(c, LINEAR_GEMM);
  EXPECT_EQ(s.block_rows, 0);
  EXPECT_EQ(s.total(), 64 * 576 * 2);
  // a row wider than an eighth of the chunk: blocks of 8 rows, never fewer
  c.k = int64_t(8) << 20;
  c.n = 100;
  s = linear_scratch_plan(c, LINEAR_MATERIALISE_PAIR);
  EXPECT_EQ(s.block_rows, 8);
}

// --linear-path (LinearPathMode): wprime keeps the materialising paths, fused takes the fused
// kernel for every perturbed call (never for an unperturbed one), auto takes it only where the
// measured crossover table has a row for the call; the real table is empty until a GPU has
// timed the kernel, so auto is wprime today. The fused path asks no scratch.
TEST(LinearDispatch, LinearPathModeAndTheCrossoverTable) {
  LinearCall c;
  c.n = 4096;
  c.k = 4096;
  c.rows_per_probe = 16;
  c.storage = DTYPE_BF16;
  c.pair = true;
  c.mode = LINEAR_MODE_FUSED;
  EXPECT_EQ(linear_path_choose(c), LINEAR_GEMM);  // unperturbed: the mode does not matter
  c.perturbed = true;
  EXPECT_EQ(linear_path_choose(c), LINEAR_FUSED);
  c.mode = LINEAR_MODE_WPRIME;
  EXPECT_EQ(linear_path_choose(c), LINEAR_MATERIALISE_PAIR);
  c.mode = LINEAR_MODE_AUTO;
  EXPECT_TRUE(fused_crossover_table().empty()) << "a measured table needs its RESULTS.md row and this test updated";
  EXPECT_EQ(linear_path_choose(c), LINEAR_MATERIALISE_PAIR);
  // a measured win: bf16 pairs of <= 64 rows per probe on weights of >= 2^20 elements
  const std::vector<FusedCrossoverRow> table = {{DTYPE_BF16, true, 64, int64_t(1) << 20}};
  EXPECT_EQ(linear_path_choose(c, table), LINEAR_FUSED);
  c.rows_per_probe = 65;
  EXPECT_EQ(linear_path_choose(c, table), LINEAR_MATERIALISE_PAIR);
  c.rows_per_probe = 64;
  c.pair = false;
  EXPECT_EQ(linear_path_choose(c, table), LINEAR_MATERIALISE);
  c.pair = true;
  c.storage = DTYPE_F16;
  EXPECT_EQ(linear_path_choose(c, table), LINEAR_MATERIALISE_PAIR);
  c.storage = DTYPE_BF16;
  c.n = 200;  // 200 x 4096 < 2^20 elements
  EXPECT_EQ(linear_path_choose(c, table), LINEAR_MATERIALISE_PAIR);
  c.mode = LINEAR_MODE_WPRIME;
  c.n = 4096;
  EXPECT_EQ(linear_path_choose(c, table), LINEAR_MATERIALISE_PAIR);  // wprime ignores the table
  const LinearScratch s = linear_scratch_plan(c, LINEAR_FUSED);
  EXPECT_EQ(s.total(), 0);
  EXPECT_STREQ(linear_path_name(LINEAR_FUSED), "fused");
  EXPECT_EQ(enum_find(linear_mode_names(), "fused"), LINEAR_MODE_FUSED);
  EXPECT_EQ(enum_find(linear_mode_names(), "wprime"), LINEAR_MODE_WPRIME);
  EXPECT_EQ(enum_find(linear_mode_names(), "cublas"), std::nullopt);
}

// The CPU backend has one linear path: --linear-path auto and wprime are accepted, fused is
// refused with a hint, and an unknown value is refused for every device.
TEST(LinearDispatch, CpuBackendRefusesTheFusedPath) {
  EXPECT_NE(make_backend(DEVICE_CPU, LINEAR_MODE_AUTO), nullptr);
  EXPECT_NE(make_backend(DEVICE_CPU, LINEAR_MODE_WPRIME), nullptr);
  EXPECT_THROW_MSG(make_backend(DEVICE_CPU, LINEAR_MODE_FUSED), "--linear-path fused: the CPU backend has one linear path");
  EXPECT_THROW_MSG(make_backend(DEVICE_CPU, static_cast<LinearPathMode>(7)), "unknown linear path 7");
  EXPECT_THROW_MSG(make_backend(DEVICE_CUDA, static_cast<LinearPathMode>(7)), "unknown linear path 7");
}
