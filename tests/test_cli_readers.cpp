// The smezo binary on corrupt model files: every command opens a model through the same
// checks (info refuses what generate refuses), refusals are one line naming the file and
// field or tensor, come before any large allocation, and carry no raw bytes from the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/assets.h"
#include "formats/safetensors.h"
#include "model/hf_dir.h"
#include "model/model.h"
#include "model_fixture.h"
#include "test_util.h"

using smezo_test::run_command;
using testing::HasSubstr;

namespace {

const std::string kSmezo = smezo_test::smezo_binary();

// A random LLaMA with TinyStories' 512-token vocabulary, as a Hugging Face directory.
smezo::ModelConfig tiny_512_config() {
  smezo::ModelConfig c = smezo_test::tiny_llama_config();
  c.vocab_size = 512;
  return c;
}

void write_model_dir(const std::string& dir, const smezo::WeightSource& src,
                     const std::vector<std::string>& skip = {}) {
  std::vector<smezo::SafetensorsEntry> entries;
  for (const auto& kv : src.tensors) {
    if (std::find(skip.begin(), skip.end(), kv.first) != skip.end()) continue;
    entries.push_back({kv.first, kv.second.dtype, kv.second.shape, kv.second.data});
  }
  smezo::write_safetensors(dir + "/model.safetensors", entries, {{"format", "pt"}});
  smezo_test::write_file(dir + "/config.json", smezo::hf_config_json(src.config));
}

struct CliRun {
  int rc;
  std::string out;
  double seconds;
};

CliRun run_smezo(const std::string& args) {
  CliRun r;
  auto t0 = std::chrono::steady_clock::now();
  r.rc = run_command(kSmezo + " " + args, &r.out);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// The one-line promise: "smezo: error: ...\n", nothing else, no control bytes, exit 1.
void expect_one_line_error(const CliRun& r, const std::string& expect) {
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_THAT(r.out, testing::StartsWith("smezo: error: "));
  EXPECT_THAT(r.out, HasSubstr(expect));
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.back(), '\n');
  for (size_t i = 0; i + 1 < r.out.size(); i++)
    EXPECT_FALSE(static_cast<unsigned char>(r.out[i]) < 0x20 || r.out[i] == 0x7f)
        << "byte " << i << " of " << r.out;
}

std::string generate_args(const std::string& model) {
  return "generate --steps 3 --temperature 0 --model " + model + " --tokenizer " +
         smezo::asset_path("tokenizers/tinystories-512.model");
}

}  // namespace

TEST(CliReaders, TinyModelDirectoryRuns) {
  std::string dir = smezo_test::make_temp_dir("clir_ok");
  write_model_dir(dir, smezo_test::random_weight_source(tiny_512_config(), 1));
  CliRun info = run_smezo("info " + dir);
  EXPECT_EQ(info.rc, 0) << info.out;
  CliRun gen = run_smezo(generate_args(dir) + " 2>/dev/null");
  EXPECT_EQ(gen.rc, 0) << gen.out;
}

// info used to print MISSING and exit 0 where generate refused: now both refuse, alike.
TEST(CliReaders, InfoRefusesWhatGenerateRefuses) {
  std::string dir = smezo_test::make_temp_dir("clir_missing");
  write_model_dir(dir, smezo_test::random_weight_source(tiny_512_config(), 2),
                  {"model.layers.1.mlp.up_proj.weight"});
  const std::string expect = "model " + dir + ": no tensor 'model.layers.1.mlp.up_proj.weight'";
  CliRun info = run_smezo("info " + dir);
  expect_one_line_error(info, expect);
  CliRun gen = run_smezo(generate_args(dir));
  expect_one_line_error(gen, expect);
  EXPECT_EQ(info.out, gen.out);
}

TEST(CliReaders, ConfigWithAbsurdSizesIsRefusedAtOnce) {
  std::string dir = smezo_test::make_temp_dir("clir_layers");
  write_model_dir(dir, smezo_test::random_weight_source(tiny_512_config(), 3));
  nlohmann::json j = nlohmann::json::parse(smezo_test::read_file(dir + "/config.json"));
  for (int64_t layers : {int64_t(1) << 40, int64_t(1) << 20}) {
    j["num_hidden_layers"] = layers;
    smezo_test::write_file(dir + "/config.json", j.dump());
    CliRun r = run_smezo("info " + dir);
    expect_one_line_error(r, "config " + dir + "/config.json: field 'num_hidden_layers' is " +
                                 std::to_string(layers));
    EXPECT_LT(r.seconds, 5.0);
  }
  j["num_hidden_layers"] = 2;
  j["head_dim"] = std::numeric_limits<int64_t>::max();
  smezo_test::write_file(dir + "/config.json", j.dump());
  expect_one_line_error(run_smezo("info " + dir), "field 'head_dim' is 9223372036854775807");
  j["head_dim"] = 8;
  j["rms_norm_eps"] = 1e308;
  smezo_test::write_file(dir + "/config.json", j.dump());
  expect_one_line_error(run_smezo("info " + dir), "field 'rms_norm_eps' is 1e+308");
}

TEST(CliReaders, NonFiniteWeightIsRefusedNamingTensorAndIndex) {
  std::string dir = smezo_test::make_temp_dir("clir_nan");
  smezo::WeightSource src = smezo_test::random_weight_source(tiny_512_config(), 4);
  smezo_test::mutable_tensor(src, "model.layers.0.mlp.down_proj.weight")[77] = NAN;
  write_model_dir(dir, src);
  expect_one_line_error(run_smezo(generate_args(dir)),
                        "tensor model.layers.0.mlp.down_proj.weight in " + dir +
                            "/model.safetensors holds NaN at index 77 (row 1, column 29)");
}

TEST(CliReaders, ShiftedSafetensorsHeaderIsRefused) {
  std::string dir = smezo_test::make_temp_dir("clir_shift");
  write_model_dir(dir, smezo_test::random_weight_source(tiny_512_config(), 5));
  std::string bytes = smezo_test::read_file(dir + "/model.safetensors");
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  ASSERT_EQ(bytes[8 + n - 1], ' ') << "the writer pads this header";
  bytes[0] = static_cast<char>(static_cast<uint8_t>(bytes[0]) - 1);  // one byte short
  smezo_test::write_file(dir + "/model.safetensors", bytes);
  for (const std::string& args : {"info " + dir, generate_args(dir)})
    expect_one_line_error(run_smezo(args), "1 bytes after the last tensor");
}

TEST(CliReaders, FileBytesNeverReachTheTerminalRaw) {
  std::string dir = smezo_test::make_temp_dir("clir_esc");
  write_model_dir(dir, smezo_test::random_weight_source(tiny_512_config(), 6));
  nlohmann::json j = nlohmann::json::parse(smezo_test::read_file(dir + "/config.json"));
  j["model_type"] = "\x1b]0;pwned\x07\x1b[2J";
  smezo_test::write_file(dir + "/config.json", j.dump());
  expect_one_line_error(run_smezo("info " + dir), "\\x1b]0;pwned\\x07\\x1b[2J");
  smezo_test::write_file(dir + "/config.json", "{\"model_type\": \"llama\x1b[2J\"}");
  expect_one_line_error(run_smezo("info " + dir), "not valid JSON");
}
