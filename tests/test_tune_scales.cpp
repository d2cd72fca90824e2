// --tune scales (issue 43) on SmolLM2-135M Q4_1 (tied Q8_0 embedding/head): a short run writes a GGUF of the
// base's size; a run killed after step 2 and resumed ends with the same bytes; `smezo replay` rebuilds the
// GGUF bit for bit; the reloaded GGUF gives the logits of the f16-rounded masters; and the refusals (an
// unquantised model, --weights dequantized, a foreign or truncated base on resume or replay). On CUDA (emulated
// or a GPU): a run on a small random Q4_1 GGUF against the CPU's, its resume, and its replay on either device.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/assets.h"
#include "common/device_names.h"
#include "common/half.h"
#include "common/sha256.h"
#include "cpu/cpu_backend.h"
#include "formats/gguf.h"
#include "formats/packed_weights.h"
#include "formats/safetensors.h"
#include "model/model.h"
#include "model/model_loader.h"
#include "model_fixture.h"
#include "packed_gguf_fixture.h"
#include "run/seed_log.h"
#include "smezo/replay.h"
#include "smezo/train.h"
#include "test_util.h"
#include "train/train_options.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"
#endif

using namespace smezo;
using smezo_test::error_of;
using smezo_test::make_temp_dir;
using smezo_test::read_file;
using testing::HasSubstr;

namespace {

TrainOptions scales_run(const std::string& model, const std::string& out) {
  TrainOptions o;
  o.model_path = model;
  o.task = "sst2";
  o.n_train = 16, o.n_dev = 4, o.n_test = 4;
  o.max_len = 24;
  o.batch = 2;
  o.steps = 4;
  o.eval_every = 0;
  o.skip_test = true;
  o.progress_every = 1000;
  o.out_dir = out;
  o.tune = TUNE_SCALES;
  o.weights = WEIGHTS_PACKED;
  o.spsa.eps = kScalesDefaultEps;
  o.spsa.lr = kScalesDefaultLr;
  return o;
}

// The seed log with its first `keep` records only: the file a kill after that step leaves.
void cut_seed_log(const std::string& path, int keep) {
  std::ifstream in(path);
  std::string line, out;
  int records = 0;  // "#" lines: the header
  while (std::getline(in, line)) {
    const bool record = !line.empty() && line[0] != '#';
    if (record && records == keep) break;
    out += line + "\n";
    records += record;
  }
  std::ofstream(path, std::ios::trunc) << out;
}

std::vector<float> masters_of(const std::string& file, const std::string& name) {
  const SafetensorsFile f(file);
  std::vector<float> v(static_cast<size_t>(f.tensor(name).numel()));
  f.tensor(name).read_f32(v.data());
  return v;
}

}  // namespace

TEST(TuneScales, SmolLM2RunResumeReplayAndTheReloadedGguf) {
  const std::string base = smezo_test::smollm2_path();
  SKIP_WITHOUT_SMOLLM2(base);
  const std::string dir = make_temp_dir("tune_scales");
  const TrainOptions o = scales_run(base, dir + "/run");
  ASSERT_EQ(train(o).steps_done, 4);
  const std::string ckpt = o.out_dir + "/checkpoint";
  const std::string gguf = read_file(ckpt + "/model.gguf"), base_bytes = read_file(base);
  ASSERT_EQ(gguf.size(), base_bytes.size());  // the same types and size
  size_t changed = 0;
  for (size_t i = 0; i < gguf.size(); i++) changed += gguf[i] != base_bytes[i];
  EXPECT_GT(changed, 100u);
  const nlohmann::json prov = nlohmann::json::parse(read_file(ckpt + "/provenance.json"));
  EXPECT_EQ(prov["base_sha256"], file_sha256_hex(base));
  EXPECT_EQ(prov["steps"], 4);
  EXPECT_EQ(prov["base_file"], std::filesystem::path(base).filename().string());
  EXPECT_THAT(read_file(o.out_dir + "/seed_log.txt"), HasSubstr(file_sha256_hex(base)));

  // killed after step 2 (the log cut there, no checkpoint), resumed: the same bytes at the end
  std::filesystem::copy(o.out_dir, dir + "/killed", std::filesystem::copy_options::recursive);
  TrainOptions r = o;
  r.out_dir = dir + "/killed";
  std::filesystem::remove_all(r.out_dir + "/checkpoint");
  std::filesystem::remove(r.out_dir + "/summary.json");
  cut_seed_log(r.out_dir + "/seed_log.txt", 2);
  r.resume = true;
  ASSERT_EQ(train(r).steps_done, 4);
  EXPECT_EQ(nlohmann::json::parse(read_file(r.out_dir + "/summary.json"))["resumed_at_step"], 3);
  EXPECT_EQ(read_file(r.out_dir + "/checkpoint/model.gguf"), gguf);
  EXPECT_EQ(read_file(r.out_dir + "/checkpoint/scales.safetensors"), read_file(ckpt + "/scales.safetensors"));

  // smezo replay: the GGUF and the masters bit for bit from the base and the seed log
  ReplayOptions rep;
  rep.base = base;
  rep.seed_log = o.out_dir + "/seed_log.txt";
  rep.out = dir + "/replayed";
  EXPECT_EQ(replay(rep).written, TUNE_SCALES);
  EXPECT_EQ(read_file(rep.out + "/model.gguf"), gguf);
  EXPECT_EQ(read_file(rep.out + "/scales.safetensors"), read_file(ckpt + "/scales.safetensors"));

  // the exported GGUF reloads as any GGUF; its logits are those of the base with the masters rounded to f16
  const std::vector<int32_t> tokens = {1, 504, 3537, 28, 2030, 314, 29, 17, 2};
  WeightSource exported = load_weights(ckpt + "/model.gguf");
  exported.keep_packed = true;
  CpuBackend b1, b2;
  Model reloaded(exported, b1, DTYPE_F32, 16, 16);
  WeightSource src = load_weights(base);
  src.keep_packed = true;
  Model rounded(src, b2, DTYPE_F32, 16, 16);
  const std::vector<float> base_logits = smezo_test::logits_of(rounded, tokens);
  rounded.add_scales(false);
  for (Param* p : rounded.params()) {
    if (!p->scales) continue;
    std::vector<float> v = masters_of(ckpt + "/scales.safetensors", p->scales->info.name);
    for (float& x : v) x = f16_to_float(float_to_f16(x));
    b2.upload(p->scales->w, v.data());
  }
  const std::vector<float> got = smezo_test::logits_of(reloaded, tokens);
  EXPECT_TRUE(smezo_test::same_bits(got, smezo_test::logits_of(rounded, tokens)));
  EXPECT_GT(smezo_test::max_diff(got, base_logits), 1e-3);  // the tuned scales changed the model

  // a foreign base (one byte of tensor data changed) and a truncated one: refused on resume and replay
  const std::string foreign = dir + "/foreign.gguf", truncated = dir + "/truncated.gguf";
  std::string bytes = base_bytes;
  bytes[bytes.size() - 7] ^= 1;
  std::ofstream(foreign, std::ios::binary) << bytes;
  std::ofstream(truncated, std::ios::binary) << base_bytes.substr(0, base_bytes.size() / 2);
  TrainOptions f = o;
  f.model_path = foreign;
  f.resume = true;
  std::string msg = error_of([&] { train(f); });
  EXPECT_THAT(msg, HasSubstr("--resume: "));
  EXPECT_THAT(msg, HasSubstr("but " + foreign + " has sha256"));
  EXPECT_THAT(msg, HasSubstr("---> HINT: give the exact base file the run started from"));
  rep.base = foreign;
  EXPECT_THAT(error_of([&] { replay(rep); }), HasSubstr("has sha256"));
  f.model_path = truncated;
  msg = error_of([&] { train(f); });
  EXPECT_THAT(msg, HasSubstr(truncated));
  EXPECT_TRUE(smezo_test::is_one_line(msg)) << msg;
}

TEST(TuneScales, RefusesWhatItCannotTune) {
  // an unquantised model: the bundled stories260K (llama2.c)
  TrainOptions o;
  o.tune = TUNE_SCALES;
  o.weights = WEIGHTS_PACKED;
  o.n_train = 8, o.n_dev = 0, o.n_test = 0;
  o.skip_test = true;
  o.steps = 1;
  o.out_dir = make_temp_dir("tune_scales_err") + "/run";
  std::string msg = error_of([&] { train(o); });
  EXPECT_THAT(msg, HasSubstr("--tune scales: this model has no block-quantised weight kept in its blocks"));
  EXPECT_THAT(msg, HasSubstr("---> HINT: give a block-quantised GGUF"));
  // the weights dequantized at load
  o.weights = WEIGHTS_DEQUANTIZED;
  EXPECT_THAT(error_of([&] { validate_train_options(o); }),
              HasSubstr("--tune scales tunes the block scales of a GGUF kept in its blocks, but --weights dequantized"));
  o.weights = WEIGHTS_PACKED;
  // a block type whose scales the mode does not know, and a tensor not kept in blocks
  std::string blocks(34, '\0');
  const Tensor odd{&blocks[0], DTYPE_F32, 1, 32, 99, 34};
  float out[2];
  EXPECT_THAT(error_of([&] { read_packed_scales(odd, 1, "tensor w in f.gguf", out); }),
              HasSubstr("is not kept in GGUF blocks"));
  const Tensor q8{&blocks[0], DTYPE_F32, 1, 32, 8, 34};
  EXPECT_THAT(error_of([&] { read_packed_scales(q8, 2, "tensor w in f.gguf", out); }),
              HasSubstr("tensor w in f.gguf: 2 rows of scales for type Q8_0"));
}

namespace {

// The "loss" of every step record of a run's metrics.jsonl, in order.
std::vector<double> step_losses(const std::string& run_dir) {
  std::vector<double> out;
  std::istringstream in(read_file(run_dir + "/metrics.jsonl"));
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json rec = nlohmann::json::parse(line);
    if (rec.contains("loss") && rec["loss"].is_number()) out.push_back(rec["loss"].get<double>());
  }
  return out;
}

// A copy of the finished `run` killed after step 2 (the log cut there, no checkpoint) and resumed in
// `killed`: the same seed log, GGUF and masters, byte for byte.
void expect_resume_bit_for_bit(const TrainOptions& run, const std::string& killed) {
  TrainOptions r = run;
  r.out_dir = killed;
  std::filesystem::copy(run.out_dir, r.out_dir, std::filesystem::copy_options::recursive);
  std::filesystem::remove_all(r.out_dir + "/checkpoint");
  std::filesystem::remove(r.out_dir + "/summary.json");
  cut_seed_log(r.out_dir + "/seed_log.txt", 2);
  r.resume = true;
  ASSERT_EQ(train(r).steps_done, run.steps);
  EXPECT_EQ(nlohmann::json::parse(read_file(r.out_dir + "/summary.json"))["resumed_at_step"], 3);
  for (const char* file : {"seed_log.txt", "checkpoint/model.gguf", "checkpoint/scales.safetensors"})
    EXPECT_EQ(read_file(r.out_dir + "/" + file), read_file(run.out_dir + "/" + file)) << file;
}

}  // namespace

// --tune scales --device cuda --dtype f32 on a random LLaMA of SmolLM2's layout (Q4_1, tied Q8_0 embedding/head;
// dim 128, 2 layers, the 512-token tinystories tokenizer), 4 steps against the same run on the CPU. Step 1's
// loss (the same masters on both) within 1e-5 relative: cuBLAS sums the W' GEMMs in another order (2e-7
// measured). Steps 2-4 within 1e-3 relative: the projected gradient, (L+ - L-) / 2 eps with L+ - L- ~ 3e-4 L,
// turns that 2e-7 into ~1e-3 of g, so the masters part by lr x 1e-3 g per step (1.3e-4 measured at step 4).
// A run killed after step 2 and resumed writes the same GGUF, masters and seed log byte for byte, in f32 and
// in the device's default bf16; `smezo replay` of the f32 run's seed log, on the device and on the CPU,
// rebuilds its GGUF and masters bit for bit (the update is the same f32 arithmetic on both). ~10 s emulated.
TEST(TuneScalesCuda, RandomQ41RunGivesTheCpuLossesResumesAndReplaysBitForBit) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  smezo_test::RandomGgufShape shape;
  shape.dim = 128, shape.hidden = 256, shape.vocab = 512;
  const std::string base = smezo_test::write_random_packed_gguf(GGUF_TYPE_Q4_1, GGUF_TYPE_Q8_0, true,
                                                                smezo_test::base_seed(), smezo_test::kPositiveScales,
                                                                shape);
  const std::string dir = make_temp_dir("tune_scales_cuda");
  TrainOptions o = scales_run(base, dir + "/cpu");
  o.tokenizer_path = asset_path("tokenizers/tinystories-512.model");
  o.flush_every = 1;
  ASSERT_EQ(train(o).steps_done, 4);
  TrainOptions g = o;
  g.device = DEVICE_CUDA;
  g.dtype = DTYPE_F32;
  g.out_dir = dir + "/cuda";
  ASSERT_EQ(train(g).checkpoint_error, "");
  const std::vector<double> want = step_losses(o.out_dir), got = step_losses(g.out_dir);
  ASSERT_EQ(want.size(), 4u);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_NEAR(got[0], want[0], 1e-5 * std::fabs(want[0])) << smezo_test::seed_note();  // the same masters
  for (size_t i = 1; i < 4; i++)
    EXPECT_NEAR(got[i], want[i], 1e-3 * std::fabs(want[i])) << "step " << i + 1 << " " << smezo_test::seed_note();
  const std::string ckpt = g.out_dir + "/checkpoint";
  const std::string gguf = read_file(ckpt + "/model.gguf"), masters = read_file(ckpt + "/scales.safetensors");
  EXPECT_NE(gguf, read_file(base));  // the run moved the scales
  EXPECT_NE(masters, read_file(o.out_dir + "/checkpoint/scales.safetensors"));  // its own masters, not the CPU's

  expect_resume_bit_for_bit(g, dir + "/killed");

  // the device's default storage, bf16 (the W' blocks in it; the masters f32 as ever), resumes too
  TrainOptions h = g;
  h.dtype.reset();
  h.out_dir = dir + "/bf16";
  ASSERT_EQ(train(h).checkpoint_error, "");
  EXPECT_NE(read_file(h.out_dir + "/checkpoint/scales.safetensors"), masters);
  expect_resume_bit_for_bit(h, dir + "/bf16_killed");
  const SeedLog bf16_log = seed_log_read(h.out_dir + "/seed_log.txt");
  EXPECT_EQ(bf16_log.header["storage_dtype"], "BF16");  // the norms' dtype, not a packed weight's F32
  ReplayOptions bf16_replay;
  bf16_replay.base = base;
  bf16_replay.seed_log = h.out_dir + "/seed_log.txt";
  bf16_replay.tokenizer = o.tokenizer_path;  // the random GGUF has none
  bf16_replay.out = dir + "/replayed_bf16";
  EXPECT_EQ(replay(bf16_replay).written, TUNE_SCALES);
  for (const char* file : {"model.gguf", "scales.safetensors"})
    EXPECT_EQ(read_file(bf16_replay.out + "/" + file), read_file(h.out_dir + "/checkpoint/" + file)) << file;
  bf16_replay.device = DEVICE_CPU;  // as any bf16 run's: the norms it read were bf16
  EXPECT_THAT(error_of([&] { replay(bf16_replay); }), HasSubstr("the run stored weights as BF16, this replay as F32"));

  // smezo replay of the device's f32 seed log, on the device and on the CPU
  for (Device device : {DEVICE_CUDA, DEVICE_CPU}) {
    SCOPED_TRACE(device_name(device));
    ReplayOptions rep;
    rep.base = base;
    rep.seed_log = g.out_dir + "/seed_log.txt";
    rep.device = device;
    rep.tokenizer = o.tokenizer_path;  // the random GGUF has none
    rep.out = dir + "/replayed_" + device_name(device);
    EXPECT_EQ(replay(rep).written, TUNE_SCALES);
    EXPECT_EQ(read_file(rep.out + "/model.gguf"), gguf);
    EXPECT_EQ(read_file(rep.out + "/scales.safetensors"), masters);
  }
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}
