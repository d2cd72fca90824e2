// The model readers' and the model's refusals, each triggered and checked by its message
// (tools/checks/untested_errors.py lists the sites no test reaches): config.json and its shards,
// llama2.c headers, a config's ranges, the tensors a config needs, the model's workspace and
// key/value cache, adapters and prefixes on a model, and the container writers and readers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "common/assets.h"
#include "formats/json_read.h"
#include "formats/safetensors.h"
#include "model/hf_dir.h"
#include "model/llama2c.h"
#include "model/lora.h"
#include "model/model.h"
#include "model/model_check.h"
#include "model/prefix.h"
#include "model_fixture.h"
#include "setup/model_setup.h"
#include "test_util.h"

using namespace smezo;
using json = nlohmann::json;
using smezo_test::error_of;
using smezo_test::make_temp_dir;
using smezo_test::write_file;
using testing::HasSubstr;

namespace {

json llama_config() {
  return {{"model_type", "llama"},      {"hidden_size", 64},          {"intermediate_size", 172},
          {"num_hidden_layers", 2},     {"num_attention_heads", 4},   {"num_key_value_heads", 2},
          {"vocab_size", 320},          {"max_position_embeddings", 256}};
}

std::string config_error(const json& j) {
  const std::string path = make_temp_dir("model_sites_hf") + "/config.json";
  write_file(path, j.dump());
  return error_of([&] { parse_hf_config(path); });
}

}  // namespace

TEST(ModelErrorSites, ConfigJson) {
  auto with = [](const char* key, const json& v) {
    json j = llama_config();
    j[key] = v;
    return j;
  };
  EXPECT_THAT(config_error(with("vocab_size", nullptr)),
              HasSubstr("field 'vocab_size' is null; give it a value or remove it"));
  EXPECT_THAT(config_error(with("hidden_size", "64")),
              HasSubstr("field 'hidden_size' is string (\"64\"), expected an integer"));
  json no_layers = llama_config();
  no_layers.erase("num_hidden_layers");
  EXPECT_THAT(config_error(no_layers),
              HasSubstr("field 'num_hidden_layers' is missing (required for model_type llama)"));
  EXPECT_THAT(config_error(with("rope_scaling", {{"rope_type", "yarn"}, {"factor", 4}})),
              HasSubstr("field 'rope_scaling' is {"));
  json theta = with("rope_parameters", {{"rope_type", "default"}, {"rope_theta", 20000.0}});
  theta["rope_theta"] = 10000.0;
  EXPECT_THAT(config_error(theta), HasSubstr("field 'rope_theta' (10000) disagrees with 'rope_parameters.rope_theta' "
                                             "(20000); fix one of them"));
  json heads = with("num_key_value_heads", 4);
  heads["num_attention_heads"] = 6;
  heads["hidden_size"] = 96;
  EXPECT_THAT(config_error(heads), HasSubstr("num_attention_heads 6 is not a multiple of num_key_value_heads 4"));
  json uneven = with("num_attention_heads", 6);
  uneven["num_key_value_heads"] = 6;
  EXPECT_THAT(config_error(uneven), HasSubstr("hidden_size 64 is not a multiple of num_attention_heads 6 and there is "
                                              "no head_dim field"));
  EXPECT_THAT(config_error(with("head_dim", 5)), HasSubstr("head_dim 5 (hidden_size / num_attention_heads, or the "
                                                           "head_dim field) must be even for RoPE"));
  json mistral = with("model_type", "mistral");
  mistral["sliding_window"] = -4;
  EXPECT_THAT(config_error(mistral), HasSubstr("field 'sliding_window' is -4; it must be in 0.."));
  json opt = {{"model_type", "opt"}, {"hidden_size", 64}, {"ffn_dim", 256}, {"num_hidden_layers", 2},
              {"num_attention_heads", 6}, {"vocab_size", 272}, {"max_position_embeddings", 128}};
  EXPECT_THAT(config_error(opt), HasSubstr("hidden_size 64 is not a multiple of num_attention_heads 6"));
  // the writer's side: what config.json cannot say
  ModelConfig c = smezo_test::tiny_llama_config();
  c.rope_style = ROPE_INTERLEAVED;
  c.tied_lm_head = true;
  c.family = "mistral";
  c.mlp_bias = true;
  EXPECT_THAT(error_of([&] { hf_config_json(c); }), HasSubstr("hf_config_json: cannot write a mistral config.json: "));
}

TEST(ModelErrorSites, ShardedDirectories) {
  const std::string dir = make_temp_dir("model_sites_shards");
  write_file(dir + "/config.json", llama_config().dump());
  const float v[2] = {1, 2};
  write_safetensors(dir + "/a.safetensors", {{"x", DTYPE_F32, {2}, v}}, {});
  auto index_error = [&](const json& index) {
    write_file(dir + "/model.safetensors.index.json", index.dump());
    return error_of([&] { load_hf_dir(dir); });
  };
  EXPECT_THAT(index_error({{"metadata", {}}}),
              HasSubstr("field 'weight_map' is missing or not an object of tensor name "
                                                         "-> shard file"));
  EXPECT_THAT(index_error({{"weight_map", {{"x", 5}}}}),
              HasSubstr("weight_map entry 'x' is 5, expected a shard file name"));
  EXPECT_THAT(index_error({{"weight_map", json::object()}}), HasSubstr("index.json: weight_map is empty"));
  EXPECT_THAT(index_error({{"weight_map", {{"x", "b.safetensors"}}}}),
              HasSubstr("is missing; download every shard of the model"));
  write_safetensors(dir + "/b.safetensors", {{"x", DTYPE_F32, {2}, v}}, {});
  EXPECT_THAT(index_error({{"weight_map", {{"x", "a.safetensors"}, {"y", "b.safetensors"}}}}),
              HasSubstr("tensor 'x' is in two shards"));
  write_safetensors(dir + "/b.safetensors", {{"z", DTYPE_F32, {2}, v}}, {});
  EXPECT_THAT(index_error({{"weight_map", {{"x", "a.safetensors"}, {"z", "b.safetensors"}, {"w", "a.safetensors"}}}}),
              HasSubstr("but that shard does not contain it; the download is incomplete or the index is stale"));
  write_file(dir + "/model.safetensors.index.json", "");
  EXPECT_THAT(error_of([&] { load_hf_dir(dir); }), HasSubstr("model.safetensors.index.json is empty"));
  write_file(dir + "/model.safetensors.index.json", "[1]");
  EXPECT_THAT(error_of([&] { load_hf_dir(dir); }),
              HasSubstr("model.safetensors.index.json is a JSON array, expected an "
                                                             "object"));
  EXPECT_THAT(error_of([&] { load_hf_dir(dir + "/missing"); }),
              HasSubstr("cannot open model " + dir + "/missing: No such file or directory; give a Hugging Face model "
                        "directory"));
  EXPECT_THAT(error_of([&] { load_hf_dir(dir + "/config.json"); }),
              HasSubstr("is a file, not a directory; give the directory holding config.json and model.safetensors"));
}

TEST(ModelErrorSites, Llama2cHeaders) {
  const std::string dir = make_temp_dir("model_sites_llama2c");
  auto header_error = [&](std::vector<int32_t> h, const std::string& tail = "") {
    std::string bytes(reinterpret_cast<const char*>(h.data()), h.size() * 4);
    write_file(dir + "/m.bin", bytes + tail);
    return error_of([&] { load_llama2c(dir + "/m.bin"); });
  };
  EXPECT_THAT(header_error({64, 172}), HasSubstr("m.bin: 8 bytes is too short for a llama2.c header (28 bytes)"));
  EXPECT_THAT(header_error({64, 172, 2, 6, 6, 32, 64}),
              HasSubstr("llama2.c header: dim 64 is not a multiple of n_heads 6"));
  EXPECT_THAT(header_error({66, 172, 2, 6, 6, 32, 64}),
              HasSubstr("llama2.c header: head_dim dim / n_heads = 11 must be even for RoPE"));
  const std::string model = smezo_test::read_file(asset_path("models/stories260K.bin"));
  write_file(dir + "/long.bin", model + "xxxx");
  EXPECT_THAT(error_of([&] { load_llama2c(dir + "/long.bin"); }),
              HasSubstr("long.bin: 4 bytes left over after the last tensor; the header does not describe this file"));
}

TEST(ModelErrorSites, ConfigRangesAndTensors) {
  auto config_check = [](const std::function<void(ModelConfig&)>& edit) {
    ModelConfig c = smezo_test::tiny_llama_config();
    edit(c);
    return error_of([&] { check_model_config(c, "m.bin"); });
  };
  EXPECT_THAT(config_check([](ModelConfig& c) { c.dim = 0; }), HasSubstr("model m.bin: config dim = 0 is outside 1.."));
  EXPECT_THAT(config_check([](ModelConfig& c) { c.dim = 0; }), HasSubstr("; the model file is corrupt"));
  EXPECT_THAT(config_check([](ModelConfig& c) { c.family = "gpt-j"; }),
              HasSubstr("model m.bin: model family 'gpt-j' is unknown; smezo runs "));
  EXPECT_THAT(config_check([](ModelConfig& c) { c.head_dim = 7; }),
              HasSubstr("model m.bin: config head_dim 7 must be even for RoPE"));
  EXPECT_THAT(config_check([](ModelConfig& c) { c.rope_theta = -1.0f; }),
              HasSubstr("model m.bin: config rope_theta -1 must be a positive finite float"));
  EXPECT_THAT(config_check([](ModelConfig& c) { c.norm_eps = 2.0f; }),
              HasSubstr("model m.bin: config norm_eps 2 must be a float in (0, 1]"));
  EXPECT_THAT(config_check([](ModelConfig& c) { c.sliding_window = -1; }),
              HasSubstr("model m.bin: config sliding_window -1 is outside 0.."));
  EXPECT_THAT(config_check([](ModelConfig& c) { c.learned_pos_offset = 5000; }),
              HasSubstr("model m.bin: config learned_pos_offset 5000 is outside 0..1024"));
  WeightSource src = smezo_test::random_weight_source(smezo_test::tiny_llama_config(), 1);
  src.path = "m.bin";
  WeightSource missing = src;
  missing.tensors.erase("model.norm.weight");
  EXPECT_THAT(error_of([&] { check_weight_source(missing); }),
              HasSubstr("model m.bin: no tensor 'model.norm.weight'; the config describes a llama model of 2 layers"));
  WeightSource odd = src;
  odd.tensors.at("model.norm.weight").dtype = static_cast<DType>(3);  // in the enum's range: no UB
  EXPECT_THAT(error_of([&] { check_weight_source(odd); }), HasSubstr("has dtype 3, which smezo cannot convert"));
  WeightSource empty = src;
  empty.tensors.at("model.norm.weight").data = nullptr;
  EXPECT_THAT(error_of([&] { check_weight_source(empty); }), HasSubstr("tensor model.norm.weight in"));
}

TEST(ModelErrorSites, WorkspaceCacheAdaptersAndPrefix) {
  const WeightSource src = smezo_test::random_weight_source(smezo_test::tiny_llama_config(), 2);
  auto be = make_backend(DEVICE_CPU);
  EXPECT_THAT(error_of([&] { Model(src, *be, DTYPE_F32, 0, 16); }), HasSubstr("model workspace needs positive sizes"));
  Model m(src, *be, DTYPE_F32, 8, 4);
  std::vector<float> logits;
  ForwardBatch batch;
  batch.tokens = std::vector<int32_t>(10, 3);
  batch.seq_lens = {10};
  batch.logit_rows = {9};
  EXPECT_THAT(error_of([&] { m.forward(batch, Probe{}, &logits); }),
              HasSubstr("batch of 10 tokens does not fit the workspace (8)"));
  batch.tokens = {3, 4, 5};
  batch.seq_lens = {3};
  batch.logit_rows = {0, 1, 2, 2, 1};
  EXPECT_THAT(error_of([&] { m.forward(batch, Probe{}, &logits); }),
              HasSubstr("5 logit rows asked, workspace holds 4"));
  Model wide(src, *be, DTYPE_F32, 128, 4);
  ForwardBatch too_long;
  too_long.tokens = std::vector<int32_t>(70, 3);
  too_long.seq_lens = {70};
  too_long.logit_rows = {69};
  EXPECT_THAT(error_of([&] { wide.forward(too_long, Probe{}, &logits); }), HasSubstr("tokens: the model supports 1.."));
  EXPECT_THAT(error_of([&] { m.enable_kv_cache(1000); }),
              HasSubstr("generation length 1000: the model supports 1..64 positions"));
  m.enable_kv_cache(8, 1);
  EXPECT_THAT(error_of([&] { m.forward_cached(std::vector<CachedChunk>{}, Probe{}, &logits); }),
              HasSubstr("forward_cached: no tokens to run"));
  EXPECT_THAT(error_of([&] { m.forward_cached({CachedChunk{3, 0, {1}}}, Probe{}, &logits); }),
              HasSubstr("forward_cached: slot 3 is not one of the cache's 1 or comes twice in one run"));
  EXPECT_THAT(error_of([&] { m.forward_cached({CachedChunk{0, 0, {1}}}, Probe{1e-3f, 1, true}, &logits); }),
              HasSubstr("cached generation runs a single probe: decode a pair's halves apart"));
  // a pipeline stage holds part of the model
  Model stage(src, *be, DTYPE_F32, 8, 4, model_stage(src.config, 0, 2));
  EXPECT_THAT(error_of([&] { stage.forward_cached({CachedChunk{0, 0, {1}}}, Probe{}, &logits); }),
              HasSubstr("generation runs the whole model, not a pipeline stage"));
  EXPECT_THAT(error_of([&] { stage.add_lora(LoraOptions{2, 4.0f, {ROLE_ATTN_Q}}, 1); }),
              HasSubstr("--tune lora runs on a whole model, not on pipeline stage 0 of 2"));
  // LoRA and prefix on one model, twice, or together
  Model a(src, *be, DTYPE_F32, 4, 4);
  EXPECT_THAT(error_of([&] { a.add_prefix(PrefixOptions{5}, 1); }),
              HasSubstr("--prefix-tokens 5: the model's workspace holds 4 tokens"));
  a.add_lora(LoraOptions{2, 4.0f, {ROLE_ATTN_Q}}, 1);
  EXPECT_THAT(error_of([&] { a.add_lora(LoraOptions{2, 4.0f, {ROLE_ATTN_Q}}, 1); }),
              HasSubstr("add_lora: the model already has LoRA adapters"));
  EXPECT_THAT(error_of([&] { a.add_prefix(PrefixOptions{2}, 1); }),
              HasSubstr("--tune prefix and LoRA adapters do not go together"));
  Model p(src, *be, DTYPE_F32, 8, 4);
  p.add_prefix(PrefixOptions{2}, 1);
  EXPECT_THAT(error_of([&] { p.add_prefix(PrefixOptions{2}, 1); }),
              HasSubstr("add_prefix: the model already has a prefix"));
  ModelConfig relu = smezo_test::tiny_llama_config();
  relu.mlp_kind = MLP_RELU;
  const WeightSource relu_src = smezo_test::random_weight_source(relu, 4);
  Model r(relu_src, *be, DTYPE_F32, 8, 4);
  EXPECT_THAT(error_of([&] { r.add_lora(LoraOptions{2, 4.0f, {ROLE_MLP_GATE}}, 1); }),
              HasSubstr("--lora-targets gate: this model's MLP has no gate projection"));
  const WeightSource opt_src = smezo_test::random_weight_source(smezo_test::tiny_opt_config(), 5);
  Model o(opt_src, *be, DTYPE_F32, 8, 4);
  EXPECT_THAT(error_of([&] { o.add_lora(LoraOptions{2, 4.0f, {ROLE_ATTN_Q}}, 1); }),
              HasSubstr("--tune lora supports the LLaMA-shaped families (q_proj .. down_proj: llama, mistral, qwen2, qwen3), not opt"));
}

TEST(ModelErrorSites, AdapterSettingsFromARunHeader) {
  EXPECT_THAT(error_of([] { lora_targets_parse("q,x"); }),
              HasSubstr("'x' is not a linear layer's role (choose from q,k,v,o,gate,up,down)"));
  EXPECT_THAT(error_of([] { lora_options_from_json({{"mode", "lora"}, {"r", 2}}, "log line 2"); }),
              HasSubstr("log line 2: the LoRA settings are incomplete or malformed: "));
  const nlohmann::json r0 = {{"mode", "lora"}, {"r", 0}, {"alpha", 2}, {"targets", "q"}};
  EXPECT_THAT(error_of([&] { lora_options_from_json(r0, "log"); }),
              
              HasSubstr("log: field \"r\" must be an integer in [1, 4096], got 0"));
  EXPECT_THAT(error_of([] { prefix_options_from_json({{"mode", "prefix"}, {"init", "zeros"}, {"tokens", 2}}, "log"); }),
              HasSubstr("log: prefix init 'zeros' is not one this build knows (real-activations)"));
  EXPECT_THAT(error_of([] { prefix_options_from_json({{"mode", "prefix"}}, "log"); }),
              HasSubstr("log: the prefix settings are incomplete or malformed: "));
  EXPECT_THAT(error_of([] {
                prefix_options_from_json({{"mode", "prefix"}, {"init", "real-activations"}, {"tokens", -3}}, "log");
              }),
              HasSubstr("log: field \"tokens\" must be an integer in [1, 65536], got -3"));
  // numbers that do not fit the field's type: refused before any cast (a float cast out of range is undefined)
  const nlohmann::json huge_alpha = {{"mode", "lora"}, {"r", 2}, {"alpha", 1e300}, {"targets", "q"}};
  EXPECT_THAT(error_of([&] { lora_options_from_json(huge_alpha, "log"); }),
              HasSubstr("log: \"alpha\" is 1e+300, not a finite number within float's range"));
  const nlohmann::json float_r = {{"mode", "lora"}, {"r", 1e30}, {"alpha", 2}, {"targets", "q"}};
  EXPECT_THAT(error_of([&] { lora_options_from_json(float_r, "log"); }),
              HasSubstr("log: \"r\" is 1e+30, not an integer from -2^63 to 2^63-1"));
  EXPECT_THAT(error_of([] {
                prefix_options_from_json({{"mode", "prefix"}, {"init", "real-activations"}, {"tokens", 2.5}}, "log");
              }),
              HasSubstr("log: \"tokens\" is 2.5, not an integer from -2^63 to 2^63-1"));
  EXPECT_THAT(error_of([] { prefix_init_tokens(1, 0, 3); }), HasSubstr("prefix_init_tokens: vocabulary 0, 3 tokens"));
}

TEST(ModelErrorSites, ContainerWritersAndReaders) {
  const std::string dir = make_temp_dir("model_sites_containers");
  const float v[4] = {1, 2, 3, 4};
  const std::vector<SafetensorsEntry> twice_x = {{"x", DTYPE_F32, {2}, v}, {"x", DTYPE_F32, {2}, v}};
  EXPECT_THAT(error_of([&] { write_safetensors(dir + "/a.safetensors", twice_x, {}); }),
              
              HasSubstr("a.safetensors: tensor 'x' is given twice"));
  EXPECT_THAT(error_of([&] { write_safetensors(dir + "/a.safetensors", {{"x", DTYPE_F32, {-2}, v}}, {}); }),
              HasSubstr("a.safetensors: tensor 'x' has negative dimension -2"));
  EXPECT_THAT(error_of([&] { write_safetensors(dir + "/a.safetensors", {{"x\xff", DTYPE_F32, {2}, v}}, {}); }),
              HasSubstr("a tensor name or metadata string is not valid UTF-8"));
  EXPECT_THAT(error_of([&] { write_safetensors(dir + "/a.safetensors", {{"x", DTYPE_F32, {2}, nullptr}}, {}); }),
              HasSubstr("a.safetensors: tensor 'x' has no data"));
  std::string deep;
  for (int i = 0; i < 2000; i++) deep += "[";
  EXPECT_THAT(error_of([&] { json_parse_strict(deep.data(), deep.data() + deep.size(), "deep.json"); }),
              HasSubstr("deep.json: JSON nested deeper than"));
  const std::string twice = R"({"a": 1, "a": 2})";
  EXPECT_THAT(error_of([&] { json_parse_strict(twice.data(), twice.data() + twice.size(), "twice.json"); }),
              HasSubstr("twice.json: key \"a\" appears twice in one JSON object"));
}
