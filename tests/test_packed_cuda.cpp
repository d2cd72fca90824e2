// --weights packed on the CUDA backend (cuda/packed_dequant.cu, CudaBackend::linear_packed), emulated or on a
// GPU, against the CPU: the dequantisation kernel equals the CPU decoder bit for bit for every block type
// (download, the embedding gather, and W' through an fp32 GEMM by the identity); the scales hook of
// --tune scales under a probe pair equals dequantize_packed with the CPU-perturbed scales, bit for bit; a
// random model of every block type and SmolLM2 Q4_1 (tied Q8_0 head) give the CPU's logits within GEMM
// tolerance, unperturbed and under a LoRA probe pair; a short --tune lora run is deterministic and resumes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "common/half.h"
#include "cpu/cpu_backend.h"
#include "formats/gguf.h"
#include "formats/packed_weights.h"
#include "model/lora.h"
#include "model/model.h"
#include "model/model_loader.h"
#include "run/seed_log.h"
#include "model_fixture.h"
#include "packed_gguf_fixture.h"
#include "smezo/train.h"
#include "test_gguf_writer.h"
#include "test_util.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#endif

using namespace smezo;
using smezo_test::kPackedBlockTypes;
using smezo_test::kSignedScales;
using smezo_test::PackedScaleBytes;

#ifdef SMEZO_WITH_CUDA
namespace {

// A host packed tensor over `bytes` (rows of cols values of s.type).
Tensor host_packed(const PackedScaleBytes& s, std::string* bytes, int64_t rows, int64_t cols) {
  Tensor t;
  t.data = &(*bytes)[0];
  t.rows = rows;
  t.cols = cols;
  t.packed_type = s.type;
  t.packed_row_bytes = packed_row_bytes(s.type, cols, "test tensor");
  return t;
}

std::vector<float> cpu_values(const Tensor& t, const GgufScaleOverride& o = GgufScaleOverride{}) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  dequantize_packed(t, 0, t.numel(), v.data(), o);
  return v;
}

// x = the identity (k, k), twice over for a pair: out = x · W'ᵀ holds W'ᵀ exactly in an fp32 GEMM.
std::vector<float> identity_rows(int64_t k, int copies) {
  std::vector<float> x(static_cast<size_t>(copies * k * k), 0.0f);
  for (int c = 0; c < copies; c++)
    for (int64_t i = 0; i < k; i++) x[static_cast<size_t>((c * k + i) * k + i)] = 1.0f;
  return x;
}

// v with -0 as +0 (v + 0.0f: exact otherwise), as the identity GEMM gives it (its sums start from +0).
std::vector<float> plus_zero(std::vector<float> v) {
  for (float& x : v) x += 0.0f;
  return v;
}

// out (M, N) of the identity GEMM back in W' layout (N, K), rows [h K, (h + 1) K) of out.
std::vector<float> wprime_of(const std::vector<float>& out, int64_t n, int64_t k, int h) {
  std::vector<float> w(static_cast<size_t>(n * k));
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = 0; c < k; c++) w[r * k + c] = out[(h * k + c) * n + r];
  return w;
}

Tensor device_of(CudaBackend& gpu, const std::vector<float>& v, int64_t rows, int64_t cols) {
  Tensor t = gpu.alloc(rows, cols, DTYPE_F32);
  gpu.upload(t, v.data());
  return t;
}

Tensor poisoned(CudaBackend& gpu, int64_t rows, int64_t cols) {
  return device_of(gpu, std::vector<float>(static_cast<size_t>(rows * cols), smezo_test::kPoison), rows, cols);
}

}  // namespace
#endif

// Every block type, 5 rows of 3 blocks: download, a gather of rows (repeats included) and the W' of an fp32
// linear (blocks of 2 rows: a small W' block forced) equal the CPU decoder's values bit for bit.
TEST(PackedCuda, DequantisationEqualsTheCpuDecoderBitForBit) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  std::mt19937 rng(static_cast<uint32_t>(smezo_test::mixed_seed(43)));
  for (const PackedScaleBytes& s : kPackedBlockTypes) {
    SCOPED_TRACE(gguf_type_name(s.type));
    const int64_t rows = 5, cols = 3 * gguf_type_traits(s.type)->block_size;
    std::string bytes = smezo_test::random_packed_blocks(s, rows * cols, kSignedScales, &rng);
    const Tensor host = host_packed(s, &bytes, rows, cols);
    const std::vector<float> want = cpu_values(host);
    CudaBackend gpu;
    Param w;
    w.w = gpu.alloc_packed(rows, cols, s.type, host.packed_row_bytes, bytes.data());
    w.info.trainable = false;
    EXPECT_EQ(gpu.bytes_allocated(), static_cast<int64_t>(bytes.size()));  // the stored bytes only
    std::vector<float> got(want.size(), smezo_test::kPoison);
    gpu.download(w.w, got.data());
    EXPECT_TRUE(smezo_test::same_bits(want, got));
    const std::vector<int32_t> tokens = {3, 0, 4, 3, 1};
    const Tensor gathered = poisoned(gpu, 5, cols);
    gpu.embedding(gathered, w, tokens, Probe{0.5f, 7, false});  // frozen: the probe changes nothing
    const std::vector<float> g = smezo_test::download(gpu, gathered);
    for (size_t i = 0; i < tokens.size(); i++)
      EXPECT_EQ(0, std::memcmp(&g[i * cols], &want[tokens[i] * cols], cols * 4)) << "row " << i;
    const int64_t saved = cuda_weight_chunk_bytes();
    set_cuda_weight_chunk_bytes(2 * cols * 4);  // W' blocks of 2 rows: 3 blocks, the last short
    const Tensor x = device_of(gpu, identity_rows(cols, 1), cols, cols), out = poisoned(gpu, cols, rows);
    gpu.linear(out, x, w, nullptr, Probe{});
    set_cuda_weight_chunk_bytes(saved);
    EXPECT_TRUE(smezo_test::same_bits(plus_zero(want), wprime_of(smezo_test::download(gpu, out), rows, cols, 0)));
  }
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

#ifdef SMEZO_WITH_CUDA
namespace {

// The scales hook for one type: the packed (rows, cols) weight's scales Param (its file's scales, moved a
// little, and m/dmin when the type has one), read under a pair of the given mask and noise; W+ and W- (an
// fp32 GEMM by the identity) against dequantize_packed with the scales cpu_read_param perturbs.
void expect_scales_hook_matches_cpu(const PackedScaleBytes& s, MaskKind mask, NoiseKind noise, std::mt19937* rng) {
  const int64_t rows = 4, cols = 2 * gguf_type_traits(s.type)->block_size, n_blocks = rows * cols / (cols / 2);
  std::string bytes = smezo_test::random_packed_blocks(s, rows * cols, kSignedScales, rng);
  const Tensor host = host_packed(s, &bytes, rows, cols);
  const int64_t srows = s.m_at >= 0 ? 2 : 1;
  std::vector<float> scales(static_cast<size_t>(srows * n_blocks));
  std::uniform_real_distribution<float> jitter(0.9f, 1.1f);
  const int64_t bb = gguf_type_traits(s.type)->block_bytes;
  for (int64_t b = 0; b < n_blocks; b++) {
    uint16_t h;
    std::memcpy(&h, &bytes[b * bb + s.d_at], 2);
    scales[b] = f16_to_float(h) * jitter(*rng);
    if (srows == 1) continue;
    std::memcpy(&h, &bytes[b * bb + s.m_at], 2);
    scales[n_blocks + b] = f16_to_float(h) * jitter(*rng);
  }
  ParamInfo info;
  info.name = "blk.0.attn_q.weight.scales";
  info.tensor_id = 17;
  info.mask = mask;
  info.threshold = 0.008f;  // MASK_MAGNITUDE: the 32-value types perturb only their smaller |d|, |m|
  info.noise = noise;
  const Probe pair{3e-3f, smezo_test::mixed_seed(5), true};
  // the CPU reference: the scales read as any Param under each half, then the decoder with them
  CpuBackend cpu;
  Param cpu_scales{cpu.alloc(srows, n_blocks, DTYPE_F32), info};
  cpu.upload(cpu_scales.w, scales.data());
  std::vector<float> want[2];
  for (int h = 0; h < 2; h++) {
    std::vector<float> read(scales.size());
    cpu_read_param(cpu_scales, half_probe(pair, h == 0 ? +1 : -1), 0, srows * n_blocks, read.data());
    want[h] = cpu_values(host, GgufScaleOverride{read.data(), srows == 2 ? read.data() + n_blocks : nullptr});
  }
  ASSERT_FALSE(smezo_test::same_bits(want[0], want[1]));  // the probe moves the scales
  CudaBackend gpu;
  Param gpu_scales{device_of(gpu, scales, srows, n_blocks), info};
  Param w;
  w.w = gpu.alloc_packed(rows, cols, s.type, host.packed_row_bytes, bytes.data());
  w.info.trainable = false;
  w.scales = &gpu_scales;
  const Tensor x = device_of(gpu, identity_rows(cols, 2), 2 * cols, cols), out = poisoned(gpu, 2 * cols, rows);
  gpu.linear(out, x, w, nullptr, pair);
  const std::vector<float> got = smezo_test::download(gpu, out);
  for (int h = 0; h < 2; h++)
    EXPECT_TRUE(smezo_test::same_bits(plus_zero(want[h]), wprime_of(got, rows, cols, h))) << "half " << h;
  // a single probe: the + half's W' for every row
  const Tensor one = poisoned(gpu, cols, rows);
  gpu.linear(one, tensor_rows(x, 0, cols), w, nullptr, half_probe(pair, +1));
  EXPECT_TRUE(smezo_test::same_bits(plus_zero(want[0]), wprime_of(smezo_test::download(gpu, one), rows, cols, 0)));
  // the embedding gathers rows under the - half's scales (a gather copies: -0 stays -0)
  const std::vector<int32_t> ids = {2, 0, 3};
  const Tensor gathered = poisoned(gpu, 3, cols);
  gpu.embedding(gathered, w, ids, half_probe(pair, -1));
  const std::vector<float> g = smezo_test::download(gpu, gathered);
  for (size_t i = 0; i < ids.size(); i++)
    EXPECT_EQ(0, std::memcmp(&g[i * cols], &want[1][ids[i] * cols], cols * 4)) << "row " << i;
}

}  // namespace
#endif

// --tune scales' hook (shared43 item 1): d (and m/dmin) read from the f32 scales Param under the probe, as
// any Param (its tensor_id, element index, mask and noise kind), in place of the f16 scales; each half of a
// pair its own W'. Every block type; dense and magnitude masks, gaussian and sign noise.
TEST(PackedCuda, ScalesHookUnderAPairEqualsTheCpuReference) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  std::mt19937 rng(static_cast<uint32_t>(smezo_test::mixed_seed(44)));
  for (const PackedScaleBytes& s : kPackedBlockTypes) {
    SCOPED_TRACE(gguf_type_name(s.type));
    expect_scales_hook_matches_cpu(s, MASK_DENSE, NOISE_GAUSSIAN, &rng);
    expect_scales_hook_matches_cpu(s, MASK_MAGNITUDE, NOISE_SIGN, &rng);
  }
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// A random model of every block type, packed on both backends (the tied Q8_0 embedding/head with Q4_1, as
// SmolLM2 has them), fp32 W': the CUDA logits equal the CPU's within 1e-4 x max|logit| (cuBLAS sums the
// same products in another order: ~1e-6 relative over 512 terms, through 2 layers and the head), both
// unperturbed and under a LoRA probe pair. Q4_K once more with bf16 W' against the CPU: 3e-2 x max|logit|
// (the GEMM's x and W' rounded to bf16, 2^-9 relative each, as LoraCuda.Bf16BaseStaysAndTheFp32AdaptersTrain).
TEST(PackedCuda, EveryBlockTypeGivesTheCpuLogits) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const std::vector<int32_t> tokens = smezo_test::random_tokens(8, 1000, smezo_test::base_seed());
  for (const PackedScaleBytes& s : kPackedBlockTypes) {
    SCOPED_TRACE(gguf_type_name(s.type));
    const bool tied = s.type == GGUF_TYPE_Q4_1;
    const std::string path = smezo_test::write_random_packed_gguf(s.type, tied ? GGUF_TYPE_Q8_0 : s.type, tied,
                                                      smezo_test::base_seed(), kSignedScales);
    CpuBackend cpu;
    const smezo_test::PackedLogits want = smezo_test::lora_pair_logits(path, true, cpu, DTYPE_F32, tokens);
    const std::vector<DType> dtypes = s.type == GGUF_TYPE_Q4_K ? std::vector<DType>{DTYPE_F32, DTYPE_BF16}
                                                               : std::vector<DType>{DTYPE_F32};
    for (DType dt : dtypes) {
      CudaBackend gpu;
      gpu.set_packed_wprime_dtype(dt);
      const smezo_test::PackedLogits got = smezo_test::lora_pair_logits(path, true, gpu, dt, tokens);
      const double tol = (dt == DTYPE_F32 ? 1e-4 : 3e-2) * smezo_test::max_abs(want.plain);
      EXPECT_GT(smezo_test::max_abs(want.plain), 0.1);  // the random model computes something
      EXPECT_LE(smezo_test::max_diff(got.plain, want.plain), tol) << dtype_name(dt) << " " << smezo_test::seed_note();
      EXPECT_LE(smezo_test::max_diff(got.lora_pair, want.lora_pair), tol) << dtype_name(dt);
      EXPECT_GT(smezo_test::max_diff(want.plain, want.lora_pair), 10 * tol);  // the adapters and the probe count
    }
  }
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// SmolLM2-135M-Instruct Q4_1 with its tied Q8_0 embedding/head, packed, fp32 W': the CPU's logits
// within 1e-4 x max|logit| (summation order, 30 layers).
TEST(PackedCuda, SmolLM2WithTheTiedQ8HeadGivesTheCpuLogits) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const std::string path = smezo_test::smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  const std::vector<int32_t> tokens = {1, 504, 3537, 28, 2030, 314, 29, 17};
  CpuBackend cpu;
  CudaBackend gpu;
  gpu.set_packed_wprime_dtype(DTYPE_F32);
  const smezo_test::PackedLogits want = smezo_test::lora_pair_logits(path, true, cpu, DTYPE_F32, tokens);
  const smezo_test::PackedLogits got = smezo_test::lora_pair_logits(path, true, gpu, DTYPE_F32, tokens);
  EXPECT_LT(gpu.bytes_allocated(), int64_t{150} << 20);  // 96.6 MB of blocks, adapters, workspace
  EXPECT_LE(smezo_test::max_diff(got.plain, want.plain), 1e-4 * smezo_test::max_abs(want.plain));
  EXPECT_LE(smezo_test::max_diff(got.lora_pair, want.lora_pair), 1e-4 * smezo_test::max_abs(want.lora_pair));
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// --tune lora --weights packed --device cuda on SmolLM2 (bf16 W', the default storage): 2 steps write an
// adapter; a copy of the run cut back to its first logged step, resumed, ends with the same seed log and
// adapter byte for byte (step 2 recomputed over the packed base: the path is deterministic). ~1 minute
// emulated: every forward dequantises the 135M weights.
TEST(PackedCuda, LoraTrainingOverAPackedBaseResumesBitForBit) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const std::string path = smezo_test::smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  namespace fs = std::filesystem;
  const std::string dir = smezo_test::make_temp_dir("packed_cuda_train");
  TrainOptions o;
  o.model_path = path;
  o.device = DEVICE_CUDA;
  o.weights = WEIGHTS_PACKED;
  o.tune = TUNE_LORA;
  o.lora_r = 4;
  o.task = "sst2";
  o.n_train = 8;
  o.n_dev = 0;
  o.skip_test = true;
  o.max_len = 16;
  o.batch = 2;
  o.steps = 2;
  o.eval_every = 0;
  o.flush_every = 1;
  o.progress_every = 1000;
  o.spsa.lr = 5e-2f;
  o.out_dir = dir + "/a";
  ASSERT_EQ(train(o).checkpoint_error, "");
  const std::string adapter = smezo_test::read_file(dir + "/a/checkpoint/adapter_model.safetensors");
  fs::copy(dir + "/a", dir + "/b", fs::copy_options::recursive);
  fs::remove_all(dir + "/b/checkpoint");
  fs::remove(dir + "/b/summary.json");
  const std::string log = smezo_test::read_file(dir + "/b/seed_log.txt");
  size_t cut = 0;
  for (int line = 0; line < 3; line++) cut = log.find('\n', cut) + 1;  // 2 header lines and 1 step
  smezo_test::write_file(dir + "/b/seed_log.txt", log.substr(0, cut));
  ASSERT_EQ(seed_log_read(dir + "/b/seed_log.txt").records.size(), 1u);
  o.out_dir = dir + "/b";
  o.resume = true;
  ASSERT_EQ(train(o).checkpoint_error, "");
  EXPECT_EQ(log, smezo_test::read_file(dir + "/b/seed_log.txt"));
  EXPECT_EQ(adapter, smezo_test::read_file(dir + "/b/checkpoint/adapter_model.safetensors"));
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// --graphs on over a packed base (Q4_K, bf16 W'): the third pass of one shape, launched as a captured graph,
// gives the uncaptured passes' logits bit for bit (the embedding gather and the W' blocks under capture).
TEST(PackedCuda, GraphsOnGiveTheUncapturedLogits) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const std::string path = smezo_test::write_random_packed_gguf(GGUF_TYPE_Q4_K, GGUF_TYPE_Q4_K, false,
                                                                smezo_test::base_seed(), kSignedScales);
  const std::vector<int32_t> tokens = smezo_test::random_tokens(8, 1000, smezo_test::base_seed() + 1);
  WeightSource src = load_weights(path);
  src.keep_packed = true;
  CudaBackend gpu;
  gpu.set_packed_wprime_dtype(DTYPE_BF16);
  gpu.set_graphs(true);
  Model model(src, gpu, DTYPE_BF16, 16, 16);
  const std::vector<float> first = smezo_test::logits_of(model, tokens);
  smezo_test::logits_of(model, tokens);
  const std::vector<float> third = smezo_test::logits_of(model, tokens);
  EXPECT_GE(gpu.graph_launches(), 1);
  EXPECT_TRUE(smezo_test::same_bits(first, third));
  EXPECT_GT(smezo_test::max_abs(first), 0.1);
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// What the CUDA backend refuses of a packed weight, one line each: an update or a perturbed gather of it (it
// is frozen), a quantile of it, and scales that are not one f32 value per block.
TEST(PackedCuda, RefusesWhatAPackedWeightCannotDo) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  std::mt19937 rng(static_cast<uint32_t>(smezo_test::mixed_seed(45)));
  // Q4_1, 2 rows of 2 blocks
  std::string bytes = smezo_test::random_packed_blocks(kPackedBlockTypes[2], 2 * 64, kSignedScales, &rng);
  CudaBackend gpu;
  Param w;
  w.info.name = "blk.0.attn_q.weight";
  w.w = gpu.alloc_packed(2, 64, GGUF_TYPE_Q4_1, 40, bytes.data());
  using testing::HasSubstr;
  EXPECT_THAT(smezo_test::error_of([&] { gpu.update(w, 1e-3f, 0.0f, 5); }),
              HasSubstr("update of blk.0.attn_q.weight, which is packed (--weights packed keeps frozen weights only)"));
  EXPECT_THAT(smezo_test::error_of([&] { gpu.abs_quantile(w, 0.5); }), HasSubstr("which is packed"));
  const Tensor out = poisoned(gpu, 1, 64);
  EXPECT_THAT(smezo_test::error_of([&] { gpu.embedding(out, w, {1}, Probe{1e-3f, 3, false}); }),
              HasSubstr("blk.0.attn_q.weight is packed (--weights packed) and cannot be perturbed"));
  Param scales{device_of(gpu, std::vector<float>(3, 0.01f), 1, 3), ParamInfo{}};
  scales.info.name = "scales";
  w.info.trainable = false;
  w.scales = &scales;
  const std::string msg = smezo_test::error_of([&] { gpu.embedding(out, w, {1}, Probe{}); });
  EXPECT_THAT(msg, HasSubstr("blk.0.attn_q.weight: its scales scales are [1, 3] F32, expected f32 [1 or 2, 4]"));
  EXPECT_TRUE(smezo_test::is_one_line(msg));
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}
