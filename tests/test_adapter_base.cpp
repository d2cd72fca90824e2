// The base model an adapter folder names (train/adapter_base.h): adapter_config.json's
// base_model_name_or_path is something PEFT's auto classes load (a Hugging Face folder's
// absolute path, a GGUF's recorded Hub id, else null), and smezo_run.json's base_model_path the
// local model smezo trained on, which `--adapter` opens first; folders written before
// base_model_path existed, and PEFT's own, still find their base by base_model_name_or_path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "model/model.h"
#include "model_fixture.h"
#include "setup/model_setup.h"
#include "test_gguf_writer.h"
#include "test_util.h"
#include "train/adapter_base.h"
#include "train/adapter_folder.h"
#include "train/checkpoint_prefix.h"

using namespace smezo;
using smezo_test::make_temp_dir;
using smezo_test::read_json;
using testing::HasSubstr;

namespace {

// A GGUF holding only the given string metadata (the Hub id lookup reads nothing else).
std::string gguf_with(const std::string& dir, const std::string& name,
                      const std::vector<std::pair<std::string, std::string>>& strings) {
  smezo_test::GgufBuilder b;
  b.add_string("general.architecture", "llama");
  for (const auto& kv : strings) b.add_string(kv.first, kv.second);
  const std::string path = dir + "/" + name;
  b.write(path);
  return path;
}

std::string absolute(const std::string& path) {
  return std::filesystem::absolute(path).lexically_normal().string();
}

// A prefix adapter folder of a tiny model, saved with base_model as its base.
std::string saved_prefix(const std::string& dir, const std::string& base_model) {
  auto be = make_backend(DEVICE_CPU);
  Model m(smezo_test::random_weight_source(smezo_test::tiny_llama_config(), 3), *be, DTYPE_F32, 64, 64);
  m.add_prefix(PrefixOptions{2}, 1);
  save_prefix_adapter(m, dir, base_model, {{"task", "sst2"}});
  return dir;
}

}  // namespace

TEST(AdapterBase, PeftNameIsWhatTransformersCanLoad) {
  const std::string dir = make_temp_dir("adapter_base_names");
  std::filesystem::create_directories(dir + "/hf");
  smezo_test::write_file(dir + "/hf/model.safetensors", "");
  EXPECT_EQ(adapter_peft_base_name(dir + "/hf/"), absolute(dir + "/hf"));
  EXPECT_EQ(adapter_peft_base_name(dir + "/hf/model.safetensors"), absolute(dir + "/hf"));
  EXPECT_EQ(adapter_peft_base_name(gguf_with(dir, "named.gguf", {{"general.source.huggingface.repository",
                                                                  "HuggingFaceTB/SmolLM2-135M-Instruct"}})),
            "HuggingFaceTB/SmolLM2-135M-Instruct");
  EXPECT_EQ(adapter_peft_base_name(gguf_with(dir, "url.gguf", {{"general.source.url",
                                                                "https://huggingface.co/org/model-1.5/tree/main"}})),
            "org/model-1.5");
  EXPECT_EQ(adapter_peft_base_name(gguf_with(dir, "repo_url.gguf", {{"general.source.repo_url",
                                                                     "https://huggingface.co/org/name"}})),
            "org/name");
  // the model a GGUF's model was fine-tuned from is not the model: no name
  EXPECT_TRUE(adapter_peft_base_name(gguf_with(dir, "parent.gguf", {{"general.base_model.0.repo_url",
                                                                     "https://huggingface.co/org/parent"}}))
                  .is_null());
  EXPECT_TRUE(adapter_peft_base_name(gguf_with(dir, "github.gguf", {{"general.source.url",
                                                                     "https://github.com/org/name"}}))
                  .is_null());
  EXPECT_TRUE(adapter_peft_base_name(gguf_with(dir, "odd.gguf", {{"general.source.huggingface.repository",
                                                                  "not a repo id"}}))
                  .is_null());
  EXPECT_TRUE(adapter_peft_base_name(default_model_path()).is_null()) << "a llama2.c .bin";
  EXPECT_EQ(adapter_peft_base_name("org/not-here"), "org/not-here");
  EXPECT_TRUE(adapter_peft_base_name("").is_null());
}

TEST(AdapterBase, RunSettingsHoldTheLocalPath) {
  EXPECT_EQ(adapter_run_settings(nullptr, default_model_path()),
            nlohmann::json({{"base_model_path", absolute(default_model_path())}}));
  EXPECT_EQ(adapter_run_settings({{"task", "sst2"}}, default_model_path()),
            nlohmann::json({{"task", "sst2"}, {"base_model_path", absolute(default_model_path())}}));
  EXPECT_TRUE(adapter_run_settings(nullptr, "").is_null());
  EXPECT_TRUE(adapter_run_settings(nullptr, "org/hub-model").is_null()) << "not a local model";
}

// --adapter without --model: base_model_path first; a folder without it (written before it
// existed, or by PEFT) by base_model_name_or_path; neither here: one line naming the field.
TEST(AdapterBase, FolderFindsItsLocalBase) {
  const std::string dir = make_temp_dir("adapter_base_folder"), bin = default_model_path();
  const std::string ours = saved_prefix(dir + "/ours", bin);
  EXPECT_TRUE(read_json(ours + "/adapter_config.json")["base_model_name_or_path"].is_null());
  AdapterFolder a = read_adapter_folder(ours);
  EXPECT_EQ(a.base_model_path, absolute(bin));
  EXPECT_EQ(a.run_settings["task"], "sst2");
  EXPECT_EQ(adapter_model_path(a, ""), absolute(bin));
  EXPECT_EQ(adapter_model_path(a, "given"), "given");

  const std::string old = saved_prefix(dir + "/old", "org/hub-model");  // smezo_run.json: the task alone
  nlohmann::json config = read_json(old + "/adapter_config.json");
  EXPECT_EQ(config["base_model_name_or_path"], "org/hub-model");
  EXPECT_THAT(smezo_test::error_of([&] { adapter_model_path(read_adapter_folder(old), ""); }),
              HasSubstr("the adapter's base model org/hub-model (base_model_name_or_path in " + old +
                        "/adapter_config.json) is not a file or folder here ---> HINT: pass --model PATH"));
  config["base_model_name_or_path"] = absolute(bin);  // as smezo wrote it before base_model_path
  smezo_test::write_file(old + "/adapter_config.json", config.dump());
  EXPECT_EQ(adapter_model_path(read_adapter_folder(old), ""), absolute(bin));

  smezo_test::write_file(ours + "/smezo_run.json", nlohmann::json({{"base_model_path", dir + "/moved.bin"}}).dump());
  EXPECT_THAT(smezo_test::error_of([&] { adapter_model_path(read_adapter_folder(ours), ""); }),
              HasSubstr("(base_model_path in " + ours + "/smezo_run.json) is not a file or folder here"));
  std::filesystem::remove(ours + "/smezo_run.json");
  EXPECT_THAT(smezo_test::error_of([&] { adapter_model_path(read_adapter_folder(ours), ""); }),
              HasSubstr("names no base model (no base_model_path in smezo_run.json, no base_model_name_or_path"));
  smezo_test::write_file(ours + "/smezo_run.json", nlohmann::json({{"base_model_path", 7}}).dump());
  EXPECT_THAT(smezo_test::error_of([&] { read_adapter_folder(ours); }),
              HasSubstr("smezo_run.json: base_model_path 7 must be a string"));
}
