// `smezo bench --kernel excess` (bench/excess_bench.h) end to end on the tiny shape: every part
// validates (the perturb twin bit for bit against the host rule, the copy exactly, every order of the
// layer's blocks and the product within tolerance of the serial order) with W' blocks small enough
// that every linear has several and the two streams take turns on the two scratch buffers; the JSON
// lines are there. And the W' block knob reaches the kernels: CudaBackend::linear gives the same
// output with one block and with many, and bench --shape's sweep records each size. Emulated, the
// profiler regions (--dram-range, --profile-rep) are counted: exactly one rep of each phase, one
// layer pass per M and one copy. Skips without a GPU. (Emulated timings are host times.)
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../cuda/cuda_check.h"
#include "bench/excess_bench.h"
#include "bench/model_bench.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_plan.h"
#include "test_util.h"

#ifdef SMEZO_EMU
#include <cuda_runtime.h>  // emu::profiler_record
#endif

using namespace smezo;

namespace {

struct BlockSize {  // the process's W' block size for one test
  int64_t saved = cuda_weight_chunk_bytes();
  explicit BlockSize(int64_t bytes) { set_cuda_weight_chunk_bytes(bytes); }
  ~BlockSize() { set_cuda_weight_chunk_bytes(saved); }
};

std::vector<nlohmann::json> json_lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(smezo_test::read_file(path));
  std::string line;
  while (std::getline(lines, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST(ExcessBench, TinyLayerValidatesWithManyBlocks) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  // tiny: dim 64, hidden 128 (bf16 rows of 128 and 256 bytes): 4 KiB for W+ and W- is 8 to 16 rows,
  // so every linear of the layer has 4 to 16 blocks
  BlockSize block(4096);
  ExcessBenchOptions opt;
  opt.shape = "tiny";
  opt.ms = {4, 9};
  opt.reps = 1;
  opt.warmup = 1;
  opt.flat_elements = 4096 + 8;
  opt.flush_bytes = int64_t(1) << 20;
  opt.dram_range = true;
  opt.json_path = smezo_test::make_temp_dir("excess_bench") + "/excess.jsonl";
#ifdef SMEZO_EMU
  emu::reset_profiler_record();
#endif
  ASSERT_EQ(run_excess_bench(opt), 0);
  std::map<std::string, int> seen;
  for (const nlohmann::json& j : json_lines(opt.json_path)) {
    const std::string part = j["part"];
    std::string key = part;
    if (part == "perturb") key += "/" + j["kind"].get<std::string>() + "/" + j["noise"].get<std::string>();
    if (part == "layer") {
      key += "/" + j["order"].get<std::string>();
      EXPECT_GE(j["blocks"].get<int>(), 7 * 4) << j;
      EXPECT_EQ(j["block_mib"].get<double>(), 4096 / 1048576.0) << j;
    }
    if (part == "bytes") key += "/" + j["kind"].get<std::string>();
    if (j.contains("check")) EXPECT_EQ(j["check"], "PASS") << j;
    if (j.contains("ms")) EXPECT_GT(j["ms"].get<double>(), 0.0) << j;
    seen[key]++;
  }
  for (const char* noise : {"gaussian", "rademacher"})
    for (const char* kind : {"pair", "single"}) EXPECT_EQ(seen[std::string("perturb/") + kind + "/" + noise], 1) << kind;
  EXPECT_EQ(seen["perturb/copy-pair/-"], 1);
  EXPECT_EQ(seen["perturb/copy-single/-"], 1);
  for (const char* order : {"serial", "two-streams", "two-streams-sm116", "two-streams-sm100", "product"})
    EXPECT_EQ(seen[std::string("layer/") + order], 2) << order;  // one per M (132 emulated SMs - 16, - 32)
  EXPECT_EQ(seen["bytes/perturb"], 2);
  EXPECT_EQ(seen["bytes/gemm"], 2);
  EXPECT_EQ(seen["region"], 3);  // the copy, then one serial layer per M
#ifdef SMEZO_EMU
  const emu::ProfilerRecord r = emu::profiler_record();
  EXPECT_EQ(r.regions, 3);
  EXPECT_EQ(r.unmatched_stops, 0);
  EXPECT_GT(r.launches_inside, 2 * 7 * 4);  // a perturb per block of each M, and the copy
#endif
}

TEST(ExcessBench, RefusesWhatItCannotTime) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  ExcessBenchOptions opt;
  opt.shape = "tiny";
  opt.dtype = DTYPE_F32;
  EXPECT_THROW_MSG(run_excess_bench(opt), "bench --kernel excess: --dtype must be bf16 or f16 (got F32)");
  opt.dtype = DTYPE_BF16;
  opt.parts = {"noise"};
  EXPECT_THROW_MSG(run_excess_bench(opt), "--parts 'noise' (choose perturb, layer)");
  opt.parts = {"layer"};
  opt.noises = {NOISE_AUTO};
  EXPECT_THROW_MSG(run_excess_bench(opt), "--noise auto is not a kind of z");
}

// One linear of 40 x 64 bf16 (128 bytes a row, 256 for W+ and W-) under a probe pair: its output is
// the same whether W+ and W- are formed in one block, in blocks of 16 rows (4 KiB) or of 8 (the least
// a block holds); a block that started on the wrong noise group or row would differ.
TEST(WeightBlockCuda, LinearOutputDoesNotDependOnTheBlockSize) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const int64_t N = 40, K = 64, M = 6;
  CudaBackend b;
  b.set_linear_mode(LINEAR_MODE_WPRIME);
  Param w;
  w.w = b.alloc(N, K, DTYPE_BF16);
  w.info.name = "w";
  w.info.tensor_id = 3;
  w.info.is_linear = true;
  const std::vector<float> wv = smezo_test::random_floats(N * K, 11, -0.1f, 0.1f);
  b.upload(w.w, wv.data());
  const Tensor x = b.alloc(M, K, DTYPE_F32);
  const std::vector<float> xv = smezo_test::random_floats(M * K, 12);
  b.upload(x, xv.data());
  const Probe pair{1e-2f, 777, true};
  std::vector<std::vector<float>> outs;
  for (int64_t bytes : {int64_t(64) << 20, int64_t(4096), int64_t(1)}) {
    BlockSize block(bytes);
    const Tensor y = b.alloc(M, N, DTYPE_F32);
    const std::vector<float> poison(M * N, NAN);
    b.upload(y, poison.data());
    b.linear(y, x, w, nullptr, pair);
    std::vector<float> host(M * N);
    b.download(y, host.data());
    outs.push_back(host);
  }
  for (int64_t i = 0; i < M * N; ++i) {
    ASSERT_FALSE(std::isnan(outs[0][i])) << i;
    EXPECT_NEAR(outs[1][i], outs[0][i], 1e-5f * (1.0f + std::fabs(outs[0][i]))) << "16-row blocks, entry " << i;
    EXPECT_NEAR(outs[2][i], outs[0][i], 1e-5f * (1.0f + std::fabs(outs[0][i]))) << "8-row blocks, entry " << i;
  }
}

// bench --shape's sweep: the steps once per block size, each JSON line with the size it ran at;
// --profile-rep brackets exactly one rep of each phase (emulated: counted).
TEST(WeightBlockCuda, ModelBenchSweepsAndBracketsOneRepPerPhase) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  ModelBenchOptions o;
  o.shape = "tiny";
  o.device = DEVICE_CUDA;
  o.batch = 1;
  o.seqs = {8};
  o.reps = 2;
  o.warmup = 1;
  o.phases = {"forward", "smezo-step"};
  o.weight_block_mib = {64, 1};
  o.profile_rep = true;
  o.json_path = smezo_test::make_temp_dir("weight_block_sweep") + "/bench.jsonl";
  const int64_t before = cuda_weight_chunk_bytes();
#ifdef SMEZO_EMU
  emu::reset_profiler_record();
#endif
  ASSERT_EQ(run_model_bench(o), 0);
  EXPECT_EQ(cuda_weight_chunk_bytes(), before) << "the sweep puts the process's size back";
  std::vector<std::string> got;
  for (const nlohmann::json& j : json_lines(o.json_path)) {
    got.push_back(j["phase"].get<std::string>() + "@" + std::to_string(j["weight_block_mib"].get<double>()));
    EXPECT_EQ(j["profiled_rep"], 3) << j;
  }
  const std::string def = std::to_string(before / 1048576.0);
  EXPECT_EQ(got, (std::vector<std::string>{"forward@" + def, "smezo-step@" + std::to_string(64.0),
                                           "smezo-step@" + std::to_string(1.0)}));
#ifdef SMEZO_EMU
  EXPECT_EQ(emu::profiler_record().regions, 3);  // one forward, one step per block size
  EXPECT_EQ(emu::profiler_record().unmatched_stops, 0);
#endif
}
