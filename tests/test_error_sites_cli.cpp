// The command line's refusals, each triggered through the smezo binary (or the library call behind
// an option) and checked by its message (tools/checks/untested_errors.py lists the sites no test
// reaches): option combinations of eval, train, info, logits and bench, the run header fields
// replay reads, the device and dtype names, and the training options no run can use.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "setup/model_convert.h"
#include "setup/model_setup.h"
#include "smezo/train.h"
#include "test_util.h"
#include "train/train_options.h"

using smezo_test::error_of;
using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::run_command;
using smezo_test::write_file;
using testing::HasSubstr;

namespace {

const std::string kSmezo = smezo_test::smezo_binary();
const char* const kSpec = R"({"name": "s", "prompt": "{t} It was", "candidates": [" bad", " good"],
    "label": {"field": "l"}})";

struct SmezoRun {
  int rc;
  std::string out;
};

SmezoRun run_smezo(const std::string& args) {
  SmezoRun r;
  r.rc = run_command("timeout 120 " + kSmezo + " " + args, &r.out);
  return r;
}

// A stories260K MeZO run of two steps: its seed log's text (made once).
const std::string& run_log() {
  static const std::string text = [] {
    const std::string dir = make_temp_dir("cli_sites_run");
    const SmezoRun r = run_smezo("train --task sst2 --method mezo --steps 2 --batch 2 --max-len 32 --eval-every 0 "
                        "--dev-examples 2 --test-examples 2 --progress-every 1000 --out " + dir + "/run");
    EXPECT_EQ(r.rc, 0) << r.out;
    return read_file(dir + "/run/seed_log.txt");
  }();
  return text;
}

// The log with its header edited.
std::string edited_log(const std::function<void(nlohmann::json&)>& edit) {
  std::string text = run_log();
  const size_t a = text.find("\n# {") + 3, b = text.find('\n', a);
  nlohmann::json h = nlohmann::json::parse(text.substr(a, b - a));
  edit(h);
  const std::string path = make_temp_dir("cli_sites_log") + "/seed_log.txt";
  write_file(path, text.substr(0, a) + h.dump() + text.substr(b));
  return path;
}

}  // namespace

TEST(CliErrorSites, OptionCombinations) {
  const std::string dir = make_temp_dir("cli_sites");
  write_file(dir + "/s.json", kSpec);
  write_file(dir + "/d.jsonl", "{\"t\": \"fine\", \"l\": 1}\n");
  const std::pair<std::string, std::string> cases[] = {
      {"eval --task-spec " + dir + "/s.json --split test --dev-file " + dir + "/d.jsonl",
       "eval: --task-spec with --split test needs --test-file FILE (the records to score)"},
      {"eval --mode icl --shots 0 --test-examples 2", "--shots 0: icl needs k > 0 demonstrations, zero-shot none"},
      {"eval --mode icl --shots 9 --train-examples 4 --test-examples 2",
       "--shots 9: the training split has 4 examples"},
      {"eval --split dev --dev-examples 0", "the dev split of sst2 is empty (--dev-examples 0?)"},
      {"info x.bin --model y.bin", "info: give the model once, as MODEL or --model"},
      {"logits --tokens 1,x --out " + dir + "/l.safetensors",
       "--tokens: 'x' is not a token id (an integer in [0, 2^31))"},
      {"train --check-data --task sst2", "train: --check-data checks --task-spec and its data files"},
      {"train --export-data " + dir + "/e --task-spec " + dir + "/s.json --train-file " + dir + "/d.jsonl",
       "train: --export-data writes a built-in --task"},
      {"train --task-spec " + dir + "/s.json --steps 1", "--task-spec needs --train-file"},
      {"bench --shape tiny --seq 4,x", "--seq: 'x' is not a positive integer"},
      {"bench --kernel linear --shapes 12", "--shapes: '12' is not NxK (out features x in features, e.g. 11008x4096)"},
      {"bench --kernel linear --m ''", "--m needs at least one value"},
      {"bench --kernel linear --dtype f32", "--dtype f32 (the kernel benchmark takes bf16 or f16)"},
      {"logits --tokens '' --out " + dir + "/l.safetensors", "--tokens needs at least one token id"},
  };
  for (const auto& [args, says] : cases) {
    const SmezoRun r = run_smezo(args);
    EXPECT_EQ(r.rc, 1) << args << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr("smezo: error: ")) << args;
    EXPECT_THAT(r.out, HasSubstr(says)) << args;
  }
}

// What replay reads of a run header: a field of the wrong type, no SPSA settings, an unknown tune
// mode or method, missing fields, and a record whose seed is not the step's.
TEST(CliErrorSites, ReplayOfAnEditedLog) {
  const std::string out = make_temp_dir("cli_sites_replay") + "/out";
  const std::pair<std::function<void(nlohmann::json&)>, std::string> cases[] = {
      {[](nlohmann::json& h) { h["storage_dtype"] = 5; }, "line 2: the run header's storage_dtype 5 is not a string"},
      {[](nlohmann::json& h) { h.erase("spsa"); }, "line 2: not a smezo training log (no 'spsa' in the header)"},
      {[](nlohmann::json& h) { h["tune"] = {{"mode", "adapter"}}; },
       "line 2: tune mode {\"mode\":\"adapter\"} is not one this build replays (lora, prefix, scales, or none for full)"},
      {[](nlohmann::json& h) { h["spsa"]["method"] = "zmezo"; },
       "line 2: the run header's method 'zmezo' is not one this smezo knows"},
      {[](nlohmann::json& h) { h["spsa"].erase("eps"); }, "line 2: the run header is incomplete or malformed: "},
      {[](nlohmann::json& h) { h["spsa"]["total_steps"] = 0; },
       "line 2: field \"total_steps\" 0: the number of steps must be positive"},
  };
  for (const auto& [edit, says] : cases) {
    const SmezoRun r = run_smezo("replay " + smezo::default_model_path() + " " + edited_log(edit) + " --out " + out);
    EXPECT_EQ(r.rc, 1) << says << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr(says));
  }
  std::string text = run_log();
  const size_t last = text.rfind('\n', text.size() - 2) + 1;  // the last record: "2 SEED G LR"
  const size_t s0 = text.find(' ', last) + 1, s1 = text.find(' ', s0);
  text.replace(s0, s1 - s0, "12345");
  const std::string path = make_temp_dir("cli_sites_seed") + "/seed_log.txt";
  write_file(path, text);
  const SmezoRun r = run_smezo("replay " + smezo::default_model_path() + " " + path + " --out " + out);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("step 2 has seed 12345, expected "));
}

TEST(CliErrorSites, DeviceDtypeAndOptionChecks) {
  EXPECT_THAT(error_of([] { smezo::storage_dtype(smezo::DEVICE_CPU, static_cast<smezo::DType>(7)); }),
              HasSubstr("unknown dtype 7 (choose f32, f16 or bf16)"));
  EXPECT_THAT(error_of([] { smezo::storage_dtype(smezo::DEVICE_CPU, smezo::DTYPE_BF16); }),
              HasSubstr("the CPU backend stores f32 only ---> HINT: leave --dtype out, or use --device cuda"));
  EXPECT_THAT(error_of([] { smezo::open_model_on(smezo::ModelOpenOptions{}, nullptr); }),
              HasSubstr("open_model_on: no backend given"));
  EXPECT_THAT(error_of([] { smezo::make_backend(static_cast<smezo::Device>(9)); }),
              HasSubstr("unknown device 9 (choose cpu or cuda)"));
  EXPECT_THAT(error_of([] { smezo::make_backend(smezo::DEVICE_CPU, static_cast<smezo::LinearPathMode>(5)); }),
              HasSubstr("unknown linear path 5 (choose auto, wprime or fused)"));
  EXPECT_THAT(error_of([] { smezo::train_option_range("--colour"); }),
              HasSubstr("train_option_range: no rule for --colour"));
  smezo::ConvertOptions c;
  c.dtype = smezo::DTYPE_F16;
  EXPECT_THAT(error_of([&] { smezo::convert_to_hf_dir(c); }), HasSubstr("--dtype f16: convert writes bf16 or f32"));
  c.dtype = smezo::DTYPE_F32;
  EXPECT_THAT(error_of([&] { smezo::convert_to_hf_dir(c); }), HasSubstr("convert needs --out DIR"));
  // the SPSA checks a run's options go through (a header's are checked the same way, see above)
  smezo::TrainOptions o;
  o.spsa.method = smezo::METHOD_FZOO;
  o.spsa.probes = 4;
  o.spsa.weight_decay = 0.1f;
  EXPECT_THAT(error_of([&] { smezo::validate_train_options(smezo::resolve_defaults(o)); }),
              HasSubstr("--weight-decay 0.1: fzoo scales its step by the spread of the losses"));
}
