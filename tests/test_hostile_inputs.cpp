// The hostile-input suite of issue 42: every input smezo reads, refused as well as its data files are.
// One test per class of defect, each through the smezo binary as a user meets it, and after each
// refusal the run or output folder is checked: nothing half-written (no folder, or the one that was
// there unchanged). The classes:
//   A  a file that is not a regular file (FIFO, directory, /dev/zero), given as any input;
//   B  `eval` of a checkpoint from another folder scores the run's own rows;
//   C  a MeZO seed log replayed or resumed onto another model (the model fingerprint);
//   D  NaN or Inf in an adapter's weights;
//   E  sizes taken before they are bounded (--max-len, max_new_tokens, option ranges, huge files);
//   F  state not checked (a finished run's damaged checkpoint, --export-data on a full disk, a
//      seed log's impossible record);
//   G  messages that point the wrong way (a file's field reported as an option, and others).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "setup/model_setup.h"  // default_model_path
#include "test_util.h"

using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::read_json;
using smezo_test::run_command;
using smezo_test::write_file;
using testing::HasSubstr;
using testing::Not;
namespace fs = std::filesystem;

namespace {

// absolute: some runs start in another folder
const std::string kSmezo = fs::absolute(smezo_test::smezo_binary()).string();
const std::string kStories = smezo::default_model_path();
// A tiny MeZO run of stories260K: two steps, short candidates, a few dev and test examples.
const std::string kTrainNoLen = " train --task sst2 --method mezo --steps 2 --batch 2 --lr 2e-3 --eval-every 0"
                                " --dev-examples 4 --test-examples 4 --progress-every 1000";
const std::string kTrain = kTrainNoLen + " --max-len 40";
const char* const kSpec = R"({"name": "s", "prompt": "{t}", "candidates": [" a", " b"], "label": {"field": "l"}})";

struct SmezoRun {
  int rc;
  std::string out;
  double seconds;
};

// smezo ARGS under a timeout (a FIFO that blocked would end as rc 124), in `cwd` when given.
SmezoRun run_smezo(const std::string& args, const std::string& cwd = "") {
  SmezoRun r;
  const auto t0 = std::chrono::steady_clock::now();
  r.rc = run_command((cwd.empty() ? "" : "cd " + cwd + " && ") + "timeout 120 " + kSmezo + " " + args, &r.out);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// Every file under dir (relative path -> bytes); empty when dir is not there.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  if (!fs::exists(dir)) return files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = read_file(e.path().string());
  return files;
}

// A refusal: exit status 1 (2 for the command line's own checks), a "smezo: error:" line holding
// `says`, and `folder` as it was.
void expect_refused(const SmezoRun& r, const std::string& says, const std::string& folder,
                    const std::map<std::string, std::string>& before = {}, int rc = 1) {
  EXPECT_EQ(r.rc, rc) << r.out;
  EXPECT_THAT(r.out, HasSubstr("smezo: error: ")) << r.out;
  EXPECT_THAT(r.out, HasSubstr(says)) << r.out;
  EXPECT_EQ(snapshot(folder), before) << "half-written: " << folder << "\n" << r.out;
}

// --check-data's refusal: exit status 1, the problem's line holding `says`, nothing written.
void expect_problem(const SmezoRun& r, const std::string& says, const std::string& folder) {
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr(says)) << r.out;
  EXPECT_THAT(r.out, HasSubstr("check-data: 1 problem in ")) << r.out;
  EXPECT_FALSE(fs::exists(folder)) << r.out;
}

// A two-step MeZO run of stories260K (its folder), made once per test binary and copied for use.
const std::string& mezo_run() {
  static const std::string dir = [] {
    const std::string d = make_temp_dir("hostile_run") + "/run";
    const SmezoRun r = run_smezo(kTrain + " --out " + d);
    EXPECT_EQ(r.rc, 0) << r.out;
    return d;
  }();
  return dir;
}

std::string copy_of(const std::string& dir, const std::string& tag) {
  const std::string to = make_temp_dir(tag) + "/run";
  fs::copy(dir, to, fs::copy_options::recursive);
  return to;
}

// The seed log's header object and its text with the header replaced by `header`.
nlohmann::json log_header(const std::string& text) {
  const size_t a = text.find("\n# {") + 3, b = text.find('\n', a);
  return nlohmann::json::parse(text.substr(a, b - a));
}
std::string with_header(const std::string& text, const nlohmann::json& header) {
  const size_t a = text.find("\n# {") + 3, b = text.find('\n', a);
  return text.substr(0, a) + header.dump() + text.substr(b);
}

// A copy of a safetensors file with one value of one tensor replaced (f32 tensors).
void poison_tensor(const std::string& path, float value) {
  const smezo::SafetensorsFile file(path);
  std::vector<std::vector<float>> values;
  std::vector<smezo::SafetensorsEntry> entries;
  values.reserve(file.tensors().size());
  for (const auto& [name, v] : file.tensors()) {
    values.emplace_back(static_cast<size_t>(v.numel()));
    v.read_f32(values.back().data());
    entries.push_back({name, smezo::DTYPE_F32, v.shape, values.back().data()});
  }
  values.back()[values.back().size() / 2] = value;
  const std::string tmp = path + ".poisoned";
  smezo::write_safetensors(tmp, entries, {{"format", "pt"}});
  fs::rename(tmp, path);
}

}  // namespace

// A: a FIFO, a directory or /dev/zero given as a model, a seed log (replay, or a run folder's under
// --resume), a tokenizer or an adapter's weights is refused at once, saying what it is.
TEST(HostileInputs, A_WhatIsNotARegularFileIsRefusedAsAnyInput) {
  const std::string dir = make_temp_dir("hostile_a");
  const std::string out = dir + "/out";
  for (const char* name : {"fifo.gguf", "fifo.bin", "fifo.json", "fifo.model", "fifo_log.txt"})
    ASSERT_EQ(mkfifo((dir + "/" + name).c_str(), 0600), 0);
  ASSERT_EQ(symlink("/dev/zero", (dir + "/zero.model").c_str()), 0);
  ASSERT_EQ(symlink("/dev/zero", (dir + "/zero_log.txt").c_str()), 0);
  fs::create_directory(dir + "/dir_log.txt");
  // a run folder whose seed log is a FIFO, and an adapter folder whose weights are one
  fs::create_directory(dir + "/run");
  ASSERT_EQ(mkfifo((dir + "/run/seed_log.txt").c_str(), 0600), 0);
  fs::create_directory(dir + "/adapter");
  write_file(dir + "/adapter/adapter_config.json", R"({"peft_type": "LORA", "r": 2, "lora_alpha": 4,
      "target_modules": ["q_proj"], "base_model_name_or_path": null})");
  ASSERT_EQ(mkfifo((dir + "/adapter/adapter_model.safetensors").c_str(), 0600), 0);
  const std::string d = dir + "/";
  const std::pair<std::string, std::string> cases[] = {
      {"info " + d + "fifo.gguf", "GGUF file " + d + "fifo.gguf is a FIFO, not a regular file"},
      {"info " + d + "fifo.bin", "llama2.c model " + d + "fifo.bin is a FIFO, not a regular file"},
      {"replay " + d + "fifo.bin " + d + "zero_log.txt --out " + out, "seed log " + d + "zero_log.txt is a character"},
      {"replay " + kStories + " " + d + "fifo_log.txt --out " + out, "seed log " + d + "fifo_log.txt is a FIFO"},
      {"replay " + kStories + " " + d + "dir_log.txt --out " + out, "seed log " + d + "dir_log.txt is a directory"},
      {kTrain + " --resume --out " + d + "run", "seed log " + d + "run/seed_log.txt is a FIFO"},
      {"generate --steps 3 --tokenizer " + d + "fifo.json", "tokenizer " + d + "fifo.json is a FIFO"},
      {"generate --steps 3 --tokenizer " + d + "fifo.model", "tokenizer " + d + "fifo.model is a FIFO"},
      {"generate --steps 3 --tokenizer " + d + "zero.model", "tokenizer " + d + "zero.model is a character device"},
      {"eval --test-examples 2 --adapter " + d + "adapter",
       "safetensors file " + d + "adapter/adapter_model.safetensors is a FIFO"},
  };
  for (const auto& [args, says] : cases) {
    const auto before = snapshot(dir + "/run");
    const SmezoRun r = run_smezo(args);
    SCOPED_TRACE(args);
    expect_refused(r, says, out);
    EXPECT_EQ(snapshot(dir + "/run"), before);
    EXPECT_LT(r.seconds, 60.0);
  }
}

// B: a run on files given by relative paths records them absolute, so `eval` of its checkpoint from
// another folder (holding files of the same names) scores the run's own rows; a settings file with a
// relative path (an older smezo) is refused, not read against the wrong folder.
TEST(HostileInputs, B_EvalOfACheckpointScoresTheRunsRowsFromAnyFolder) {
  const std::string here = fs::absolute(make_temp_dir("hostile_b_run")).string();
  const std::string there = fs::absolute(make_temp_dir("hostile_b_other")).string();
  const std::string spec = R"({"name": "mine", "prompt": "{text} It was", "candidates": [" bad", " good"],
      "label": {"field": "label"}})";
  auto rows = [](int n) {
    std::string t;
    for (int i = 0; i < n; i++)
      t += "{\"text\": \"row " + std::to_string(i) + "\", \"label\": " + std::to_string(i % 2) + "}\n";
    return t;
  };
  for (const std::string& d : {here, there}) write_file(d + "/spec.json", spec);
  write_file(here + "/train.jsonl", rows(6));
  write_file(here + "/dev.jsonl", rows(3));
  write_file(there + "/dev.jsonl", rows(7));  // the decoy: same name, other rows
  SmezoRun r = run_smezo("train --task-spec spec.json --train-file train.jsonl --dev-file dev.jsonl --steps 1 "
                         "--batch 2 --max-len 32 --eval-every 0 --out run", here);
  ASSERT_EQ(r.rc, 0) << r.out;
  const nlohmann::json settings = read_json(here + "/run/checkpoint/smezo_run.json");
  EXPECT_EQ(settings["dev_file"], here + "/dev.jsonl");
  EXPECT_EQ(settings["task_spec"], here + "/spec.json");
  r = run_smezo("eval --model " + here + "/run/checkpoint --out " + there + "/eval.json", there);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--dev-file " + here + "/dev.jsonl"));
  EXPECT_EQ(read_json(there + "/eval.json")["examples"], 3) << r.out;  // the run's 3 rows, not the decoy's 7
  // the settings of an older smezo, with the paths as the run was given them
  nlohmann::json old = settings;
  old["dev_file"] = "dev.jsonl";
  old["task_spec"] = "spec.json";
  write_file(here + "/run/checkpoint/smezo_run.json", old.dump());
  const auto before = snapshot(there);
  r = run_smezo("eval --model " + here + "/run/checkpoint", there);
  expect_refused(r, "eval: the run's --task-spec spec.json (" + here + "/run/checkpoint/smezo_run.json) is a relative "
                 "path, and the folder it was relative to is not recorded", there, before);
}

// C: a MeZO log carries the base model's fingerprint: replay and --resume refuse other weights (the
// same shapes, one value changed), and a copy with its Q/K rows reordered (llama2.c -> Hugging Face);
// a converted copy of the same weights (Hugging Face f32 -> Hugging Face f32) replays bit for bit.
TEST(HostileInputs, C_AMezoLogReplaysOnlyOntoItsOwnModel) {
  const std::string dir = make_temp_dir("hostile_c");
  SmezoRun r = run_smezo("convert --dtype f32 --out " + dir + "/hf");  // stories260K, Q/K rows in HF's order
  ASSERT_EQ(r.rc, 0) << r.out;
  r = run_smezo("convert --dtype f32 --model " + dir + "/hf --out " + dir + "/copy");
  ASSERT_EQ(r.rc, 0) << r.out;
  fs::copy(dir + "/hf", dir + "/other", fs::copy_options::recursive);
  poison_tensor(dir + "/other/model.safetensors", 0.5f);  // its last tensor's middle value
  r = run_smezo(kTrain + " --model " + dir + "/hf --out " + dir + "/run");
  ASSERT_EQ(r.rc, 0) << r.out;
  const nlohmann::json header = log_header(read_file(dir + "/run/seed_log.txt"));
  ASSERT_TRUE(header.contains("model_fingerprint")) << header.dump();
  EXPECT_EQ(header["model_fingerprint"]["qk_rows"], "rotate-half");
  // the converted copy replays bit for bit
  r = run_smezo("replay " + dir + "/copy " + dir + "/run/seed_log.txt --out " + dir + "/replayed");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(read_file(dir + "/replayed/model.safetensors"), read_file(dir + "/run/checkpoint/model.safetensors"));
  // other weights of the same shapes, and the same weights in llama2.c's row order
  const std::string log = dir + "/run/seed_log.txt", out = dir + "/refused";
  SmezoRun refused = run_smezo("replay " + dir + "/other " + log + " --out " + out);
  expect_refused(refused, "the model differs: " + dir + "/other is not the base model the run started from", out);
  EXPECT_THAT(refused.out, HasSubstr("---> HINT: replay onto the model the run started from (the log names"));
  expect_refused(run_smezo("replay " + kStories + " " + log + " --out " + out),
                 kStories + " holds the run's weights with the Q and K rows in interleaved order, the run's were "
                 "rotate-half", out);
  // --resume with another --model: refused before anything is written
  const auto before = snapshot(dir + "/run");
  r = run_smezo(kTrain + " --resume --model " + dir + "/other --out " + dir + "/run");
  expect_refused(r, "the model differs: " + dir + "/other is not the base model the run started from", dir + "/run",
                 before);
  // a log's fingerprint field made up by hand
  nlohmann::json bad = header;
  bad["model_fingerprint"] = "abc";
  write_file(dir + "/bad_log.txt", with_header(read_file(log), bad));
  expect_refused(run_smezo("replay " + dir + "/copy " + dir + "/bad_log.txt --out " + out),
                 "the run header's model_fingerprint \"abc\" is malformed", out);
}

// D: NaN or Inf in an adapter's weights is refused by eval, generate and merge, naming tensor and index.
TEST(HostileInputs, D_NonFiniteAdapterWeightsAreRefused) {
  const std::string dir = make_temp_dir("hostile_d");
  SmezoRun r = run_smezo(kTrain + " --tune lora --lora-r 2 --out " + dir + "/run");
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string adapter = dir + "/run/checkpoint";
  poison_tensor(adapter + "/adapter_model.safetensors", std::numeric_limits<float>::quiet_NaN());
  const std::string out = dir + "/out";
  for (const std::string& args : {"eval --test-examples 2 --adapter " + adapter,
                                  "generate --steps 4 --adapter " + adapter,
                                  "merge --model " + kStories + " --adapter " + adapter + " --out " + out}) {
    SCOPED_TRACE(args);
    expect_refused(run_smezo(args), "adapter_model.safetensors holds NaN at index", out);
  }
  poison_tensor(adapter + "/adapter_model.safetensors", std::numeric_limits<float>::infinity());
  expect_refused(run_smezo("eval --test-examples 2 --adapter " + adapter), "holds +Inf at index", out);
}

// E: a size is bounded before it sizes anything: --max-len far past the context is capped (the run is
// small and quick), max_new_tokens, the option ranges and huge files are refused at once.
TEST(HostileInputs, E_SizesAreBoundedBeforeTheyAreUsed) {
  const std::string dir = make_temp_dir("hostile_e");
  SmezoRun r = run_smezo(kTrainNoLen + " --max-len 1000000000 --out " + dir + "/long");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_LT(read_json(dir + "/long/summary.json")["peak_host_rss_bytes"].get<double>(), 2e9) << r.out;
  // out-of-range options: refused before the run folder exists (by the command line's checks, rc 2,
  // which are the library's rules: train_option_rules)
  const std::string out = dir + "/out";
  const std::tuple<std::string, std::string, int> cases[] = {
      {" --probes-per-step 1000000", "--probes-per-step: must be an integer in [1, 1024], got 1000000", 2},
      {" --accumulate 1000000000", "--accumulate: must be an integer in [1, 1024], got 1000000000", 2},
      {" --eps 1e-45", "--eps: must be >= 1.17549e-38, got 1e-45", 2},
      {" --tune lora --lora-r 100000", "--lora-r: must be an integer in [1, 4096], got 100000", 2},
      {" --tune lora --lora-r 40", "--lora-r 40: the adapter of model.layers.0.self_attn.q_proj.weight [64, 64] "
                                   "would hold 5120 numbers, as many as the weight itself or more", 1},
      {" --tune prefix --prefix-tokens 511", "a prefix of 511 tokens leaves 1 of the model's 512 positions", 1},
  };
  for (const auto& [args, says, rc] : cases) {
    SCOPED_TRACE(args);
    expect_refused(run_smezo(kTrain + args + " --out " + out), says, out, {}, rc);
  }
  // a generation spec's max_new_tokens, a 20 GB file of NULs, a 10 MB option, a 1,000,000-column header
  write_file(dir + "/gen.json", R"({"name": "g", "kind": "generation", "prompt": "{q}", "completion_field": "a",
      "max_new_tokens": 1000000000000})");
  write_file(dir + "/g.jsonl", "{\"q\": \"x\", \"a\": \"y\"}\n");
  r = run_smezo("train --check-data --task-spec " + dir + "/gen.json --train-file " + dir + "/g.jsonl");
  expect_problem(r, "\"max_new_tokens\" 1000000000000 is more than any model's context", out);
  write_file(dir + "/spec.json", kSpec);
  write_file(dir + "/nul.jsonl", "");
  ASSERT_EQ(::truncate((dir + "/nul.jsonl").c_str(), int64_t{20} << 30), 0);
  r = run_smezo("train --check-data --task-spec " + dir + "/spec.json --train-file " + dir + "/nul.jsonl");
  expect_problem(r, "data file " + dir + "/nul.jsonl is 21474836480 bytes, more than the 1073741824", out);
  EXPECT_LT(r.seconds, 30.0);
  std::string words;
  while (words.size() < (10 << 20)) words += " once upon a time";
  write_file(dir + "/long.jsonl", "{\"t\": \"x\", \"l\": 0, \"o\": \"" + words + "\"}\n");
  write_file(dir + "/opt.json",
             R"({"name": "o", "prompt": "{t}", "candidates": [" {o}", " b"], "label": {"field": "l"}})");
  r = run_smezo("train --check-data --task-spec " + dir + "/opt.json --train-file " + dir + "/long.jsonl");
  expect_problem(r, "long.jsonl:1: candidate 0 (template \" {o}\") \"  once upon a time", out);
  EXPECT_THAT(r.out, testing::ContainsRegex("is at least [0-9]+ tokens long and does not fit in --max-len 256 with BOS "
                                            "---> HINT: shorten it"));
  EXPECT_LT(r.seconds, 30.0);
  write_file(dir + "/wide.csv", [] {
    std::string h;
    for (int i = 0; i < 1000000; i++) h += (i ? ",c" : "c") + std::to_string(i);
    return h + ",t,l\n" + std::string(1000000, ',') + "x,0\n";
  }());
  r = run_smezo("train --check-data --task-spec " + dir + "/spec.json --train-file " + dir + "/wide.csv");
  EXPECT_LT(r.seconds, 60.0) << r.out;
  EXPECT_THAT(r.out, Not(HasSubstr("c999999"))) << "the message lists every column";
  EXPECT_FALSE(fs::exists(out));
}

// F: a finished run whose checkpoint was cut short is rebuilt on --resume (not "nothing to do"),
// --export-data that cannot write leaves no temporary file, and a log no run can write is refused.
TEST(HostileInputs, F_StateIsCheckedBeforeItIsTrusted) {
  const std::string run = copy_of(mezo_run(), "hostile_f");
  const std::string weights = run + "/checkpoint/model.safetensors", good = read_file(weights);
  write_file(weights, good.substr(0, good.size() / 2));
  SmezoRun r = run_smezo(kTrain + " --resume --out " + run);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("its final checkpoint is damaged (safetensors file " + weights));
  EXPECT_THAT(r.out, HasSubstr("rebuilding it from the seed log"));
  EXPECT_EQ(read_file(weights), good);
  // a seed log whose learning rate is negative: no run logs one
  const std::string dir = make_temp_dir("hostile_f2"), out = dir + "/out";
  std::string text = read_file(run + "/seed_log.txt");
  const size_t last = text.rfind(' ', text.size() - 2);
  write_file(dir + "/neg_lr.txt", text.substr(0, last + 1) + "bf800000\n");
  expect_refused(run_smezo("replay " + kStories + " " + dir + "/neg_lr.txt --out " + out),
                 "logs the learning rate -1 (not a finite number >= 0), which no run logs", out);
  // --export-data into a file-size limit of 4 KB: the split files fail, none of their .tmp stays
  r = {};
  r.rc = run_command("bash -c 'ulimit -f 4; trap \"\" XFSZ; exec " + kSmezo + " train --task sst2 --export-data " +
                     dir + "/export'", &r.out);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("smezo: error: cannot write " + dir + "/export/"));
  for (const auto& e : fs::directory_iterator(dir + "/export"))
    EXPECT_THAT(e.path().string(), Not(HasSubstr(".tmp"))) << r.out;
}

// G: what a file holds is reported as the file's (its path, line and field), not as an option the
// user never gave, and the other messages of the issue say what to do.
TEST(HostileInputs, G_MessagesNameWhatTheUserGave) {
  const std::string dir = make_temp_dir("hostile_g"), out = dir + "/out";
  const std::string log = read_file(mezo_run() + "/seed_log.txt");
  nlohmann::json h = log_header(log);
  h["spsa"]["sparsity"] = 2.0;
  write_file(dir + "/log.txt", with_header(log, h));
  SmezoRun r = run_smezo("replay " + kStories + " " + dir + "/log.txt --out " + out);
  expect_refused(r, dir + "/log.txt line 2: field \"sparsity\" must be in [0, 1), got 2", out);
  EXPECT_THAT(r.out, HasSubstr("HINT: the seed log was edited or damaged"));
  EXPECT_THAT(r.out, Not(HasSubstr("--sparsity")));
  // an adapter's r
  const std::string adapter = copy_of(mezo_run(), "hostile_g_adapter");  // only for a folder to write into
  fs::create_directory(dir + "/adapter");
  write_file(dir + "/adapter/adapter_config.json", R"({"peft_type": "LORA", "r": -8, "lora_alpha": 16,
      "target_modules": ["q_proj"]})");
  r = run_smezo("eval --test-examples 2 --adapter " + dir + "/adapter");
  expect_refused(r, dir + "/adapter/adapter_config.json: field \"r\" must be an integer in [1, 4096], got -8", out);
  EXPECT_THAT(r.out, Not(HasSubstr("--lora-r")));
  // a prompt longer than the context (stories260K: 512 positions)
  std::string prompt;
  for (int i = 0; i < 600; i++) prompt += " once";
  r = run_smezo("generate --new-tokens 2 --prompt '" + prompt + "'");
  expect_refused(r, "is longer than the model's context (512 positions) ---> HINT: shorten the prompt", out);
  // an empty tokenizer.json
  write_file(dir + "/tokenizer.json", R"({"model": {"type": "BPE", "vocab": {}, "merges": []}})");
  r = run_smezo("tokenize --tokenizer " + dir + "/tokenizer.json hi");
  expect_refused(r, dir + "/tokenizer.json: the vocabulary is empty (no token is listed)", out);
  // a JSON label -0 is the index 0
  write_file(dir + "/spec.json", kSpec);
  write_file(dir + "/train.jsonl", "{\"t\": \"x\", \"l\": -0}\n{\"t\": \"y\", \"l\": 1}\n");
  r = run_smezo("train --check-data --task-spec " + dir + "/spec.json --train-file " + dir + "/train.jsonl");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("check-data: 0 problems"));
}
