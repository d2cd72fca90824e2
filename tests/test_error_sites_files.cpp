// The file readers' refusals, each triggered by a file that has the fault and checked by its message
// (tools/checks/untested_errors.py lists the sites no test reaches): task specs and their records,
// data files, the built-in tasks' files, seed logs, PEFT adapter folders and run settings.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include <nlohmann/json.hpp>

#include "formats/safetensors.h"
#include "model/model.h"
#include "model_fixture.h"
#include "run/seed_log.h"
#include "setup/model_setup.h"
#include "tasks/data_file.h"
#include "tasks/task_data.h"
#include "tasks/task_files.h"
#include "tasks/task_spec.h"
#include "test_util.h"
#include "train/adapter_folder.h"
#include "train/checkpoint.h"
#include "train/checkpoint_lora.h"
#include "train/checkpoint_prefix.h"

using namespace smezo;
using json = nlohmann::json;
using smezo_test::error_of;
using smezo_test::make_temp_dir;
using smezo_test::write_file;
using testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

const char* const kSpec = R"({"name": "s", "prompt": "{t}", "candidates": [" a", " b"], "label": {"field": "l"}})";

// The spec text with one top-level key replaced (or added).
std::string spec_with(const char* key, const json& value, const char* base = kSpec) {
  json j = json::parse(base);
  j[key] = value;
  return j.dump();
}

}  // namespace

TEST(FileErrorSites, TaskSpecFields) {
  const std::pair<std::string, std::string> cases[] = {
      {"[1]", "s.json: a task spec is a JSON object, got"},
      {spec_with("name", ""), "s.json: \"name\" is empty"},
      {spec_with("name", 5), "s.json: \"name\" should be the task's name, got 5"},
      {spec_with("kind", "regression"), "\"kind\" is \"regression\"; expected \"classification\" or \"generation\""},
      {spec_with("color", "red"), "s.json: unknown key \"color\" for a classification spec"},
      {spec_with("maps", {{"m", 5}}), "s.json: map \"m\" should be an object"},
      {spec_with("maps", {{"m", {{"a", 1}}}}), "s.json: map \"m\": \"a\" should map to a string"},
      {spec_with("prompt", "{t"), "---> HINT: {field} inserts a field, {field|filter} filters it"},
      {spec_with("candidates", {{"field", "o"}, {"sep", ","}}), "s.json: unknown key \"candidates.sep\""},
      {spec_with("candidates", {" a"}), "s.json: \"candidates\" should list at least 2 templates"},
      {spec_with("candidates", {" a", 5}), "s.json: \"candidates\" should hold strings, got 5"},
      {spec_with("label", {{"field", "l"}, {"valuez", {1, 2}}}), "s.json: unknown key \"label.valuez\""},
      {spec_with("label", {{"field", "l"}, {"values", {"x", "x"}}}),
       "a label cannot name one of the two candidates ---> HINT: give each candidate its own label value"},
      {R"({"name": "g", "kind": "generation", "prompt": "{q}", "completion_field": "a", "stop": [""]})",
       "s.json: \"stop\" should hold non-empty strings, got \"\""},
      {R"({"name": "g", "kind": "generation", "prompt": "{q}", "completion_field": "a", "max_new_tokens": 2097152})",
       "\"max_new_tokens\" 2097152 is more than any model's context (at most 1048576)"},
  };
  for (const auto& [text, says] : cases)
    EXPECT_THAT(error_of([&] { task_spec_parse(text, "s.json"); }), HasSubstr(says)) << text;
}

// What a record does to its spec: a candidate field that is no list, a candidate that renders
// empty, one option where a classification needs two.
TEST(FileErrorSites, TaskSpecRecords) {
  const std::string dir = make_temp_dir("file_sites_records");
  auto example_error = [&](const std::string& spec_text, const std::string& line) {
    write_file(dir + "/r.jsonl", line + "\n");
    const TaskSpec spec = task_spec_parse(spec_text, "s.json");
    const DataFile file = data_file_read(dir + "/r.jsonl", {});
    return error_of([&] { task_spec_example(spec, file, file.rows.at(0)); });
  };
  const std::string by_field =
      R"({"name": "f", "prompt": "{t}", "candidates": {"field": "o"}, "label": {"field": "l"}})";
  EXPECT_THAT(example_error(by_field, R"({"t": "x", "o": "just one", "l": 0})"),
              HasSubstr("r.jsonl:1: field \"o\" should be a non-empty list of strings, got \"just one\""));
  EXPECT_THAT(example_error(by_field, R"({"t": "x", "o": ["only"], "l": 0})"),
              HasSubstr("holds 1 option: a classification needs at least 2"));
  EXPECT_THAT(example_error(R"({"name": "e", "prompt": "{t}", "candidates": ["{a}", " b"], "label": {"field": "l"}})",
                            R"({"t": "x", "a": "  ", "l": 0})"),
              HasSubstr("candidate 0 renders empty (nothing to score after the prompt)"));
}

TEST(FileErrorSites, DataFilesAndBuiltInTaskFiles) {
  const std::string dir = make_temp_dir("file_sites_data");
  write_file(dir + "/latin1.jsonl", "{\"t\": \"caf\xe9\"}\n");
  EXPECT_THAT(error_of([&] { data_file_read(dir + "/latin1.jsonl", {}); }),
              HasSubstr("is not UTF-8 (is the file in another encoding?)"));
  write_file(dir + "/quote.csv", "t,l\nsay \"hi\",0\n");
  EXPECT_THAT(error_of([&] { data_file_read(dir + "/quote.csv", {}); }),
              HasSubstr("stray '\"' in a field ---> HINT: a field holding '\"' is quoted whole"));
  // MultiRC's nested rows, and a built-in task's file in the wrong format or without rows
  auto multirc = [&](const std::string& line) {
    write_file(dir + "/m.jsonl", line + "\n");
    return error_of([&] { task_read_file(TASK_MULTIRC, dir + "/m.jsonl"); });
  };
  EXPECT_THAT(multirc(R"({"passage": {"text": "p", "questions": 3}})"),
              HasSubstr("m.jsonl:1: field \"questions\" should be an array"));
  EXPECT_THAT(multirc(R"({"passage": {"text": "p", "questions": [{"question": "q", "answers": 1}]}})"),
              HasSubstr("m.jsonl:1: field \"answers\" should be an array"));
  EXPECT_THAT(multirc(R"({"passage": {"text": "p", "questions": [7]}})"),
              HasSubstr("m.jsonl:1: expected a JSON object holding \"question\""));
  EXPECT_THAT(multirc(R"({"passage": {"text": "p", "questions": [{"question": "q", "answers": [{"text": 5}]}]}})"),
              HasSubstr("m.jsonl:1: "));
  write_file(dir + "/b.tsv", "question\tpassage\tlabel\nq\tp\t1\n");
  EXPECT_THAT(error_of([&] { task_read_file(TASK_BOOLQ, dir + "/b.tsv"); }),
              HasSubstr("b.tsv: task boolq reads JSON Lines"));
  write_file(dir + "/empty.jsonl", "\n\n");
  EXPECT_THAT(error_of([&] { task_read_file(TASK_RTE, dir + "/empty.jsonl"); }),
              HasSubstr("empty.jsonl holds no examples (task rte)"));
  EXPECT_THAT(error_of([&] { task_permutation(-1, 1); }), HasSubstr("task_permutation: negative size -1"));
  EXPECT_THAT(error_of([&] { load_task("sst2", 1, -1, 0, 0); }),
              HasSubstr("load_task: sizes must be >= 0 (train -1, dev 0, test 0)"));
  // own data: a spec's file without records, a spec without its training file
  write_file(dir + "/s.json", kSpec);
  EXPECT_THAT(error_of([&] { load_task_files({dir + "/s.json", dir + "/empty.jsonl", "", ""}, 4, 0, 0); }),
              HasSubstr("empty.jsonl holds no records"));
  EXPECT_THAT(error_of([&] { load_task_files({dir + "/s.json", "", "", ""}, 4, 0, 0); }),
              HasSubstr("--task-spec needs --train-file (the training records)"));
  write_file(dir + "/blocker", "");
  EXPECT_THAT(error_of([&] { export_task("sst2", 1, 2, 2, 2, asset_path("data"), dir + "/blocker/export"); }),
              HasSubstr("cannot create the export folder " + dir + "/blocker/export"));
}

TEST(FileErrorSites, SeedLogs) {
  const std::string dir = make_temp_dir("file_sites_seed_log"), path = dir + "/seed_log.txt";
  const std::string head = "# smezo seed log v1\n# {\"spsa\": {}}\n";
  write_file(path, head + "1 1 3f800000 3a83126f\n3 1 3f800000 3a83126f\n");
  EXPECT_THAT(error_of([&] { seed_log_read(path); }),
              HasSubstr("steps must be consecutive; was the file edited or two runs mixed"));
  write_file(path, "# smezo seed log v1\n# a comment only\n");
  EXPECT_THAT(error_of([&] { seed_log_read(path); }), HasSubstr("has no run header line ('# {...}')"));
  EXPECT_THAT(error_of([&] { seed_record_require_loggable(SeedRecord{1, 1, std::nanf(""), 1e-3f}, path); }),
              HasSubstr(": step 1 logs a gradient that is not finite, which no run logs ---> HINT: the seed log was "
                        "edited or damaged"));
  EXPECT_THAT(error_of([&] { SeedLogWriter::create(dir + "/v3.txt", json::object(), 1, 3); }),
              HasSubstr("v3.txt: no format version 3 (1 or 2)"));
  SeedLogWriter w = SeedLogWriter::create(dir + "/w.txt", json::object(), 1);
  EXPECT_THAT(error_of([&] { w.append(SeedRecord{-1, 1, 1.0f, 1.0f}); }), HasSubstr("w.txt: negative step -1"));
  w.close();
  EXPECT_THAT(error_of([&] { w.append(SeedRecord{1, 1, 1.0f, 1.0f}); }), HasSubstr("w.txt is closed"));
  EXPECT_THAT(error_of([&] { w.flush(); }), HasSubstr("w.txt is closed"));
}

namespace {

// A PEFT LoRA folder: adapter_config.json (edited) and one q_proj pair of rank 2 for tiny_llama.
std::string lora_folder(const std::function<void(json&)>& edit_config,
                        const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors = {
                            {"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", {2, 32}},
                            {"base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", {32, 2}}}) {
  const std::string dir = make_temp_dir("file_sites_lora");
  json config = {{"peft_type", "LORA"}, {"r", 2}, {"lora_alpha", 4}, {"target_modules", {"q_proj"}}};
  edit_config(config);
  write_file(dir + "/adapter_config.json", config.dump());
  std::vector<std::vector<float>> values;
  std::vector<SafetensorsEntry> entries;
  values.reserve(tensors.size());
  for (const auto& [name, shape] : tensors) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    values.emplace_back(static_cast<size_t>(n), 0.25f);
    entries.push_back({name, DTYPE_F32, shape, values.back().data()});
  }
  write_safetensors(dir + "/adapter_model.safetensors", entries, {{"format", "pt"}});
  return dir;
}

}  // namespace

TEST(FileErrorSites, LoraAdapterFolders) {
  auto config_error = [](const std::function<void(json&)>& edit) {
    const std::string dir = lora_folder(edit);
    return error_of([&] { read_lora_adapter(dir); });
  };
  EXPECT_THAT(config_error([](json& j) { j.erase("r"); }), HasSubstr("adapter_config.json: field r is missing"));
  EXPECT_THAT(config_error([](json& j) { j["peft_type"] = "IA3"; }),
              HasSubstr("adapter_config.json: peft_type \"IA3\": only LORA adapters are read"));
  EXPECT_THAT(config_error([](json& j) { j["bias"] = "all"; }),
              HasSubstr("adapter_config.json: bias \"all\": only bias \"none\" is supported"));
  EXPECT_THAT(config_error([](json& j) { j["use_dora"] = true; }),
              HasSubstr("adapter_config.json: DoRA and rsLoRA adapters are not supported"));
  EXPECT_THAT(config_error([](json& j) { j["r"] = "two"; }),
              HasSubstr("adapter_config.json: r must be an integer and lora_alpha a number"));
  EXPECT_THAT(config_error([](json& j) { j["target_modules"] = "q_proj"; }),
              HasSubstr("adapter_config.json: target_modules must be a list of module names"));
  EXPECT_THAT(config_error([](json& j) { j["target_modules"] = {"qkv"}; }),
              HasSubstr("target_modules entry \"qkv\" is not one of q_proj, k_proj, v_proj, o_proj, gate_proj"));
  EXPECT_THAT(config_error([](json& j) { j["r"] = 9999; }),
              HasSubstr("adapter_config.json: field \"r\" must be an integer in [1, 4096], got 9999"));
  auto tensors_error = [](const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors) {
    const std::string dir = lora_folder([](json&) {}, tensors);
    return error_of([&] { read_lora_adapter(dir); });
  };
  EXPECT_THAT(tensors_error({{"lm_head.lora_A.weight", {2, 32}}}),
              HasSubstr("is not a LoRA matrix of a LLaMA-family layer"));
  EXPECT_THAT(tensors_error({{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", {2, 32, 1}}}),
              HasSubstr("has 3 dimensions, a LoRA matrix has 2"));
  EXPECT_THAT(tensors_error({{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", {3, 32}}}),
              HasSubstr("has shape [3, 32], but r is 2 in adapter_config.json"));
  EXPECT_THAT(tensors_error({{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", {2, 32}}}),
              HasSubstr("1 LoRA tensors; every adapted layer needs its lora_A and lora_B"));
  // applied to a model: the layout and shapes must be the model's
  const WeightSource src = smezo_test::random_weight_source(smezo_test::tiny_llama_config(), 3);
  auto be = make_backend(DEVICE_CPU);
  Model model(src, *be, DTYPE_F32, 16, 16);
  const LoraAdapter good = read_lora_adapter(lora_folder([](json&) {}));
  EXPECT_THAT(error_of([&] { load_lora_adapter(model, good); }), HasSubstr("load_lora_adapter: add_lora first"));
  LoraAdapter a_only = good;
  a_only.tensors.pop_back();
  EXPECT_THAT(error_of([&] { merge_lora_adapter(model, a_only); }),
              HasSubstr("the adapter has base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight "
                        "but no lora_B"));
  LoraAdapter wide = good;
  for (LoraAdapterTensor& t : wide.tensors) t.name.replace(t.name.find("layers.0"), 8, "layers.9");
  EXPECT_THAT(error_of([&] { merge_lora_adapter(model, wide); }),
              HasSubstr("the adapter adapts model.layers.9.self_attn.q_proj.weight, which the base model does "
                        "not have"));
  LoraAdapter narrow = good;
  narrow.tensors[0].cols = 16;
  EXPECT_THAT(error_of([&] { merge_lora_adapter(model, narrow); }),
              HasSubstr("is for a [32, 16] weight, the base model's is [32, 32]"));
  model.add_lora(LoraOptions{2, 4.0f, {ROLE_ATTN_Q, ROLE_ATTN_V}}, 1);
  EXPECT_THAT(error_of([&] { load_lora_adapter(model, good); }),
              HasSubstr("the adapter has 2 tensors, the model's LoRA layout 8"));
  EXPECT_THAT(error_of([&] { merge_lora_adapter(model, good); }),
              HasSubstr("merge_lora_adapter: the model must hold the base weights only"));
}

TEST(FileErrorSites, PrefixAdapterFoldersAndAdapterFolders) {
  auto prefix_error = [](const std::function<void(json&)>& edit, std::vector<int64_t> shape = {3, 64},
                         int tensors = 1) {
    const std::string dir = make_temp_dir("file_sites_prefix");
    json config = {{"peft_type", "PREFIX_TUNING"}, {"num_virtual_tokens", 3}, {"num_layers", 2}, {"token_dim", 16},
                   {"num_attention_heads", 2}};
    edit(config);
    write_file(dir + "/adapter_config.json", config.dump());
    std::vector<float> v(static_cast<size_t>(shape[0] * shape[1]), 0.5f);
    std::vector<SafetensorsEntry> entries = {{"prompt_embeddings", DTYPE_F32, shape, v.data()}};
    if (tensors == 2) entries.push_back({"extra", DTYPE_F32, shape, v.data()});
    write_safetensors(dir + "/adapter_model.safetensors", entries, {{"format", "pt"}});
    return error_of([&] { read_prefix_adapter(dir); });
  };
  EXPECT_THAT(prefix_error([](json& j) { j.erase("token_dim"); }),
              HasSubstr("adapter_config.json: field token_dim is missing"));
  EXPECT_THAT(prefix_error([](json& j) { j.erase("peft_type"); }),
              HasSubstr("adapter_config.json: field peft_type is missing"));
  EXPECT_THAT(prefix_error([](json& j) { j["peft_type"] = "LORA"; }),
              HasSubstr("peft_type \"LORA\": this reader takes PREFIX_TUNING adapters"));
  EXPECT_THAT(prefix_error([](json& j) { j["num_transformer_submodules"] = 2; }),
              HasSubstr("num_transformer_submodules 2: decoder-only models have 1"));
  EXPECT_THAT(prefix_error([](json&) {}, {3, 64}, 2),
              HasSubstr("2 tensors; a prefix adapter holds prompt_embeddings alone"));
  EXPECT_THAT(prefix_error([](json&) {}, {3, 60}),
              HasSubstr("prompt_embeddings has shape [3,60], but adapter_config.json says [3, 64]"));
  EXPECT_THAT(prefix_error([](json&) {}, {3, 60}), HasSubstr("(num_virtual_tokens, num_layers x 2 x token_dim)"));
  // the folder itself
  const std::string dir = make_temp_dir("file_sites_adapter");
  EXPECT_THAT(error_of([&] { read_adapter_folder(dir + "/none"); }),
              HasSubstr("no such folder ---> HINT: give the adapter folder (adapter_config.json"));
  EXPECT_THAT(error_of([&] { read_adapter_folder(dir); }),
              HasSubstr("in it, so it is not a PEFT adapter folder ---> HINT: a full model"));
  write_file(dir + "/adapter_config.json", "{\"r\": 2}");
  EXPECT_THAT(error_of([&] { read_adapter_folder(dir); }),
              HasSubstr("adapter_config.json: field peft_type is missing"));
  write_file(dir + "/adapter_config.json", "[2]");
  EXPECT_THAT(error_of([&] { read_adapter_config(dir); }), HasSubstr("adapter_config.json must hold a JSON object"));
  // a prefix applied to a model of other dimensions; a second adapter on one model
  const WeightSource src = smezo_test::random_weight_source(smezo_test::tiny_llama_config(), 3);
  auto be = make_backend(DEVICE_CPU);
  Model model(src, *be, DTYPE_F32, 16, 16);
  PrefixAdapter p;
  p.options.tokens = 3;
  p.layers = 5;
  p.token_dim = 16;
  p.kv_heads = 2;
  EXPECT_THAT(error_of([&] { load_prefix_adapter(model, p); }), HasSubstr("load_prefix_adapter: add_prefix first"));
  model.add_prefix(PrefixOptions{3}, 1);
  EXPECT_THAT(error_of([&] { load_prefix_adapter(model, p); }),
              HasSubstr("the prefix adapter has 3 virtual tokens for 5 layers of 2 key/value heads"));
  AdapterFolder folder;
  folder.dir = dir;
  folder.peft_type = "PREFIX_TUNING";
  EXPECT_THAT(error_of([&] { apply_adapter_folder(model, folder); }),
              HasSubstr("--adapter " + dir + ": the model already has adapters"));
  // a run settings file that is JSON but no object
  write_file(dir + "/smezo_run.json", "[1]");
  EXPECT_THAT(error_of([&] { checkpoint_read_run_settings(dir); }),
              HasSubstr("smezo_run.json must hold a JSON object"));
}
