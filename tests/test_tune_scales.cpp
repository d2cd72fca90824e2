// --tune scales (issue 43) on SmolLM2-135M Q4_1 (tied Q8_0 embedding/head): a short run writes a GGUF of the
// base's size; a run killed after step 2 and resumed ends with the same bytes; `smezo replay` rebuilds the
// GGUF bit for bit; the reloaded GGUF gives the logits of the f16-rounded masters; and the refusals (an
// unquantised model, --weights dequantized, a CUDA run, a foreign or truncated base on resume or replay).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/half.h"
#include "common/sha256.h"
#include "cpu/cpu_backend.h"
#include "formats/packed_weights.h"
#include "formats/safetensors.h"
#include "model/model.h"
#include "model/model_loader.h"
#include "model_fixture.h"
#include "smezo/replay.h"
#include "smezo/train.h"
#include "test_util.h"
#include "train/train_options.h"

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
  // the weights dequantized at load, or a device without the mode yet
  o.weights = WEIGHTS_DEQUANTIZED;
  EXPECT_THAT(error_of([&] { validate_train_options(o); }),
              HasSubstr("--tune scales tunes the block scales of a GGUF kept in its blocks, but --weights dequantized"));
  o.weights = WEIGHTS_PACKED;
  o.device = DEVICE_CUDA;
  EXPECT_THAT(error_of([&] { validate_train_options(o); }), HasSubstr("--tune scales runs on the CPU in this build"));
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
