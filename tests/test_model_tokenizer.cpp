// The model decides its tokenizer (open_model_tokenizer), BOS only where the tokenizer wants
// one, `smezo tokenize`, tokenizer.json written from a vocabulary, and `smezo convert` (the
// converted directory loads and gives the source's logits). SmolLM2 cases skip, saying why,
// without weights/SmolLM2-135M-Instruct.Q4_1.gguf ($SMEZO_SMOLLM2).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/assets.h"
#include "formats/safetensors.h"
#include "setup/model_convert.h"
#include "setup/model_setup.h"
#include "tasks/task_encode.h"
#include "tokenizer/bpe_vocab.h"
#include "tokenizer/tokenizer_files.h"
#include "train/generate.h"
#include "model_fixture.h"
#include "test_util.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"
#endif

using namespace smezo;
using smezo_test::logits_of;
using smezo_test::run_command;

using smezo_test::smollm2_path;

namespace {

const std::string kSmezo = smezo_test::smezo_binary();
const std::string kBpeFixtures = "tests/fixtures/bpe/";


std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// max |a - b| <= tol * (1 + max |a|)
void expect_close(const std::vector<float>& ref, const std::vector<float>& got, float tol) {
  ASSERT_EQ(ref.size(), got.size());
  float max_ref = 0, max_err = 0;
  for (size_t i = 0; i < ref.size(); i++) {
    max_ref = std::max(max_ref, std::fabs(ref[i]));
    max_err = std::max(max_err, std::fabs(ref[i] - got[i]));
  }
  EXPECT_LE(max_err, tol * (1 + max_ref)) << "max |ref| " << max_ref;
}

}  // namespace

// --- which tokenizer a model gets

TEST(ModelTokenizer, Stories260KGetsTheBundledSentencepiece) {
  OpenedTokenizer t = open_model_tokenizer(default_model_path(), "");
  EXPECT_EQ(t.path, asset_path("tokenizers/tinystories-512.model"));
  EXPECT_EQ(t.tokenizer->vocab_size(), 512);
  EXPECT_TRUE(tokenizer_wants_bos(*t.tokenizer));
}

TEST(ModelTokenizer, ExplicitPathIsReadByWhatItIs) {
  EXPECT_EQ(open_model_tokenizer(default_model_path(), kBpeFixtures + "tiny_smollm/tokenizer.json")
                .tokenizer->vocab_size(), 700);
  EXPECT_EQ(open_model_tokenizer(default_model_path(), kBpeFixtures + "tiny_smollm").tokenizer->vocab_size(), 700);
  EXPECT_EQ(open_model_tokenizer("x.gguf", asset_path("tokenizers/llama2.model")).tokenizer->vocab_size(), 32000);
}

TEST(ModelTokenizer, DirectoryWithoutTokenizerSaysWhatToPass) {
  const std::string dir = smezo_test::make_temp_dir("model_tok_none");
  EXPECT_THAT(smezo_test::error_of([&] { open_model_tokenizer(dir, ""); }),
              testing::AllOf(testing::HasSubstr("no tokenizer for " + dir), testing::HasSubstr("--tokenizer")));
}

TEST(ModelTokenizer, SmolLM2GgufGetsItsBpeWithoutBos) {
  const std::string path = smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  OpenedTokenizer t = open_model_tokenizer(path, "");
  EXPECT_EQ(t.path, path);
  EXPECT_EQ(t.tokenizer->vocab_size(), 49152);
  EXPECT_EQ(t.tokenizer->bos_id(), 1);
  EXPECT_FALSE(tokenizer_wants_bos(*t.tokenizer));
}

// --- BOS in task encoding follows the tokenizer

TEST(ModelTokenizer, TaskEncodingAddsBosOnlyWhenTheTokenizerDoes) {
  TaskExample ex;
  ex.contexts = {"It was", "It was"};
  ex.options = {" great", " terrible"};
  ex.gold = 0;
  auto sp = load_sentencepiece_tokenizer(asset_path("tokenizers/tinystories-512.model"));
  EncodedExample with = encode_example(*sp, ex, 64);
  EXPECT_EQ(with.candidates[0].tokens[0], sp->bos_id());
  EXPECT_EQ(with.candidates[0].tokens.size(), sp->encode("It was great", true).size());

  auto bpe = load_bpe_tokenizer_json(kBpeFixtures + "tiny_smollm/tokenizer.json");  // bos 1, add_bos false
  ASSERT_FALSE(tokenizer_wants_bos(*bpe));
  EncodedExample without = encode_example(*bpe, ex, 64);
  const std::vector<int32_t> full = bpe->encode("It was great", false);
  EXPECT_EQ(without.candidates[0].tokens, full);
  EXPECT_EQ(without.candidates[0].option_start,
            static_cast<int64_t>(bpe->encode("It was", false).size()));
  // left truncation keeps the option and, without BOS, cuts from position 0
  const int64_t n_opt = static_cast<int64_t>(full.size()) - without.candidates[0].option_start;
  ASSERT_GE(static_cast<int64_t>(full.size()), n_opt + 2);
  TaskExample one = ex;  // just the first candidate: the cut fits its option
  one.contexts.resize(1);
  one.options.resize(1);
  EncodedExample cut = encode_example(*bpe, one, n_opt + 1);
  EXPECT_EQ(cut.candidates[0].tokens, std::vector<int32_t>(full.end() - (n_opt + 1), full.end()));
  EXPECT_EQ(cut.candidates[0].option_start, 1);
}

// --- smezo tokenize

TEST(Tokenize, Stories260K) {
  std::string out;
  ASSERT_EQ(run_command(kSmezo + " tokenize 'Once upon a time, Lily smiled.'", &out), 0) << out;
  // sentencepiece's Python package on tinystories-512.model gives the same ids
  EXPECT_EQ(trim(out), "403,407,261,378,432,317,262,423,290,266,426");
  ASSERT_EQ(run_command(kSmezo + " tokenize --bos 'Once upon a time, Lily smiled.'", &out), 0) << out;
  EXPECT_EQ(trim(out), "1,403,407,261,378,432,317,262,423,290,266,426");
}

TEST(Tokenize, SmolLM2) {
  const std::string path = smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  std::string out;
  // ids from tests/fixtures/bpe/smollm2_ids.jsonl (transformers' tokenizer of the same GGUF)
  ASSERT_EQ(run_command(kSmezo + " tokenize --model " + path + " 'Hello, World!'", &out), 0) << out;
  EXPECT_EQ(trim(out), "19556,28,2260,17");
  ASSERT_EQ(run_command(kSmezo + " tokenize --model " + path + " --bos 'Hello, World!'", &out), 0) << out;
  EXPECT_EQ(trim(out), "1,19556,28,2260,17");
}

TEST(Tokenize, BpeTokenizerJsonOverrides) {
  std::string out;
  ASSERT_EQ(run_command(kSmezo + " tokenize --tokenizer " + kBpeFixtures + "tiny_smollm/tokenizer.json 'a  b'", &out),
            0) << out;
  auto bpe = load_bpe_tokenizer_json(kBpeFixtures + "tiny_smollm/tokenizer.json");
  std::string want;
  for (int32_t id : bpe->encode("a  b", false)) want += (want.empty() ? "" : ",") + std::to_string(id);
  EXPECT_EQ(trim(out), want);
}

// --bos with a tokenizer that has none (a tokenizer.json without its tokenizer_config.json):
// refused with the hint to leave --bos out, rather than an id of -1 in the output.
TEST(Tokenize, BosWithoutABosTokenIsRefused) {
  const std::string dir = smezo_test::make_temp_dir("tok_no_bos");
  smezo_test::write_file(dir + "/tokenizer.json", smezo_test::read_file(kBpeFixtures + "tiny_smollm/tokenizer.json"));
  std::string out;
  EXPECT_NE(run_command(kSmezo + " tokenize --tokenizer " + dir + "/tokenizer.json --bos 'a b'", &out), 0);
  EXPECT_THAT(out, testing::HasSubstr("--bos: the tokenizer " + dir + "/tokenizer.json has no BOS token"));
  EXPECT_THAT(out, testing::HasSubstr("HINT: leave --bos out"));
}

// --- tokenizer.json written from a vocabulary reads back to the same vocabulary

TEST(TokenizerFiles, TokenizerJsonRoundTrip) {
  const BpeVocab v = bpe_vocab_from_tokenizer_json(kBpeFixtures + "tiny_smollm/tokenizer.json");
  const std::string dir = smezo_test::make_temp_dir("tok_json");
  smezo_test::write_file(dir + "/tokenizer.json", bpe_tokenizer_json(v));
  smezo_test::write_file(dir + "/tokenizer_config.json", bpe_tokenizer_config_json(v, 2048));
  const BpeVocab w = bpe_vocab_from_tokenizer_json(dir + "/tokenizer.json");
  EXPECT_EQ(w.tokens, v.tokens);
  EXPECT_EQ(w.types, v.types);
  EXPECT_EQ(w.merges, v.merges);
  EXPECT_EQ(w.pre_patterns, v.pre_patterns);
  EXPECT_EQ(w.ignore_merges, v.ignore_merges);
  EXPECT_EQ(w.missing_byte_id, v.missing_byte_id);
  EXPECT_EQ(w.bos_id, v.bos_id);
  EXPECT_EQ(w.eos_id, v.eos_id);
  EXPECT_EQ(w.unk_id, v.unk_id);
  EXPECT_EQ(w.add_bos, v.add_bos);
}

// --- smezo convert

TEST(Convert, Stories260KToHfDirKeepsLogits) {
  const std::string dir = smezo_test::make_temp_dir("convert_stories") + "/hf";
  std::string out;
  ASSERT_EQ(run_command(kSmezo + " convert --dtype f32 --out " + dir, &out), 0) << out;
  EXPECT_THAT(out, testing::HasSubstr("tokenizer.model, tokenizer_config.json, tokenizer.json"));
  // what transformers' AutoTokenizer reads: tokenizer.json whole (PreTrainedTokenizerFast), whose normalizer
  // carries sentencepiece's remove_extra_whitespaces (the ids it then gives are smezo's, runs of spaces too:
  // tools/oracles/peft_oracle.py), its BPE merges transformers' own extraction of tokenizer.model (165)
  const nlohmann::json tj = smezo_test::read_json(dir + "/tokenizer.json");
  EXPECT_EQ(tj["normalizer"]["normalizers"][1]["pattern"]["Regex"], " {2,}");
  EXPECT_EQ(tj["model"]["merges"].size(), 165u);
  EXPECT_EQ(tj["model"]["vocab"].size(), 512u);
  EXPECT_EQ(smezo_test::read_json(dir + "/tokenizer_config.json"),
            nlohmann::json({{"tokenizer_class", "PreTrainedTokenizerFast"}, {"bos_token", "<s>"}, {"eos_token", "</s>"},
                            {"unk_token", "<unk>"}, {"pad_token", nullptr}, {"add_bos_token", true},
                            {"add_eos_token", false}, {"clean_up_tokenization_spaces", false}, {"legacy", true},
                            {"model_max_length", 512}}));
  LoadedModel src = open_model_paths(default_model_path(), "", DEVICE_CPU, 64, 64);
  LoadedModel hf = open_model_paths(dir, "", DEVICE_CPU, 64, 64);
  EXPECT_EQ(hf.model->config().rope_style, ROPE_ROTATE_HALF);
  EXPECT_EQ(tokenizer_wants_bos(*src.tokenizer), true) << "add_bos_token above";
  const std::vector<int32_t> tokens = src.tokenizer->encode("Once upon a time, Lily had a red ball.", true);
  EXPECT_EQ(hf.tokenizer->encode("Once upon a time, Lily had a red ball.", true), tokens);
  expect_close(logits_of(*src.model, tokens), logits_of(*hf.model, tokens), 1e-5f);

  // bf16: the header says BF16, config.json says bfloat16, the logits stay close
  const std::string dir16 = smezo_test::make_temp_dir("convert_stories16") + "/hf";
  ASSERT_EQ(run_command(kSmezo + " convert --out " + dir16, &out), 0) << out;
  SafetensorsFile st(dir16 + "/model.safetensors");
  EXPECT_EQ(st.tensor("model.embed_tokens.weight").dtype, DTYPE_BF16);
  EXPECT_THAT(smezo_test::read_file(dir16 + "/config.json"), testing::HasSubstr("\"bfloat16\""));
  LoadedModel hf16 = open_model_paths(dir16, "", DEVICE_CPU, 64, 64);
  expect_close(logits_of(*src.model, tokens), logits_of(*hf16.model, tokens), 2e-2f);
}

TEST(Convert, RefusesANonEmptyFolder) {
  const std::string dir = smezo_test::make_temp_dir("convert_busy");
  smezo_test::write_file(dir + "/keep.txt", "x");
  std::string out;
  EXPECT_NE(run_command(kSmezo + " convert --out " + dir, &out), 0);
  EXPECT_THAT(out, testing::HasSubstr("is not an empty folder"));
}

TEST(Convert, SmolLM2GgufToHfDirKeepsLogitsAndTokenizer) {
  const std::string path = smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  const std::string dir = smezo_test::make_temp_dir("convert_smollm2") + "/hf";
  ConvertOptions o;
  o.model_path = path;
  o.out_dir = dir;
  o.dtype = DTYPE_F32;
  const ConvertResult r = convert_to_hf_dir(o);
  EXPECT_EQ(r.tokenizer_files, (std::vector<std::string>{"tokenizer.json", "tokenizer_config.json"}));
  {
    LoadedModel src = open_model_paths(path, "", DEVICE_CPU, 64, 64);
    LoadedModel hf = open_model_paths(dir, "", DEVICE_CPU, 64, 64);
    EXPECT_FALSE(tokenizer_wants_bos(*hf.tokenizer));
    // every prompt of the tokenizer fixture: the written tokenizer.json gives transformers' ids
    std::ifstream in(kBpeFixtures + "smollm2_ids.jsonl");
    std::string line;
    int checked = 0;
    while (std::getline(in, line)) {
      const nlohmann::json j = nlohmann::json::parse(line);
      std::string text;
      if (j.contains("text")) {
        text = j["text"].get<std::string>();
      } else {  // bytes that are not UTF-8, as hex
        const std::string hex = j["hex"].get<std::string>();
        for (size_t i = 0; i + 1 < hex.size(); i += 2) text += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
      }
      EXPECT_EQ(hf.tokenizer->encode(text, false), j["ids"].get<std::vector<int32_t>>()) << line;
      checked++;
    }
    EXPECT_GT(checked, 500);
    const std::vector<int32_t> tokens = src.tokenizer->encode("The capital of France is Paris, and", false);
    expect_close(logits_of(*src.model, tokens), logits_of(*hf.model, tokens), 1e-4f);
  }
  std::filesystem::remove_all(dir);  // 540 MB
}

// --- generate on a model without BOS needs a prompt

TEST(ModelTokenizer, GenerateWithoutBosNeedsAPrompt) {
  const std::string path = smollm2_path();
  SKIP_WITHOUT_SMOLLM2(path);
  std::string out;
  EXPECT_NE(run_command(kSmezo + " generate --model " + path + " --steps 4", &out), 0);
  EXPECT_THAT(out, testing::HasSubstr("--prompt"));
}

// Greedy text on SmolLM2 equals transformers' greedy continuation (tests/fixtures/
// smollm2_greedy.json, tools/oracles/greedy_oracle.py; every step's top-1/top-2 gap is > 0.03, far
// above the fp32 differences of the two implementations).
void expect_smollm2_greedy(const std::string& device_args) {
  const std::string path = smollm2_path();
  const nlohmann::json fx = nlohmann::json::parse(smezo_test::read_file("tests/fixtures/smollm2_greedy.json"));
  for (const nlohmann::json& c : fx["cases"]) {
    const std::string prompt = c["prompt"].get<std::string>();
    std::string out;
    // stdout only (a slow load prints progress on stderr): run_command adds 2>&1 outside the ()
    ASSERT_EQ(run_command("(" + kSmezo + " generate --model " + path + " --temperature 0 --new-tokens " +
                              std::to_string(fx["new_tokens"].get<int>()) + " --prompt '" + prompt + "'" +
                              device_args + " 2>/dev/null)",
                          &out), 0) << out;
    EXPECT_EQ(out, prompt + c["text"].get<std::string>() + "\n");
  }
}

TEST(ModelTokenizer, SmolLM2GreedyMatchesTransformers) {
  SKIP_WITHOUT_SMOLLM2(smollm2_path());
  expect_smollm2_greedy("");
}

// The same through the CUDA backend (fp32): on a GPU, or on the emulated one (make emu-test).
TEST(ModelTokenizer, SmolLM2GreedyMatchesTransformersOnCuda) {
#ifdef SMEZO_WITH_CUDA
  if (!smezo::cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  SKIP_WITHOUT_SMOLLM2(smollm2_path());
  expect_smollm2_greedy(" --device cuda --dtype f32");
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// --- tools/demo.sh (README command 1): SmolLM2 on the device there is (the CPU here), the
// bundled stories260K when SmolLM2 cannot be fetched.

TEST(Demo, CpuPathIsReadmeCommandOne) {
  std::string out;
  const std::string env = "SMEZO=" + kSmezo + " ";
  ASSERT_EQ(run_command(env + "tools/demo.sh --dry-run", &out), 0) << out;
  if (out.find("demo: device cuda") != std::string::npos) GTEST_SKIP() << "a GPU is visible: the demo takes the GPU path";
  EXPECT_THAT(out, testing::HasSubstr("demo: device cpu"));
  EXPECT_THAT(out, testing::HasSubstr("+ weights/fetch_smollm2.sh\n"));
  EXPECT_THAT(out, testing::HasSubstr("+ " + kSmezo + " eval --model weights/SmolLM2-135M-Instruct.Q4_1.gguf --device cpu "
                                      "--task sst2 --mode zero-shot --split dev"));
  EXPECT_THAT(out, testing::HasSubstr("+ " + kSmezo + " train --model weights/SmolLM2-135M-Instruct.Q4_1.gguf --device cpu "
                                      "--task sst2 --method smezo"));
  EXPECT_THAT(smezo_test::read_file("README.md"), testing::HasSubstr("make -j2 && tools/demo.sh"));
}

// No network, no SmolLM2: the demo says so and trains the bundled stories260K instead (3 steps
// here); asked for SmolLM2 alone, it stops with the reason.
TEST(Demo, FallsBackToStories260KWhenTheFetchFails) {
  const std::string dir = smezo_test::make_temp_dir("demo") + "/run";
  std::string out;
  ASSERT_EQ(run_command("SMEZO=" + kSmezo + " SMEZO_DEMO_DEVICE=cpu SMEZO_DEMO_FETCH=false SMEZO_DEMO_STEPS=3 "
                        "tools/demo.sh --out " + dir, &out), 0) << out;
  EXPECT_THAT(out, testing::HasSubstr("demo: SmolLM2 could not be fetched (above): the bundled stories260K instead"));
  EXPECT_THAT(out, testing::HasSubstr("+ " + kSmezo + " train --task sst2 --steps 3 --batch 8 --max-len 64 --lr "
                                      "2e-3 --eval-every 50 --dev-examples 100 --test-examples 200 --device cpu --out "));
  const nlohmann::json summary = nlohmann::json::parse(smezo_test::read_file(dir + "/summary.json"));
  EXPECT_EQ(summary["steps"].get<int64_t>(), 3);
  EXPECT_EQ(summary["status"].get<std::string>(), "completed");
  EXPECT_EQ(summary["task"].get<std::string>(), "sst2");
  EXPECT_NE(run_command("SMEZO=" + kSmezo + " SMEZO_DEMO_DEVICE=cpu SMEZO_DEMO_MODEL=smollm2 SMEZO_DEMO_FETCH=false "
                        "tools/demo.sh --out " + dir + "2", &out), 0) << out;
  EXPECT_THAT(out, testing::HasSubstr("demo: error: SmolLM2 could not be fetched"));
}

// The SmolLM2 path on the CPU, tiny: 2 steps, 8 dev and test examples; prints the zero-shot
// accuracy and the curve. Needs the GGUF in weights/ (the demo's own path; never downloaded here).
TEST(Demo, SmolLM2CpuPathRuns) {
  if (run_command("test -f weights/SmolLM2-135M-Instruct.Q4_1.gguf", nullptr) != 0)
    GTEST_SKIP() << "SmolLM2 GGUF not found at weights/SmolLM2-135M-Instruct.Q4_1.gguf; run weights/fetch_smollm2.sh";
  const std::string dir = smezo_test::make_temp_dir("demo_smollm2") + "/run";
  std::string out;
  ASSERT_EQ(run_command("SMEZO=" + kSmezo + " SMEZO_DEMO_DEVICE=cpu SMEZO_DEMO_MODEL=smollm2 SMEZO_DEMO_STEPS=2 "
                        "SMEZO_DEMO_EXAMPLES=8 tools/demo.sh --out " + dir, &out), 0) << out;
  EXPECT_THAT(out, testing::ContainsRegex("demo: SmolLM2-135M, SST-2 dev accuracy \\(8 examples\\), zero-shot: 0?\\.[0-9]+"));
  EXPECT_THAT(out, testing::HasSubstr("demo: the curve is drawn in " + dir + "/plot.svg"));
  const nlohmann::json summary = nlohmann::json::parse(smezo_test::read_file(dir + "/summary.json"));
  EXPECT_EQ(summary["steps"].get<int64_t>(), 2);
  EXPECT_EQ(summary["status"].get<std::string>(), "completed");
}

TEST(Demo, GpuPathCommands) {
  std::string out;
  ASSERT_EQ(run_command("SMEZO=" + kSmezo + " SMEZO_DEMO_DEVICE=cuda tools/demo.sh --dry-run", &out), 0) << out;
  EXPECT_THAT(out, testing::HasSubstr("+ weights/fetch_smollm2.sh\n"));
  EXPECT_THAT(out, testing::HasSubstr("eval --model weights/SmolLM2-135M-Instruct.Q4_1.gguf --device cuda"));
  EXPECT_THAT(out, testing::HasSubstr("train --model weights/SmolLM2-135M-Instruct.Q4_1.gguf --device cuda"));
}
