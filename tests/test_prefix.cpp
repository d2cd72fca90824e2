// Prefix tuning (--tune prefix, model/prefix.h): the prefixed forward against a reference
// computed here, on the CPU and on the CUDA backend (run emulated in build-emu); the packed,
// cached and probe-pair paths agree; only the prefix is perturbed and updated, with S-MeZO's
// mask; PEFT PREFIX_TUNING folders written in Hugging Face's order and read back; train,
// replay and resume bit-exact.
//
// Reference: a prefix initialised from the activations of tokens T (MeZO's init) is, by
// construction, the key/value cache of T; so the prefixed model on a sequence S must give the
// plain model's logits on T ‖ S at S's positions. The two compute the prefix's keys/values
// from blocks of another size (P rows, or P + |S| rows), which may round the GEMM sums in
// another order: tolerance 1e-5 x max|logit| (kTolLogits), while the prefix moves the logits
// by more than 1e-2 x max|logit| (checked). CUDA against the CPU: 1e-4 (another GEMM).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "common/check.h"
#include "formats/safetensors.h"
#include "model/model.h"
#include "model/model_params.h"
#include "model_fixture.h"
#include "run/seed_log.h"
#include "setup/model_setup.h"
#include "test_util.h"
#include "train/checkpoint_lora.h"
#include "train/checkpoint_prefix.h"
#include "train/spsa.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"
#endif

using namespace smezo;
using smezo_test::max_abs;
using smezo_test::max_diff;
using smezo_test::param_values;
using smezo_test::randomize_adapters;
using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::run_command;

namespace {

constexpr double kTolLogits = 1e-5;
constexpr double kTolCuda = 1e-4;
const std::vector<int32_t> kTokens = {1, 7, 22, 3, 19, 15, 8, 11, 2};

// The prefixed logits on `device` against the plain CPU model reading the init tokens first.
void expect_prefix_is_its_init_tokens(const ModelConfig& c, Device device, double tol) {
  const uint32_t seed = static_cast<uint32_t>(smezo_test::mixed_seed(31));
  const WeightSource src = smezo_test::random_weight_source(c, seed);
  const int64_t P = 3;
  const uint64_t run_seed = 1234;
  auto be = make_backend(device);
  Model prefixed(src, *be, DTYPE_F32, 64, 64);
  prefixed.add_prefix(PrefixOptions{P}, run_seed);
  ASSERT_EQ(prefixed.prefix_tokens(), P);
  std::vector<int32_t> sequence(kTokens.begin(), kTokens.begin() + 6);
  for (int32_t& t : sequence) t %= static_cast<int32_t>(c.vocab_size);
  const std::vector<float> got = smezo_test::logits_of(prefixed, sequence);

  auto cpu = make_backend(DEVICE_CPU);
  Model plain(src, *cpu, DTYPE_F32, 64, 64);
  std::vector<int32_t> joined = prefix_init_tokens(run_seed, c.vocab_size, P);
  joined.insert(joined.end(), sequence.begin(), sequence.end());
  const std::vector<float> all = smezo_test::logits_of(plain, joined);
  const std::vector<float> want(all.begin() + P * c.vocab_size, all.end());
  const std::vector<float> alone = smezo_test::logits_of(plain, sequence);

  const double scale = max_abs(want);
  EXPECT_LE(max_diff(got, want), tol * scale) << c.family << " on " << device_name(device)
                                              << smezo_test::seed_note();
  EXPECT_GT(max_diff(alone, want), 1e-2 * scale) << "the prefix must move the logits for the test to mean anything";
}

}  // namespace

TEST(Prefix, StartsAsTheBaseModelReadingItsInitTokens) {
  expect_prefix_is_its_init_tokens(smezo_test::tiny_llama_config(), DEVICE_CPU, kTolLogits);
  expect_prefix_is_its_init_tokens(smezo_test::tiny_opt_config(), DEVICE_CPU, kTolLogits);  // learned positions
  ModelConfig window = smezo_test::tiny_llama_config();
  window.family = "mistral";
  window.sliding_window = 4;  // the window counts the prefix's positions, as a cache's would
  expect_prefix_is_its_init_tokens(window, DEVICE_CPU, kTolLogits);
}

TEST(PrefixCuda, StartsAsTheBaseModelReadingItsInitTokens) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  expect_prefix_is_its_init_tokens(smezo_test::tiny_llama_config(), DEVICE_CUDA, kTolCuda);
  expect_prefix_is_its_init_tokens(smezo_test::tiny_opt_config(), DEVICE_CUDA, kTolCuda);
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// With any prefix values: two sequences packed equal each alone, bit for bit, and the cached
// generation path (the prefix as the cache's first rows) gives the packed path's logits.
TEST(Prefix, PackedAndCachedPathsAgree) {
  const ModelConfig c = smezo_test::tiny_llama_config();
  auto be = make_backend(DEVICE_CPU);
  Model m(smezo_test::random_weight_source(c, 5), *be, DTYPE_F32, 64, 64);
  m.add_prefix(PrefixOptions{4}, 9);
  randomize_adapters(m, 500, 1.0f);
  const std::vector<int32_t> a = {1, 5, 9, 13, 2}, b = {1, 7, 3};
  const std::vector<float> la = smezo_test::logits_of(m, a), lb = smezo_test::logits_of(m, b);
  ForwardBatch packed;
  packed.tokens = {1, 5, 9, 13, 2, 1, 7, 3};
  packed.seq_lens = {5, 3};
  packed.logit_rows = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<float> lp, expected = la;
  expected.insert(expected.end(), lb.begin(), lb.end());
  m.forward(packed, Probe{}, &lp);
  EXPECT_TRUE(smezo_test::same_bits(lp, expected));

  m.enable_kv_cache(16);
  std::vector<float> step;
  m.forward_cached({1, 5, 9}, 0, &step);
  const int64_t V = c.vocab_size;
  EXPECT_LE(max_diff(step, std::vector<float>(la.begin() + 2 * V, la.begin() + 3 * V)), 2e-5 * max_abs(la));
  m.forward_cached({13}, 3, &step);
  EXPECT_LE(max_diff(step, std::vector<float>(la.begin() + 3 * V, la.begin() + 4 * V)), 2e-5 * max_abs(la));
  m.forward_cached({1, 7}, 0, &step);  // a new sequence starts from the prefix again
  EXPECT_LE(max_diff(step, std::vector<float>(lb.begin() + 1 * V, lb.begin() + 2 * V)), 2e-5 * max_abs(lb));
}

// A probe pair runs both halves in one pass, each reading its own sign of the prefix's noise.
TEST(Prefix, PairHalvesEqualTheirSingleProbes) {
  const ModelConfig c = smezo_test::tiny_llama_config();
  auto be = make_backend(DEVICE_CPU);
  Model m(smezo_test::random_weight_source(c, 6), *be, DTYPE_F32, 64, 64);
  m.add_prefix(PrefixOptions{2}, 10);
  SpsaOptions o;
  o.method = METHOD_MEZO;
  o.sparsity = 0.0;
  SpsaOptimizer opt(m, o);
  ForwardBatch batch;
  batch.tokens = {1, 5, 9, 13, 2, 1, 7, 3};
  batch.seq_lens = {5, 3};
  batch.logit_rows = {1, 4, 7};
  const Probe pair{1e-1f, 4242, true};
  std::vector<float> both, plus, minus, none;
  m.forward(batch, pair, &both);
  m.forward(batch, half_probe(pair, +1), &plus);
  m.forward(batch, half_probe(pair, -1), &minus);
  m.forward(batch, Probe{}, &none);
  std::vector<float> halves = plus;
  halves.insert(halves.end(), minus.begin(), minus.end());
  EXPECT_TRUE(smezo_test::same_bits(both, halves));
  EXPECT_GT(max_diff(plus, none), 1e-3 * max_abs(none)) << "the probe moves the prefix";
  EXPECT_GT(max_diff(plus, minus), 1e-3 * max_abs(none));
}

TEST(Prefix, ProbesAndUpdatesTouchOnlyThePrefix) {
  const ModelConfig c = smezo_test::tiny_llama_config();
  auto be = make_backend(DEVICE_CPU);
  Model m(smezo_test::random_weight_source(c, 9), *be, DTYPE_F32, 64, 64);
  m.add_prefix(PrefixOptions{3}, 7);
  SpsaOptions o;
  o.method = METHOD_MEZO;
  o.sparsity = 0.0;
  o.lr = 1e-2f;
  SpsaOptimizer opt(m, o);
  int64_t prefix_numel = 0;
  for (const Param* p : m.params()) {
    EXPECT_EQ(p->info.trainable, p->info.adapter != ADAPTER_NONE) << p->info.name;
    prefix_numel += p->info.adapter != ADAPTER_NONE ? p->w.numel() : 0;
  }
  EXPECT_EQ(prefix_numel, 2 * c.n_layers * 3 * c.n_kv_heads * c.head_dim);
  EXPECT_EQ(opt.tuned_parameter_count(), prefix_numel);

  ForwardBatch batch;
  batch.tokens = kTokens;
  batch.seq_lens = {static_cast<int64_t>(kTokens.size())};
  batch.logit_rows = {0, 4, 8};
  std::vector<float> unperturbed, frozen;
  m.forward(batch, Probe{}, &unperturbed);
  for (Param* p : m.params()) p->info.trainable = false;  // nothing left to perturb: the probe is a no-op
  m.forward(batch, Probe{1e-2f, 1234}, &frozen);
  EXPECT_TRUE(smezo_test::same_bits(unperturbed, frozen)) << "a base weight was perturbed";
  for (Param* p : m.params()) p->info.trainable = p->info.adapter != ADAPTER_NONE;

  std::vector<std::vector<float>> before;
  for (const Param* p : m.params()) before.push_back(param_values(*be, *p));
  opt.apply_update(777, 3.0f, 1e-2f);
  for (size_t i = 0; i < m.params().size(); i++) {
    const Param& p = *m.params()[i];
    EXPECT_EQ(smezo_test::same_bits(before[i], param_values(*be, p)), p.info.adapter == ADAPTER_NONE) << p.info.name;
  }
}

// S-MeZO's magnitude mask applies to the prefix (the method applies to what is tuned); the
// base weights, frozen, get no mask.
TEST(Prefix, SparseMezoMasksThePrefix) {
  const ModelConfig c = smezo_test::tiny_llama_config();
  auto be = make_backend(DEVICE_CPU);
  Model m(smezo_test::random_weight_source(c, 4), *be, DTYPE_F32, 64, 64);
  m.add_prefix(PrefixOptions{5}, 8);
  SpsaOptions o;
  o.method = METHOD_SMEZO;
  o.sparsity = 0.5;
  SpsaOptimizer opt(m, o);
  for (const Param* p : m.params()) {
    if (p->info.adapter == ADAPTER_NONE) {
      EXPECT_EQ(p->info.mask, MASK_DENSE) << p->info.name;
      continue;
    }
    EXPECT_EQ(p->info.mask, MASK_MAGNITUDE) << p->info.name;
    const std::vector<float> v = param_values(*be, *p);
    const int64_t kept = std::count_if(v.begin(), v.end(), [&](float x) { return std::fabs(x) <= p->info.threshold; });
    EXPECT_NEAR(static_cast<double>(kept) / v.size(), 0.5, 0.1) << p->info.name;
  }
}

TEST(Prefix, OptionsAndLimitsAreChecked) {
  const ModelConfig c = smezo_test::tiny_opt_config();  // 20 positions
  auto be = make_backend(DEVICE_CPU);
  Model m(smezo_test::random_weight_source(c, 2), *be, DTYPE_F32, 64, 64);
  EXPECT_THROW(m.add_prefix(PrefixOptions{0}, 1), Error);
  EXPECT_THROW(m.add_prefix(PrefixOptions{20}, 1), Error);
  m.add_prefix(PrefixOptions{6}, 1);
  EXPECT_THROW(m.add_prefix(PrefixOptions{6}, 1), Error);
  std::vector<int32_t> fits(14, 3), too_long(15, 3);
  EXPECT_NO_THROW(smezo_test::logits_of(m, fits));
  try {
    smezo_test::logits_of(m, too_long);
    ADD_FAILURE() << "a sequence past the positions left after the prefix ran";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("1..14 after its prefix"));
  }
  EXPECT_THROW(m.enable_kv_cache(15), Error);
  EXPECT_EQ(prefix_options_from_json(prefix_describe(PrefixOptions{7}), "x").tokens, 7);
  EXPECT_THROW(prefix_options_from_json({{"mode", "lora"}, {"tokens", 7}, {"init", "real-activations"}}, "x"), Error);
  EXPECT_THROW(prefix_options_from_json({{"mode", "prefix"}, {"tokens", 7}}, "x"), Error);
  Model lora(smezo_test::random_weight_source(smezo_test::tiny_llama_config(), 2), *be, DTYPE_F32, 64, 64);
  lora.add_lora(LoraOptions{}, 1);
  EXPECT_THROW(lora.add_prefix(PrefixOptions{2}, 1), Error);
}

// The folder is PEFT's: one prompt_embeddings tensor (P, L*2*kv) with layer l's key then value
// per row, in Hugging Face's rotate-half order. Proof of the order: a prefix trained on an
// interleaved-RoPE model, written, and read into that model's Hugging Face twin gives the
// same logits; read back into its own kind of model it is bit-identical.
TEST(Prefix, AdapterFolderIsPeftsAndReadsBackIdentically) {
  const std::string dir = make_temp_dir("prefix_folder");
  ModelConfig c = smezo_test::tiny_llama_config();
  c.rope_style = ROPE_INTERLEAVED;
  const int64_t P = 3, kv = c.n_kv_heads * c.head_dim;
  auto be = make_backend(DEVICE_CPU);
  Model meta(smezo_test::random_weight_source(c, 12), *be, DTYPE_F32, 64, 64);
  meta.add_prefix(PrefixOptions{P}, 3);
  randomize_adapters(meta, 900, 1.0f);
  save_prefix_adapter(meta, dir + "/adapter", "base-model-path", {{"task", "sst2"}});

  const nlohmann::json config = nlohmann::json::parse(read_file(dir + "/adapter/adapter_config.json"));
  EXPECT_EQ(config["peft_type"], "PREFIX_TUNING");
  EXPECT_EQ(config["task_type"], "CAUSAL_LM");
  EXPECT_EQ(config["num_virtual_tokens"], P);
  EXPECT_EQ(config["num_layers"], c.n_layers);
  EXPECT_EQ(config["token_dim"], kv);
  EXPECT_EQ(config["num_attention_heads"], c.n_kv_heads);
  EXPECT_EQ(config["prefix_projection"], false);
  EXPECT_EQ(config["encoder_hidden_size"], kv) << "PEFT's default: token_dim";
  EXPECT_EQ(config["base_model_name_or_path"], "base-model-path");
  // PEFT 0.21's PrefixTuningConfig fields, peft_version aside (tools/oracles/peft_oracle.py compares values)
  std::vector<std::string> keys;
  for (const auto& kv_pair : config.items()) keys.push_back(kv_pair.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"auto_mapping", "base_model_name_or_path", "encoder_hidden_size",
                                            "inference_mode", "init_weights", "modules_to_save", "num_attention_heads",
                                            "num_layers", "num_transformer_submodules", "num_virtual_tokens",
                                            "peft_type", "prefix_projection", "revision", "task_type", "token_dim"}));
  EXPECT_TRUE(std::filesystem::exists(dir + "/adapter/smezo_run.json"));
  const SafetensorsFile file(dir + "/adapter/adapter_model.safetensors");
  ASSERT_EQ(file.tensors().size(), 1u);
  const HostTensorView& t = file.tensor("prompt_embeddings");
  EXPECT_EQ(t.shape, (std::vector<int64_t>{P, c.n_layers * 2 * kv}));
  // layer 1's values of virtual token 2 sit at column (2*1 + 1)*kv of row 2, unpermuted
  std::vector<float> table(static_cast<size_t>(t.numel()));
  t.read_f32(table.data());
  const std::vector<float> value1 = param_values(*be, meta.prefix_layers()[1].value);
  const int64_t width = c.n_layers * 2 * kv;
  for (int64_t d = 0; d < kv; d++) ASSERT_EQ(table[2 * width + 3 * kv + d], value1[2 * kv + d]) << d;

  const PrefixAdapter adapter = read_prefix_adapter(dir + "/adapter");
  EXPECT_EQ(adapter.base_model, "base-model-path");
  Model again(smezo_test::random_weight_source(c, 12), *be, DTYPE_F32, 64, 64);
  again.add_prefix(adapter.options, 99);  // another init, then the file's values
  load_prefix_adapter(again, adapter);
  for (size_t i = 0; i < meta.params().size(); i++)
    EXPECT_TRUE(smezo_test::same_bits(param_values(*be, *meta.params()[i]), param_values(*be, *again.params()[i])))
        << meta.params()[i]->info.name;

  Model hf(smezo_test::hf_twin_of_interleaved(c, 12), *be, DTYPE_F32, 64, 64);
  hf.add_prefix(adapter.options, 99);
  load_prefix_adapter(hf, adapter);
  const std::vector<float> want = smezo_test::logits_of(meta, kTokens);
  EXPECT_LE(max_diff(smezo_test::logits_of(hf, kTokens), want), 2e-5 * max_abs(want));
}

namespace {

// A 2-token prefix of the tiny model (weights of seed 1) saved into dir, its base named "base".
void save_tiny_prefix(const std::string& dir) {
  auto be = make_backend(DEVICE_CPU);
  Model m(smezo_test::random_weight_source(smezo_test::tiny_llama_config(), 1), *be, DTYPE_F32, 64, 64);
  m.add_prefix(PrefixOptions{2}, 1);
  save_prefix_adapter(m, dir, "base");
}

}  // namespace

TEST(Prefix, AdapterReaderRefusesWhatItCannotApply) {
  const std::string dir = make_temp_dir("prefix_refuse");
  const ModelConfig c = smezo_test::tiny_llama_config();
  auto be = make_backend(DEVICE_CPU);
  save_tiny_prefix(dir + "/a");
  const std::string config_path = dir + "/a/adapter_config.json";
  const std::string good = read_file(config_path);
  auto refused = [&](const std::string& key, const nlohmann::json& value, const std::string& words) {
    nlohmann::json j = nlohmann::json::parse(good);
    j[key] = value;
    smezo_test::write_file(config_path, j.dump());
    try {
      read_prefix_adapter(dir + "/a");
      ADD_FAILURE() << key << " = " << value.dump() << " was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), testing::HasSubstr(words)) << key;
      EXPECT_THAT(e.what(), testing::HasSubstr("adapter_config.json")) << key;
    }
  };
  refused("peft_type", "LORA", "PREFIX_TUNING");
  refused("prefix_projection", true, "prefix_projection");
  refused("num_virtual_tokens", 3, "shape");
  refused("num_layers", 0, "num_layers");
  // the adapter_folder fuzzer's findings: a float where an integer is read, wrong types, huge sizes
  refused("num_transformer_submodules", 8.8e96, "num_transformer_submodules");
  refused("prefix_projection", "yes", "prefix_projection \"yes\" must be true or false");
  refused("base_model_name_or_path", 7, "base_model_name_or_path 7 must be a string");
  refused("token_dim", int64_t{1} << 40, "token_dim 1099511627776 must be an integer from 1 to 16777216");
  smezo_test::write_file(config_path, good);
  // made for a model of another width
  ModelConfig wide = c;
  wide.n_kv_heads = 4;
  Model other(smezo_test::random_weight_source(wide, 1), *be, DTYPE_F32, 64, 64);
  other.add_prefix(PrefixOptions{2}, 1);
  EXPECT_THROW(load_prefix_adapter(other, read_prefix_adapter(dir + "/a")), Error);
}

// The reader takes PEFT's own config (peft_version, PEFT's encoder_hidden_size = token_dim) and
// smezo's older one (encoder_hidden_size = the model's hidden size): the field is not read.
TEST(Prefix, AdapterReaderTakesPeftsAndOlderConfigs) {
  const std::string dir = make_temp_dir("prefix_configs");
  const ModelConfig c = smezo_test::tiny_llama_config();
  save_tiny_prefix(dir + "/a");
  const std::vector<float> want = read_prefix_adapter(dir + "/a").values;
  const nlohmann::json written = nlohmann::json::parse(read_file(dir + "/a/adapter_config.json"));
  nlohmann::json peft = written, older = written;
  peft["peft_version"] = "0.21.2";
  older["encoder_hidden_size"] = c.dim;
  for (const char* key : {"init_weights", "modules_to_save", "auto_mapping"}) older.erase(key);
  for (const nlohmann::json& config : {peft, older}) {
    smezo_test::write_file(dir + "/a/adapter_config.json", config.dump(2));
    const PrefixAdapter back = read_prefix_adapter(dir + "/a");
    EXPECT_EQ(back.values, want) << config.dump();
    EXPECT_EQ(back.token_dim, c.n_kv_heads * c.head_dim);
  }
}

TEST(PrefixTrain, ReplayAndResumeAreExact) {
  const std::string dir = make_temp_dir("prefix_train"), smezo = smezo_test::smezo_binary();
  std::string out;
  const std::string common = smezo + " train --task sst2 --batch 2 --max-len 40 --eval-every 0 --dev-examples 8"
                             " --skip-test --progress-every 1000 --flush-every 1 --steps 8 --lr 5e-2 --eps 1e-2"
                             " --method smezo --sparsity 0.5 --tune prefix";
  const std::string run = common + " --prefix-tokens 4";
  ASSERT_EQ(run_command(run + " --out " + dir + "/a", &out), 0) << out;
  const std::string adapter = read_file(dir + "/a/checkpoint/adapter_model.safetensors");
  EXPECT_FALSE(std::filesystem::exists(dir + "/a/checkpoint/model.safetensors")) << "the adapter alone";
  const nlohmann::json header = seed_log_read(dir + "/a/seed_log.txt").header;
  EXPECT_EQ(header["tune"], nlohmann::json({{"mode", "prefix"}, {"tokens", 4}, {"init", "real-activations"}}));
  // the base model is recorded as an absolute path in smezo_run.json: --adapter finds it from any
  // working directory; PEFT's field is null (transformers cannot load a llama2.c file)
  const std::string base = std::filesystem::absolute(default_model_path()).lexically_normal().string();
  EXPECT_EQ(smezo_test::read_json(dir + "/a/checkpoint/smezo_run.json")["base_model_path"], base);
  EXPECT_TRUE(smezo_test::read_json(dir + "/a/checkpoint/adapter_config.json")["base_model_name_or_path"].is_null());

  ASSERT_EQ(run_command(smezo + " replay " + default_model_path() + " " + dir + "/a/seed_log.txt --out " + dir +
                            "/replayed", &out), 0) << out;
  EXPECT_THAT(out, testing::HasSubstr("is a prefix adapter"));
  EXPECT_EQ(adapter, read_file(dir + "/replayed/adapter_model.safetensors"));
  EXPECT_EQ(smezo_test::read_json(dir + "/replayed/smezo_run.json"),
            nlohmann::json({{"base_model_path", base}})) << "so --adapter finds the base without --model";

  namespace fs = std::filesystem;  // resume: the run cut back to its first 4 logged steps
  fs::copy(dir + "/a", dir + "/b", fs::copy_options::recursive);
  fs::remove_all(dir + "/b/checkpoint");
  fs::remove(dir + "/b/summary.json");
  const std::string log = read_file(dir + "/b/seed_log.txt");
  size_t cut = 0;
  for (int line = 0; line < 6; line++) cut = log.find('\n', cut) + 1;  // 2 header lines and 4 steps
  smezo_test::write_file(dir + "/b/seed_log.txt", log.substr(0, cut));
  ASSERT_EQ(run_command(run + " --out " + dir + "/b --resume", &out), 0) << out;
  EXPECT_THAT(out, testing::HasSubstr("resuming"));
  EXPECT_EQ(log, read_file(dir + "/b/seed_log.txt"));
  EXPECT_EQ(adapter, read_file(dir + "/b/checkpoint/adapter_model.safetensors"));
  // resuming with another prefix length is refused, naming the option
  EXPECT_NE(run_command(common + " --prefix-tokens 3 --out " + dir + "/b --resume", &out), 0);
  EXPECT_THAT(out, testing::HasSubstr("tune = "));

  // the trained prefix is not its init: training moved it
  ASSERT_EQ(run_command(smezo + " train --task sst2 --batch 2 --max-len 40 --eval-every 0 --dev-examples 8"
                        " --skip-test --progress-every 1000 --steps 1 --lr 0 --eps 1e-2 --tune prefix"
                        " --prefix-tokens 4 --out " + dir + "/init", &out), 0) << out;
  EXPECT_NE(adapter, read_file(dir + "/init/checkpoint/adapter_model.safetensors"));
}

// The same on the CUDA backend: the run's prefix, replayed on the device, comes back byte for byte.
TEST(PrefixTrainCuda, ReplayOnTheDeviceIsExact) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const std::string dir = make_temp_dir("prefix_train_cuda"), smezo = smezo_test::smezo_binary();
  std::string out;
  ASSERT_EQ(run_command(smezo + " train --device cuda --task sst2 --batch 2 --max-len 40 --eval-every 0"
                        " --dev-examples 8 --skip-test --progress-every 1000 --steps 6 --lr 5e-2 --eps 1e-2"
                        " --tune prefix --out " + dir + "/run", &out), 0) << out;
  ASSERT_EQ(run_command(smezo + " replay " + default_model_path() + " " + dir + "/run/seed_log.txt --out " + dir +
                            "/replayed", &out), 0) << out;
  EXPECT_THAT(out, testing::HasSubstr("is a prefix adapter"));
  EXPECT_EQ(read_file(dir + "/run/checkpoint/adapter_model.safetensors"),
            read_file(dir + "/replayed/adapter_model.safetensors"));
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}
