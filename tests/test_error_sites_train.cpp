// The training side's refusals, each triggered and checked by its message (tools/checks/untested_errors.py
// lists the sites no test reaches): encoding examples, the objectives and metrics, generation, the run
// folder's records (lock, summary, plot, progress), the topology's options and the built-in tasks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "dist/world.h"
#include "model/model.h"
#include "model_fixture.h"
#include "run/progress_bar.h"
#include "run/run_dir.h"
#include "run/summary.h"
#include "run/svg_plot.h"
#include "setup/model_setup.h"
#include "tasks/task_data.h"
#include "tasks/task_encode.h"
#include "tasks/task_spec.h"
#include "tasks/text_metrics.h"
#include "test_util.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/bpe_vocab.h"
#include "train/checkpoint_lora.h"
#include "train/checkpoint_prefix.h"
#include "train/generate.h"
#include "train/metric_objective.h"
#include "train/objective.h"
#include "train/pipeline.h"
#include "train/topology.h"

using namespace smezo;
using smezo_test::error_of;
using smezo_test::make_temp_dir;
using smezo_test::write_file;
using testing::HasSubstr;

TEST(TrainErrorSites, EncodingExamples) {
  const auto tok = load_sentencepiece_tokenizer(asset_path("tokenizers/tinystories-512.model"));
  TaskExample ex;
  ex.contexts = {"Once upon a time", "Once upon a time"};
  ex.options = {" there", " here"};
  ex.gold = 0;
  EXPECT_THAT(error_of([&] { encode_example(*tok, ex, 1); }),
              HasSubstr("is too small (need BOS and one option token)"));
  TaskExample uneven = ex;
  uneven.options.pop_back();
  EXPECT_THAT(error_of([&] { encode_example(*tok, uneven, 32); }),
              HasSubstr("options (need the same, non-zero count)"));
  // a megabyte option is judged by its head: refused at once, not tokenized whole
  TaskExample huge = ex;
  huge.options[0].clear();
  while (huge.options[0].size() < (1 << 20)) huge.options[0] += " once upon a time";
  EXPECT_THAT(error_of([&] { encode_example(*tok, huge, 32); }),
              HasSubstr("tokens long and does not fit in max_len 32 ---> HINT: raise --max-len, or shorten it"));
  EXPECT_THAT(error_of([] { task_spec_builtin(static_cast<TaskId>(7)); }),
              HasSubstr("unknown task id 7"));  // 7: in the enum's range
}

TEST(TrainErrorSites, ObjectivesMetricsAndGeneration) {
  EXPECT_THAT(error_of([] { max_exact_match("a", {}); }), HasSubstr("exact match against no reference answer"));
  EXPECT_THAT(error_of([] { max_token_f1("a", {}); }), HasSubstr("token F1 against no reference answer"));
  EXPECT_THAT(error_of([] { check_objective(OBJECTIVE_F1, false, "sst2"); }),
              HasSubstr("--objective f1 scores generated text, but task sst2 is a classification task"));
  const WeightSource src = smezo_test::random_weight_source(smezo_test::tiny_llama_config(), 7);
  auto be = make_backend(DEVICE_CPU);
  Model model(src, *be, DTYPE_F32, 16, 8);
  EXPECT_THAT(error_of([&] { accuracy(model, {}, 4); }), HasSubstr("accuracy of an empty example set"));
  EncodedExample bad;
  bad.candidates.push_back(EncodedCandidate{{1, 2}, 2, 0});  // no option token
  EXPECT_THAT(error_of([&] { score_examples(model, {&bad}, {Probe{}}, false); }),
              HasSubstr("an encoded candidate needs a prefix and at least one option token"));
  // a byte-level tokenizer that adds no BOS: an empty prompt gives generation nothing to start from
  BpeVocab v = bpe_vocab_from_tokenizer_json("tests/fixtures/bpe/tiny_smollm/tokenizer.json");
  v.add_bos = false;
  const BpeTokenizer tok(v);
  GenerateOptions g;
  g.prompt = "";
  EXPECT_THAT(error_of([&] { generate(model, tok, g, [](const std::string&) {}); }),
              HasSubstr("generate needs a prompt with this model: its tokenizer adds no BOS to start from"));
  // adapters saved from a model that has none
  const std::string dir = make_temp_dir("train_sites_adapters");
  EXPECT_THAT(error_of([&] { save_lora_adapter(model, dir + "/a", "base"); }),
              HasSubstr("save_lora_adapter: the model has no LoRA adapters"));
  EXPECT_THAT(error_of([&] { save_prefix_adapter(model, dir + "/p", "base"); }),
              HasSubstr("save_prefix_adapter: the model has no prefix"));
  model.add_lora(LoraOptions{2, 4.0f, {ROLE_ATTN_Q}}, 1);
  LoraAdapter wrong;
  wrong.options = model.lora_options();
  for (const char* part : {"A", "B"}) {
    LoraAdapterTensor t;
    t.name = std::string("base_model.model.model.layers.0.self_attn.q_proj.lora_") + part + ".weight";
    t.is_a = part[0] == 'A';
    t.rows = t.is_a ? 2 : 7;  // B's rows: 7, not the weight's 32
    t.cols = t.is_a ? 32 : 2;
    t.values.assign(static_cast<size_t>(t.rows * t.cols), 0.0f);
    wrong.tensors.push_back(t);
  }
  for (size_t l = 1; l < 2; l++)
    for (const LoraAdapterTensor& t : std::vector<LoraAdapterTensor>(wrong.tensors)) {
      LoraAdapterTensor u = t;
      u.name.replace(u.name.find("layers.0"), 8, "layers." + std::to_string(l));
      wrong.tensors.push_back(u);
    }
  EXPECT_THAT(error_of([&] { load_lora_adapter(model, wrong); }), HasSubstr("has no place of that shape in the model"));
}

TEST(TrainErrorSites, RunRecordsAndTopology) {
  const std::string dir = make_temp_dir("train_sites_records");
  {
    const RunDirLock held = run_dir_lock(dir);
    EXPECT_THAT(error_of([&] { run_dir_lock(dir); }),
                HasSubstr("is writing " + dir + " ---> HINT: wait for it to end, or choose another --out"));
  }
  write_file(dir + "/file", "x");
  EXPECT_THAT(error_of([&] { run_dir_kind(dir + "/file", nullptr); }), HasSubstr("is a file, not a run folder"));
  nlohmann::json not_object = nlohmann::json::array();
  EXPECT_THAT(error_of([&] { summary_add_standard_fields(&not_object); }),
              HasSubstr("run summary must be a JSON object"));
  double lo = 0, hi = 0;
  EXPECT_THAT(error_of([&] { svg_nice_ticks(0.0, std::nan(""), 5, false, &lo, &hi); }),
              HasSubstr("svg_nice_ticks: non-finite range"));
  ProgressOptions p;
  p.total_steps = 3;
  p.start_step = 5;
  EXPECT_THAT(error_of([&] { ProgressBar bar(p); }), HasSubstr("progress bar: bad steps (start 5, total 3)"));
  EXPECT_THAT(error_of([] { shard_of(10, 3, 2); }), HasSubstr("shard_of: rank 3 of 2, 10 items"));
  EXPECT_THAT(error_of([] { pipeline_layout(dist_world(), 0); }), HasSubstr("must be at least 1"));
  EXPECT_THAT(error_of([] { Topology(dist_world(), 0, 0, DEVICE_CPU); }),
              HasSubstr("must be at least 1 and --micro-batches"));
}
