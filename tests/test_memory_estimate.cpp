// The backend-memory estimate (model/memory_estimate.h): the formula at LLaMA-7B's shape
// (worked out by hand below), the probe pair's scratch (SmolLM2-135M's shapes), its agreement
// with what Model really allocates on the CPU backend (on the CUDA backend:
// tests/test_memory_estimate_cuda.cu), the one-line refusal when the backend has too little
// free memory (faked through require_memory_fits and through a backend whose
// free_memory_bytes() lies), and `smezo info`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "bench/model_bench.h"
#include "common/check.h"
#include "cpu/cpu_backend.h"
#include "cuda/cuda_plan.h"
#include "model/memory_estimate.h"
#include "model/model.h"
#include "model/model_params.h"
#include "model_fixture.h"
#include "setup/model_setup.h"
#include "test_util.h"

using namespace smezo;

namespace {

ModelConfig llama7b_config() {
  ModelConfig c;
  c.family = "llama";
  c.dim = 4096;
  c.hidden_dim = 11008;
  c.n_layers = 32;
  c.n_heads = 32;
  c.n_kv_heads = 32;
  c.head_dim = 128;
  c.vocab_size = 32000;
  c.max_seq_len = 2048;
  c.tied_lm_head = false;
  return c;
}

// A CPU backend that reports `free` bytes free.
class SmallCpuBackend : public CpuBackend {
 public:
  explicit SmallCpuBackend(int64_t free) : free_(free) {}
  int64_t free_memory_bytes() const override { return free_; }

 private:
  int64_t free_;
};

}  // namespace

TEST(MemoryEstimate, WorkspaceIsSizedFromTheBatch) {
  WorkspaceRows w = workspace_for_batch(16, 256, 8192);
  EXPECT_EQ(w.tokens, 16 * 256);
  EXPECT_EQ(w.logit_rows, 256);
  w = workspace_for_batch(64, 256, 8192);  // capped: bigger batches run in chunks
  EXPECT_EQ(w.tokens, 8192);
  w = workspace_for_batch(1, 300, 128);  // at least one whole sequence
  EXPECT_EQ(w.tokens, 300);
  EXPECT_EQ(w.logit_rows, 300);
  EXPECT_EQ(workspace_for_batch(512, 8, 1 << 20).logit_rows, 1024);
}

// LLaMA-7B, bf16, batch 16, T 256 on CUDA: weights 13.48 GB, everything else under 1 GB.
TEST(MemoryEstimate, Llama7bBf16Batch16Len256FitsWeightsPlusOneGB) {
  const MemoryEstimate e =
      estimate_model_memory(llama7b_config(), DTYPE_BF16, workspace_for_batch(16, 256, 8192), cuda_memory_plan());
  EXPECT_EQ(e.weights, 6738415616LL * 2);  // the published 7B parameter count
  const int64_t M = 4096, R = 256;
  // x, xn, q, att, k, v (4096 wide), h_gate, h_up (11008), last, logits
  EXPECT_EQ(e.activations, (6 * M * 4096 + 2 * M * 11008 + R * 4096 + R * 32000) * 4);
  // down_proj: a 64 MiB block of W' (3048 rows of 11008 bf16) + x (4096 x 11008) in bf16
  EXPECT_EQ(e.scratch, 3048LL * 11008 * 2 + M * 11008 * 2);
  EXPECT_EQ(e.library, (int64_t(32) << 20) + (int64_t(4) << 20));
  EXPECT_EQ(e.total, e.weights + e.activations + e.scratch + e.library);
  EXPECT_LE(e.total - e.weights, 1000000000LL) << describe_memory_estimate(e);
  std::printf("LLaMA-7B bf16, batch 16, T 256: %s\n", describe_memory_estimate(e).c_str());

  // fp32 storage needs no 16-bit copy of x; W' blocks are half as many rows: gate/up_proj and
  // the LM head take 64 MiB blocks (4096 rows single, 2 x 2048 rows for a pair), and loading a
  // 16-bit checkpoint stages 64 MiB chunks after a 256-byte slot (cuda/upload_stored.cu),
  // which is the larger by those 256 bytes.
  const MemoryEstimate f =
      estimate_model_memory(llama7b_config(), DTYPE_F32, workspace_for_batch(16, 256, 8192), cuda_memory_plan());
  EXPECT_EQ(f.weights, 6738415616LL * 4);
  EXPECT_EQ(f.scratch, 256 + 4096LL * 4096 * 4);
}

// A probe pair holds W+ and W- in scratch together (cuda/linear.cu): a weight of at most
// 32 MiB takes twice its size, a larger one shares the 64 MiB blocks between its two copies.
TEST(MemoryEstimate, ProbePairScratchHoldsTwoCopiesOfTheWeight) {
  // SmolLM2-135M, bf16, batch 4 x 16 tokens: 64 token rows, 16 logit rows. The tied LM head
  // (49152 x 576, 54 MiB) is the largest demand: as a pair, blocks of 29120 rows (the most
  // 8-row groups whose two copies fit 64 MiB) in two copies, plus x (16 x 576) in bf16. A
  // single probe would take its 49152 rows in one block: 56623104 + 18432 bytes.
  const ModelConfig smol = model_bench_shape("smollm2-135m");
  const WorkspaceRows ws = workspace_for_batch(4, 16, 8192);
  ASSERT_EQ(ws.tokens, 64);
  ASSERT_EQ(ws.logit_rows, 16);
  const MemoryEstimate e = estimate_model_memory(smol, DTYPE_BF16, ws, cuda_memory_plan());
  EXPECT_EQ(e.scratch, 2 * 29120LL * 576 * 2 + 16 * 576 * 2);

  // A model whose largest demand is a group of small weights (CudaBackend::linear_group): gate|up
  // (4096 x 1024 each, 8 MiB in bf16) in two copies each, plus x (8 x 1024) in bf16; alone, down_proj
  // (1024 x 4096) would ask 2 x 8 MiB + x (8 x 4096). Before the pair was counted this said 8 MiB +
  // 64 KiB, a quarter of what the backend asks for.
  ModelConfig c = llama7b_config();
  c.dim = 1024;
  c.hidden_dim = 4096;
  c.n_layers = 2;
  c.n_heads = c.n_kv_heads = 8;
  c.vocab_size = 1000;
  const MemoryEstimate small = estimate_model_memory(c, DTYPE_BF16, WorkspaceRows{8, 8}, cuda_memory_plan());
  EXPECT_EQ(small.scratch, 2 * 2 * 4096LL * 1024 * 2 + 8 * 1024 * 2);
}

// The formula counts exactly what Model allocates (weights + workspace) on the CPU backend.
TEST(MemoryEstimate, MatchesWhatTheCpuBackendAllocates) {
  for (bool tied : {false, true}) {
    ModelConfig c = smezo_test::tiny_llama_config();
    c.tied_lm_head = tied;
    WeightSource src = smezo_test::random_weight_source(c, 5, 0.1f);
    CpuBackend backend;
    const WorkspaceRows ws = workspace_for_batch(3, 20, 8192);
    Model model(src, backend, DTYPE_F32, ws.tokens, ws.logit_rows);
    const MemoryEstimate e = estimate_model_memory(c, DTYPE_F32, ws, cpu_memory_plan());
    EXPECT_EQ(e.weights + e.activations, backend.bytes_allocated()) << "tied " << tied;
  }
}

// --tune lora and --tune prefix: the adapters and their workspace, counted exactly (the
// prefix: for workspaces with fewer logit rows than tokens and more; OPT's biases are no target).
TEST(MemoryEstimate, CountsLoraAndPrefixAsTheCpuBackendAllocates) {
  for (const WorkspaceRows ws : {workspace_for_batch(3, 20, 8192), WorkspaceRows{40, 70}}) {
    ModelConfig c = smezo_test::tiny_llama_config();
    WeightSource src = smezo_test::random_weight_source(c, 5, 0.1f);
    TunedAdapters lora;
    lora.lora_rank = 3;
    lora.lora_targets = lora_targets_parse("q,v,gate,down");
    CpuBackend a;
    Model adapted(src, a, DTYPE_F32, ws.tokens, ws.logit_rows);
    adapted.add_lora(LoraOptions{3, 6.0f, lora.lora_targets}, 1);
    const MemoryEstimate el = estimate_model_memory(c, DTYPE_F32, ws, cpu_memory_plan(), ModelStage{}, lora);
    EXPECT_GT(el.adapters, 0);
    EXPECT_EQ(el.weights + el.activations + el.adapters, a.bytes_allocated()) << "lora, " << ws.tokens << " tokens";
    EXPECT_EQ(el.total, estimate_model_memory(c, DTYPE_F32, ws, cpu_memory_plan()).total + el.adapters);
    EXPECT_THAT(describe_memory_estimate(el), testing::HasSubstr(" adapters = "));

    for (const ModelConfig& pc : {smezo_test::tiny_llama_config(), smezo_test::tiny_opt_config()}) {
      TunedAdapters prefix;
      prefix.prefix_tokens = 4;
      CpuBackend b;
      Model prefixed(smezo_test::random_weight_source(pc, 5, 0.1f), b, DTYPE_F32, ws.tokens, ws.logit_rows);
      prefixed.add_prefix(PrefixOptions{4}, 1);
      const MemoryEstimate ep = estimate_model_memory(pc, DTYPE_F32, ws, cpu_memory_plan(), ModelStage{}, prefix);
      EXPECT_EQ(ep.weights + ep.activations + ep.adapters, b.bytes_allocated())
          << "prefix, " << pc.family << ", " << ws.tokens << " tokens";
    }
  }
}

TEST(MemoryEstimate, RefusesInOneLineWhenTheBackendHasTooLittleFree) {
  const MemoryEstimate e =
      estimate_model_memory(llama7b_config(), DTYPE_BF16, workspace_for_batch(16, 256, 8192), cuda_memory_plan());
  EXPECT_NO_THROW(require_memory_fits(e, e.total, "cuda", "/m/llama-7b"));
  EXPECT_NO_THROW(require_memory_fits(e, -1, "cuda", "/m/llama-7b"));  // unknown: no refusal
  const std::string msg =
      smezo_test::error_of([&] { require_memory_fits(e, 12000000000LL, "cuda", "/m/llama-7b"); });
  EXPECT_THAT(msg, testing::StartsWith("model /m/llama-7b needs 14.5 GB on the cuda device, 12.0 GB free ("));
  EXPECT_THAT(msg, testing::HasSubstr("---> HINT:"));
  EXPECT_TRUE(smezo_test::is_one_line(msg));

  // Through open_model_on: the refusal comes before any weight is allocated.
  ModelOpenOptions o;
  o.model_path = default_model_path();
  o.max_tokens = 256;
  o.max_logit_rows = 64;
  const std::string open_msg =
      smezo_test::error_of([&] { open_model_on(o, std::make_unique<SmallCpuBackend>(100000)); });
  EXPECT_THAT(open_msg, testing::StartsWith("model " + default_model_path() + " needs "));
  EXPECT_THAT(open_msg, testing::HasSubstr(" on the cpu device, 100 KB free"));
  LoadedModel lm = open_model_on(o, std::make_unique<SmallCpuBackend>(int64_t(1) << 40));
  EXPECT_EQ(lm.estimate.weights + lm.estimate.activations, lm.backend->bytes_allocated());
}

TEST(MemoryEstimate, InfoPrintsTheEstimate) {
  std::string out;
  ASSERT_EQ(smezo_test::run_command(smezo_test::smezo_binary() + " info --batch 4 --max-len 64", &out), 0) << out;
  EXPECT_THAT(out, testing::HasSubstr("memory for training at batch 4, max-len 64 (256 token rows, 64 logit rows):"));
  EXPECT_THAT(out, testing::ContainsRegex("cuda BF16 +[0-9.]+ [kKMG]?B weights \\+ "));
  EXPECT_THAT(out, testing::ContainsRegex("cpu  F32  +[0-9.]+ [kKMG]?B weights \\+ "));
}
