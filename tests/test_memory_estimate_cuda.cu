// The memory estimate (model/memory_estimate.h) against what the CUDA backend really holds:
// SmolLM2-135M's shapes loaded on a CudaBackend, then one probe-pair forward that fills the
// workspace (the training step's largest scratch demand). The tensors (weights + the Model's
// workspace) must equal CudaBackend::bytes_allocated() and the scratch term the scratch
// buffer's size (CudaBackend::scratch_capacity(), its high-water mark: the pair's two copies
// of the tied LM head's W' block plus x in 16 bits). The CPU-side formula is tested in
// tests/test_memory_estimate.cpp. Skips with "no CUDA device: skipped" where no GPU is present.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "../cuda/cuda_backend.h"
#include "../cuda/cuda_check.h"
#include "bench/model_bench.h"
#include "model/memory_estimate.h"
#include "model/model.h"
#include "model_fixture.h"

using namespace smezo;

namespace {

// `seqs` sequences of `len` random tokens, the last `rows_per_seq` rows of each asking for
// logits.
ForwardBatch random_batch(int64_t seqs, int64_t len, int64_t rows_per_seq, int64_t vocab) {
  ForwardBatch b;
  uint32_t t = 12345;
  for (int64_t s = 0; s < seqs; s++) {
    b.seq_lens.push_back(len);
    for (int64_t i = 0; i < len; i++) {
      t = t * 1664525u + 1013904223u;
      b.tokens.push_back(static_cast<int32_t>((t >> 8) % vocab));
      if (i >= len - rows_per_seq) b.logit_rows.push_back(s * len + i);
    }
  }
  return b;
}

}  // namespace

// bf16 storage (the CUDA default) with all 30 layers on a GPU; f32 storage, and bf16 when
// emulated, with 2 layers of the same shapes (the scratch depends on the layer shapes and the
// LM head, not on their number, and the emulated run stays short). The weights come as f32 host tensors, so bf16 storage converts
// them through the load's 64 MiB staging chunk (estimated as 64 MiB + 256 B); the pair's LM
// head (2 x 29120 rows x 1152 B + 16 x 576 x 2 B) is larger by 1792 B and sets the mark.
TEST(MemoryEstimateCuda, EqualsWhatTheCudaBackendHoldsAfterAPairStepOfSmolLM2) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  for (DType storage : {DTYPE_BF16, DTYPE_F32}) {
    SCOPED_TRACE(dtype_name(storage));
    ModelConfig c = model_bench_shape("smollm2-135m");
    if (storage == DTYPE_F32 || cuda_running_emulated()) c.n_layers = 2;
    // batch 4 x 16 tokens: 64 token rows, 16 logit rows; a pair of 2 sequences per probe
    // fills both
    const WorkspaceRows ws = workspace_for_batch(4, 16, 8192);
    ASSERT_EQ(ws.tokens, 64);
    ASSERT_EQ(ws.logit_rows, 16);
    CudaBackend gpu;
    const MemoryEstimate e = estimate_model_memory(c, storage, ws, gpu.memory_plan());
    {
      const WeightSource src = smezo_test::random_weight_source(c, 3, 0.02f);
      Model model(src, gpu, storage, ws.tokens, ws.logit_rows);
      EXPECT_EQ(gpu.bytes_allocated(), e.weights + e.activations);
      EXPECT_LE(gpu.scratch_capacity(), e.scratch) << "after the load";

      const ForwardBatch batch = random_batch(2, 16, 4, c.vocab_size);  // 32 tokens, 8 logit rows
      const Probe pair{1e-3f, 77, true};
      ASSERT_EQ(static_cast<int64_t>(batch.tokens.size()), model.batch_tokens_capacity(pair));
      ASSERT_EQ(static_cast<int64_t>(batch.logit_rows.size()), model.batch_logit_rows_capacity(pair));
      std::vector<float> logits;
      model.forward(batch, pair, &logits);
      EXPECT_EQ(gpu.scratch_capacity(), e.scratch) << "after a probe-pair forward";
      if (storage == DTYPE_BF16) {
        EXPECT_EQ(e.scratch, 2 * 29120LL * 576 * 2 + 16 * 576 * 2);
      }

      // a single probe over the whole workspace asks for no more
      const ForwardBatch single = random_batch(4, 16, 4, c.vocab_size);
      model.forward(single, Probe{1e-3f, 78}, &logits);
      EXPECT_EQ(gpu.scratch_capacity(), e.scratch) << "after a single-probe forward";
      EXPECT_EQ(gpu.bytes_allocated(), e.weights + e.activations) << "nothing allocated per step";
    }
  }
}
