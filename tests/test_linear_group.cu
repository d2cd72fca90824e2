// CudaBackend::linear_group (cuda/linear.cu): the model's groups of linears over one input (q|k|v;
// q|k|v under GQA, k and v fewer rows than q; gate|up), each W' formed whole with its own noise key
// and held updates, then one cublasGemmBatchedEx per distinct N. Against linear() item by item on
// the same backend, from twin parameter sets with the same values: outputs bit for bit, and after
// a fold both sets' weights bit for bit. Bit for bit holds where each output element is the same
// computation: under the emulator (tests/emu/cublas.cpp computes each batched problem as the
// GemmEx of its matrices) and for the W' bytes everywhere; on a GPU cuBLAS may pick another kernel
// for the batched call (another fp32 summation order of the same exact products): there each
// element is within kTolGemm (bench/op_case.h) · K · max |out| of the per-tensor result.
// Cases: fp32 and bf16 storage; no probe, a single probe, a pair; gaussian and sign noise;
// magnitude masks; with and without biases; with a held update (the fold). Inputs fresh random,
// outputs poisoned (NaN) with guard rows. And the knob: a W' block smaller than the group's W'
// falls back to per-tensor linears (no group counted; unperturbed calls, with no W', still batch),
// results unchanged. And device_copy's content check (the other launches a forward repeats per
// layer): a slot given the bytes it holds copies nothing and still serves them, other bytes are
// copied; a forward of a 4-layer model makes as many copies as one of 1 layer. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "../cuda/cuda_backend.h"
#include "../cuda/cuda_check.h"
#include "bench/host_values.h"
#include "bench/op_case.h"
#include "model/model.h"
#include "model_fixture.h"
#include "test_util.h"

using namespace smezo;
using smezo_test::download;
using smezo_test::download_checked;
using smezo_test::GuardedTensor;
using smezo_test::make_guarded;
using smezo_test::make_param;

namespace {

struct BlockSize {  // the process's W' block size for one test
  int64_t saved = cuda_weight_chunk_bytes();
  explicit BlockSize(int64_t bytes) { set_cuda_weight_chunk_bytes(bytes); }
  ~BlockSize() { set_cuda_weight_chunk_bytes(saved); }
};

struct Setting {
  DType dt;
  int probe;  // 0: none, 1: single, 2: pair
  NoiseKind noise;
  bool bias, fold;
  std::string str() const {
    return std::string(dtype_name(dt)) + " probe " + std::to_string(probe) + (noise == NOISE_SIGN ? " sign" : " gauss") +
           (bias ? " bias" : "") + (fold ? " fold" : "");
  }
};

// One parameter set of a group: weights (ns[i], K) and biases, tensor ids 20 + 2i and 21 + 2i,
// magnitude-masked weights, values rounded to the storage dtype (both sets get the same).
struct GroupSet {
  std::vector<Param> w, b;
};

GroupSet make_set(CudaBackend& gpu, const std::vector<int64_t>& ns, int64_t K, const Setting& s, uint32_t seed) {
  GroupSet g;
  for (size_t i = 0; i < ns.size(); i++) {
    const std::vector<float> w = rounded(s.dt, random_floats(ns[i] * K, seed + 7 * uint32_t(i)));
    const std::vector<float> b = rounded(s.dt, random_floats(ns[i], seed + 7 * uint32_t(i) + 3));
    ParamInfo wi = op_param_info("group.w" + std::to_string(i), uint32_t(20 + 2 * i), MASK_MAGNITUDE, w, true, 0, s.noise);
    wi.is_linear = true;
    const ParamInfo bi = op_param_info("group.b" + std::to_string(i), uint32_t(21 + 2 * i), MASK_DENSE, b, true, 0, s.noise);
    g.w.push_back(make_param(gpu, ns[i], K, s.dt, w, wi));
    g.b.push_back(make_param(gpu, 1, ns[i], s.dt, b, bi));
  }
  if (s.fold)  // the backend holds &g.w[i]: after the last push_back
    for (size_t i = 0; i < ns.size(); i++) gpu.defer_updates(g.w[i], {UpdateArgs{0.01f, 0.0f, 4141 + i}});
  return g;
}

// The group's outputs (poisoned, guarded), grouped or item by item.
std::vector<std::vector<float>> run(CudaBackend& gpu, GroupSet& g, const Tensor& in, const Probe& probe, bool grouped) {
  std::vector<GuardedTensor> outs;
  std::vector<LinearItem> items;
  for (size_t i = 0; i < g.w.size(); i++) {
    outs.push_back(make_guarded(gpu, in.rows, g.w[i].w.rows, DTYPE_F32, {}, 77 + uint32_t(i)));
    items.push_back(LinearItem{outs.back().view, &g.w[i], g.b[i].w.data ? &g.b[i] : nullptr});
  }
  if (grouped) gpu.linear_group(items, in, probe);
  else
    for (const LinearItem& it : items) gpu.linear(it.out, in, *it.weight, it.bias, probe);
  std::vector<std::vector<float>> got;
  for (const GuardedTensor& o : outs) got.push_back(download_checked(gpu, o, grouped ? "linear_group" : "linear"));
  return got;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The grouped output against the per-tensor one: bit for bit emulated, else the GEMM bound above.
bool gemm_agrees(const std::vector<float>& grouped, const std::vector<float>& single, int64_t K) {
  if (cuda_running_emulated()) return same_bits(grouped, single);
  if (grouped.size() != single.size()) return false;
  double most = 0;
  for (float v : single) most = std::max(most, std::fabs(double(v)));
  for (size_t i = 0; i < single.size(); i++)
    if (!(std::fabs(double(grouped[i]) - single[i]) <= kTolGemm * double(K) * most)) return false;
  return true;
}

// Every setting on the group of shapes ns over K features, M rows: grouped equals item by item;
// expect_grouped: whether the perturbed calls batch (the unperturbed always do).
void check_group(const std::vector<int64_t>& ns, int64_t K, int64_t M, bool expect_grouped) {
  CudaBackend gpu;
  uint32_t seed = 500;
  for (DType dt : {DTYPE_F32, DTYPE_BF16})
    for (int probe_kind : {0, 1, 2})
      for (NoiseKind noise : {NOISE_GAUSSIAN, NOISE_SIGN})
        for (bool bias : {false, true})
          for (bool fold : {false, true}) {
            if (probe_kind == 0 && (fold || noise == NOISE_SIGN)) continue;
            const Setting s{dt, probe_kind, noise, bias, fold};
            seed += 101;
            GroupSet a = make_set(gpu, ns, K, s, seed), b = make_set(gpu, ns, K, s, seed);
            if (!bias) a.b.assign(ns.size(), Param{}), b.b.assign(ns.size(), Param{});
            const std::vector<float> xv = random_floats(M * K, seed + 50, -2.0f, 2.0f);
            GuardedTensor x = make_guarded(gpu, M, K, DTYPE_F32, xv, seed + 51);
            const Probe probe{probe_kind == 0 ? 0.0f : 0.05f, 9000u + seed, probe_kind == 2};
            const int64_t before = gpu.grouped_linears();
            const auto grouped = run(gpu, a, x.view, probe, true);
            // unperturbed reads W as stored: no W' to outgrow the block, always grouped
            EXPECT_EQ(gpu.grouped_linears() - before, expect_grouped || probe_kind == 0 ? 1 : 0) << s.str();
            const auto single = run(gpu, b, x.view, probe, false);
            for (size_t i = 0; i < ns.size(); i++) {
              for (float v : grouped[i]) ASSERT_FALSE(std::isnan(v)) << s.str() << " item " << i << " left poisoned";
              EXPECT_TRUE(gemm_agrees(grouped[i], single[i], K)) << s.str() << " item " << i;
            }
            gpu.flush_updates();
            for (size_t i = 0; i < ns.size(); i++)
              EXPECT_TRUE(same_bits(download(gpu, a.w[i].w), download(gpu, b.w[i].w))) << s.str() << " weight " << i;
            EXPECT_TRUE(same_bits(download_checked(gpu, x, "the linears"), xv)) << "the input changed";
          }
}

}  // namespace

TEST(LinearGroup, QkvEqualsPerTensorLinears) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  check_group({48, 48, 48}, 24, 6, true);
}

TEST(LinearGroup, GqaQkvEqualsPerTensorLinears) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  check_group({64, 16, 16}, 32, 4, true);  // k and v a quarter of q: two batched GEMMs
}

TEST(LinearGroup, GateUpEqualsPerTensorLinears) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  check_group({40, 40}, 16, 8, true);
}

TEST(LinearGroup, LargerThanTheBlockFallsBackToPerTensorLinears) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  // W' of 96 x 32 is 6 KiB a copy in bf16 (12 in fp32): three never fit 8 KiB; each alone goes in
  // blocks of rows (a pair's W+ and W- of 16 to 64 rows)
  BlockSize block(8192);
  check_group({96, 96, 96}, 32, 6, false);
}

TEST(LinearGroup, PlanGroupsOnlyWhatFitsOneBlockOnOnePath) {
  auto call = [](int64_t n, bool perturbed, bool pair, LinearPathMode mode) {
    return LinearCall{pair ? 4 : 8, n, 64, perturbed, pair, DTYPE_BF16, mode};
  };
  const LinearGroupScratch g = linear_group_plan({call(64, true, true, LINEAR_MODE_AUTO), call(16, true, true, LINEAR_MODE_AUTO)}, 1 << 20);
  ASSERT_TRUE(g.grouped);
  EXPECT_EQ(g.copies, 2);
  EXPECT_EQ(g.offsets, (std::vector<int64_t>{0, 2 * 64 * 64 * 2}));
  EXPECT_EQ(g.x_offset, 2 * (64 + 16) * 64 * 2);
  EXPECT_EQ(g.total(), g.x_offset + 8 * 64 * 2);
  EXPECT_FALSE(linear_group_plan({call(64, true, true, LINEAR_MODE_AUTO), call(16, true, true, LINEAR_MODE_AUTO)},
                                 g.x_offset - 1).grouped) << "larger than the block";
  EXPECT_FALSE(linear_group_plan({call(64, true, false, LINEAR_MODE_FUSED), call(16, true, false, LINEAR_MODE_FUSED)}).grouped)
      << "the fused path is never grouped";
  EXPECT_FALSE(linear_group_plan({call(64, true, false, LINEAR_MODE_AUTO), call(16, false, false, LINEAR_MODE_AUTO)}).grouped)
      << "two paths";
  EXPECT_FALSE(linear_group_plan({call(64, true, false, LINEAR_MODE_AUTO)}).grouped) << "one linear";
  EXPECT_TRUE(linear_group_plan({call(64, false, false, LINEAR_MODE_FUSED), call(64, false, false, LINEAR_MODE_FUSED)}).grouped)
      << "unperturbed: W as stored";
}

TEST(DeviceCopyCuda, BytesTheSlotHoldsAreNotCopiedAgain) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CudaBackend gpu;
  std::vector<int32_t> a(40), b;
  for (size_t i = 0; i < a.size(); i++) a[i] = static_cast<int32_t>(i * 7919 % 1000) - 500;
  auto copy = [&](const std::vector<int32_t>& v) {
    const int64_t before = gpu.index_copies();
    const void* dev = gpu.device_copy(CudaBackend::SLOT_SEQS, v.data(), v.size() * sizeof(int32_t));
    std::vector<int32_t> back(v.size(), -1);
    CUDA_CHECK(cudaMemcpy(back.data(), dev, back.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
    EXPECT_EQ(back, v) << "the slot serves other bytes than it was given";
    return gpu.index_copies() - before;
  };
  EXPECT_EQ(copy(a), 1);
  b = a;  // equal bytes from another host buffer
  EXPECT_EQ(copy(b), 0);
  b[17] ^= 1;  // one bit
  EXPECT_EQ(copy(b), 1);
  EXPECT_EQ(copy(a), 1);
  EXPECT_EQ(copy(std::vector<int32_t>(a.begin(), a.begin() + 39)), 1) << "a prefix of what it holds";
  EXPECT_EQ(copy(std::vector<int32_t>(4000, 3)), 1) << "a larger buffer";
  EXPECT_EQ(copy(std::vector<int32_t>(4000, 3)), 0);
}

TEST(DeviceCopyCuda, ForwardCopiesDoNotGrowWithTheLayers) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  auto copies_per_forward = [](int64_t layers) {
    ModelConfig c = smezo_test::tiny_llama_config();
    c.n_layers = layers;
    CudaBackend gpu;
    Model model(smezo_test::random_weight_source(c, 5), gpu, DTYPE_F32, 32, 8);
    ForwardBatch batch;
    for (int32_t t = 0; t < 12; t++) batch.tokens.push_back((t * 13 + 5) % 40);
    batch.seq_lens = {5, 7};
    batch.logit_rows = {4, 11};
    std::vector<float> logits;
    model.forward(batch, Probe{0.01f, 3, false}, &logits);  // the first fills the slots
    batch.tokens[3] = (batch.tokens[3] + 1) % 40;
    const int64_t before = gpu.index_copies();
    model.forward(batch, Probe{0.01f, 4, false}, &logits);
    return gpu.index_copies() - before;
  };
  const int64_t one = copies_per_forward(1), four = copies_per_forward(4);
  EXPECT_EQ(one, four) << "a layer's rope and attention copy the same positions and sequences again";
  EXPECT_GE(one, 1) << "the new tokens";
}
