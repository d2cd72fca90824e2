// LoRA (--tune lora, model/lora.h): the adapted forward against a reference computed here, on
// the CPU and on the CUDA backend (run emulated in build-emu); PEFT's init; only A and B are
// perturbed and updated, with S-MeZO's mask on A and B dense; PEFT adapter folders written
// and read back; a merge equals the adapted forward; train, replay and resume bit-exact.
//
// Reference: the same model with every adapted weight folded, W' = W + (alpha/r)·B A, computed
// in double here and rounded once to fp32. Inputs are fresh random values (A and B never 0).
// Tolerance, logits: 1e-4 x max|logit| (kTolLogits). The adapted model adds s·B(A x) to W x
// while the reference multiplies by W'; the two round the same sums in another order
// (~1e-6 relative per layer, through 2 layers and the head), far below 1e-4, while the
// adapter's own contribution moves the logits by more than 1e-2 x max|logit| (checked).
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
#include "train/checkpoint.h"
#include "train/checkpoint_lora.h"
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

constexpr double kTolLogits = 1e-4;
const std::vector<int32_t> kTokens = {1, 7, 22, 3, 39, 15, 8, 30, 11, 2};

LoraOptions all_targets(int64_t rank, float alpha) {
  return LoraOptions{rank, alpha, lora_targets_parse("q,k,v,o,gate,up,down")};
}

// W' = W + scale·B A in double, rounded once, for every adapter of m, into src's tensors.
void fold_adapters(Model& m, WeightSource* src) {
  const double scale = m.lora_options().scale();
  for (const Param* p : m.params()) {
    if (p->info.adapter != ADAPTER_LORA_A) continue;
    const std::string module = p->info.name.substr(std::string("base_model.model.").size());
    const std::string w_name = module.substr(0, module.size() - std::string(".lora_A.weight").size()) + ".weight";
    const Param* b = nullptr;
    for (const Param* q : m.params())
      if (q->info.adapter == ADAPTER_LORA_B && q->info.tensor_id == p->info.tensor_id + 1) b = q;
    ASSERT_NE(b, nullptr) << p->info.name;
    const std::vector<float> A = param_values(m.backend(), *p), B = param_values(m.backend(), *b);
    float* w = smezo_test::mutable_tensor(*src, w_name);
    const int64_t r = p->w.rows, in = p->w.cols, out = b->w.rows;
    for (int64_t o = 0; o < out; o++)
      for (int64_t i = 0; i < in; i++) {
        double d = 0;
        for (int64_t k = 0; k < r; k++) d += static_cast<double>(B[o * r + k]) * A[k * in + i];
        w[o * in + i] = static_cast<float>(w[o * in + i] + scale * d);
      }
  }
}

// The adapted logits on `device` against the folded reference on the CPU.
void expect_adapted_forward_matches_reference(Device device) {
  ModelConfig c = smezo_test::tiny_llama_config();
  const uint32_t seed = static_cast<uint32_t>(smezo_test::mixed_seed(11));
  WeightSource src = smezo_test::random_weight_source(c, seed);
  auto be = make_backend(device);
  Model adapted(src, *be, DTYPE_F32, 64, 64);
  adapted.add_lora(all_targets(4, 8.0f), 5);
  randomize_adapters(adapted, seed + 100, 0.3f);
  const std::vector<float> got = smezo_test::logits_of(adapted, kTokens);

  WeightSource folded = smezo_test::random_weight_source(c, seed);  // its own buffers
  fold_adapters(adapted, &folded);
  auto cpu = make_backend(DEVICE_CPU);
  Model reference(folded, *cpu, DTYPE_F32, 64, 64);
  const std::vector<float> want = smezo_test::logits_of(reference, kTokens);
  Model base(src, *cpu, DTYPE_F32, 64, 64);
  const std::vector<float> plain = smezo_test::logits_of(base, kTokens);

  ASSERT_EQ(got.size(), want.size());
  const double scale = max_abs(want);
  EXPECT_LE(max_diff(got, want), kTolLogits * scale) << device_name(device) << smezo_test::seed_note();
  EXPECT_GT(max_diff(plain, want), 1e-2 * scale) << "the adapter must move the logits for the test to mean anything";
}

}  // namespace

TEST(Lora, ForwardMatchesFoldedWeightsOnCpu) { expect_adapted_forward_matches_reference(DEVICE_CPU); }

TEST(LoraCuda, ForwardMatchesFoldedWeights) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  expect_adapted_forward_matches_reference(DEVICE_CUDA);
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// A bf16 base on the device stays bf16 and untouched; the fp32 adapters train. Reference: the
// folded model on the CPU with W rounded to bf16 first. Tolerance 3e-2 x max|logit|: the CUDA
// linear rounds its input activations to bf16 for the base GEMMs (2^-9 relative each, through
// 2 layers and the head); the adapter itself must move the logits by more than that.
TEST(LoraCuda, Bf16BaseStaysAndTheFp32AdaptersTrain) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  ModelConfig c = smezo_test::tiny_llama_config();
  const uint32_t seed = static_cast<uint32_t>(smezo_test::mixed_seed(13));
  WeightSource src = smezo_test::random_weight_source(c, seed);
  for (auto& kv : src.tensors) {
    float* w = smezo_test::mutable_tensor(src, kv.first);
    for (int64_t i = 0; i < kv.second.numel(); i++) w[i] = smezo_test::round_to(DTYPE_BF16, w[i]);
  }
  auto gpu = make_backend(DEVICE_CUDA), cpu = make_backend(DEVICE_CPU);
  Model m(src, *gpu, DTYPE_BF16, 64, 64);
  m.add_lora(all_targets(4, 8.0f), 3);
  randomize_adapters(m, seed + 50, 0.3f);
  const std::vector<float> got = smezo_test::logits_of(m, kTokens);
  WeightSource folded = smezo_test::random_weight_source(c, seed);
  for (auto& kv : folded.tensors) {
    float* w = smezo_test::mutable_tensor(folded, kv.first);
    for (int64_t i = 0; i < kv.second.numel(); i++) w[i] = smezo_test::round_to(DTYPE_BF16, w[i]);
  }
  fold_adapters(m, &folded);
  Model reference(folded, *cpu, DTYPE_F32, 64, 64), base(src, *cpu, DTYPE_F32, 64, 64);
  const std::vector<float> want = smezo_test::logits_of(reference, kTokens);
  const double tol = 3e-2 * max_abs(want);
  EXPECT_LE(max_diff(got, want), tol) << smezo_test::seed_note();
  EXPECT_GT(max_diff(smezo_test::logits_of(base, kTokens), want), 3 * tol);

  SpsaOptions o;
  o.method = METHOD_SMEZO;
  o.sparsity = 0.5;
  o.lr = 1e-2f;
  SpsaOptimizer opt(m, o);
  std::vector<std::vector<float>> before;
  for (const Param* p : m.params()) {
    EXPECT_EQ(p->w.dtype, p->info.adapter == ADAPTER_NONE ? DTYPE_BF16 : DTYPE_F32) << p->info.name;
    before.push_back(param_values(*gpu, *p));
  }
  opt.apply_update(99, 2.0f, 1e-2f);
  for (size_t i = 0; i < m.params().size(); i++)
    EXPECT_EQ(smezo_test::same_bits(before[i], param_values(*gpu, *m.params()[i])),
              m.params()[i]->info.adapter == ADAPTER_NONE) << m.params()[i]->info.name;
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

// The op LoRA adds: x += alpha·y, one fma per entry on both backends, so bit-exact (random x,
// y and alpha; guard rows around x must not change).
TEST(LoraCuda, AddScaledEqualsTheCpuBitForBit) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  auto cpu = make_backend(DEVICE_CPU), gpu = make_backend(DEVICE_CUDA);
  const int64_t rows = 37, cols = 129;
  const uint32_t seed = static_cast<uint32_t>(smezo_test::mixed_seed(12));
  const std::vector<float> x = smezo_test::random_floats((rows + 2) * cols, seed), y =
                                   smezo_test::random_floats(rows * cols, seed + 1);
  const float alpha = smezo_test::random_floats(1, seed + 2, 0.5f, 4.0f)[0];
  std::vector<float> want, got;
  for (Backend* be : {cpu.get(), gpu.get()}) {
    Tensor tx = be->alloc(rows + 2, cols, DTYPE_F32), ty = be->alloc(rows, cols, DTYPE_F32);
    be->upload(tx, x.data());
    be->upload(ty, y.data());
    be->add_scaled(tensor_rows(tx, 1, rows), ty, alpha);
    std::vector<float>& out = be == cpu.get() ? want : got;
    out.resize(x.size());
    be->download(tx, out.data());
  }
  EXPECT_TRUE(smezo_test::same_bits(want, got)) << smezo_test::seed_note();
  EXPECT_TRUE(std::equal(x.begin(), x.begin() + cols, got.begin())) << "guard row above";
  EXPECT_TRUE(std::equal(x.end() - cols, x.end(), got.end() - cols)) << "guard row below";
  EXPECT_NE(want[cols], x[cols]) << "the op ran";
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}

TEST(Lora, InitIsPeftsAndStartsAtTheBaseModel) {
  ModelConfig c = smezo_test::tiny_llama_config();
  WeightSource src = smezo_test::random_weight_source(c, 3);
  auto be = make_backend(DEVICE_CPU);
  Model base(src, *be, DTYPE_F32, 64, 64), a(src, *be, DTYPE_F32, 64, 64), b(src, *be, DTYPE_F32, 64, 64),
      other(src, *be, DTYPE_F32, 64, 64);
  const size_t n_base = a.params().size();
  a.add_lora(LoraOptions{}, 42);
  b.add_lora(LoraOptions{}, 42);
  other.add_lora(LoraOptions{}, 43);
  ASSERT_EQ(a.params().size(), n_base + 2 * 2 * c.n_layers);  // q and v by default, A and B each
  for (size_t i = n_base; i < a.params().size(); i++) {
    const Param& p = *a.params()[i];
    EXPECT_EQ(p.info.tensor_id, i);
    const std::vector<float> v = param_values(*be, p), same = param_values(*be, *b.params()[i]);
    EXPECT_TRUE(smezo_test::same_bits(v, same)) << p.info.name << ": the init is a function of the seed";
    if (p.info.adapter == ADAPTER_LORA_B) {
      EXPECT_EQ(max_abs(v), 0.0) << p.info.name;
      EXPECT_EQ(p.w.cols, 8);
      continue;
    }
    EXPECT_EQ(p.w.rows, 8);
    const double bound = 1.0 / std::sqrt(static_cast<double>(p.w.cols));  // kaiming_uniform_(a=sqrt(5))
    EXPECT_LE(max_abs(v), bound) << p.info.name;
    EXPECT_GT(max_abs(v), 0.8 * bound) << p.info.name << ": spread over the whole range";
    EXPECT_FALSE(smezo_test::same_bits(v, param_values(*be, *other.params()[i]))) << "another seed, another A";
  }
  EXPECT_EQ(a.params()[n_base]->info.name, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");
  EXPECT_EQ(a.params()[n_base + 3]->info.name, "base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight");
  // B = 0: the adapted model computes the base model's logits bit for bit
  EXPECT_TRUE(smezo_test::same_bits(smezo_test::logits_of(a, kTokens), smezo_test::logits_of(base, kTokens)));
}

TEST(Lora, OptionsAreChecked) {
  EXPECT_THAT(smezo_test::error_of([] { lora_targets_parse("q,x"); }), testing::HasSubstr("'x' is not a linear"));
  EXPECT_THAT(smezo_test::error_of([] { lora_targets_parse("q,q"); }), testing::HasSubstr("names 'q' twice"));
  EXPECT_EQ(lora_targets_name(lora_targets_parse("down,q,up")), "q,up,down");
  EXPECT_THAT(smezo_test::error_of([] { lora_validate(LoraOptions{0, 16.0f, {ROLE_ATTN_Q}}); }),
              testing::HasSubstr("--lora-r must be an integer in [1, 4096], got 0"));
  ModelConfig c = smezo_test::tiny_opt_config();
  WeightSource src = smezo_test::random_weight_source(c, 1);
  auto be = make_backend(DEVICE_CPU);
  Model opt(src, *be, DTYPE_F32, 16, 16);
  EXPECT_THAT(smezo_test::error_of([&] { opt.add_lora(LoraOptions{}, 1); }), testing::HasSubstr("not opt"));
}

TEST(Lora, ProbesAndUpdatesTouchOnlyTheAdapters) {
  ModelConfig c = smezo_test::tiny_llama_config();
  WeightSource src = smezo_test::random_weight_source(c, 9);
  auto be = make_backend(DEVICE_CPU);
  Model m(src, *be, DTYPE_F32, 64, 64);
  m.add_lora(all_targets(2, 4.0f), 7);
  randomize_adapters(m, 300, 0.3f);
  SpsaOptions o;
  o.method = METHOD_MEZO;
  o.sparsity = 0.0;
  o.lr = 1e-2f;
  SpsaOptimizer opt(m, o);
  for (const Param* p : m.params()) EXPECT_EQ(p->info.trainable, p->info.adapter != ADAPTER_NONE) << p->info.name;
  int64_t adapter_numel = 0;
  for (const Param* p : m.params()) adapter_numel += p->info.adapter != ADAPTER_NONE ? p->w.numel() : 0;
  EXPECT_EQ(opt.tuned_parameter_count(), adapter_numel);

  ForwardBatch batch;
  batch.tokens = kTokens;
  batch.seq_lens = {static_cast<int64_t>(kTokens.size())};
  batch.logit_rows = {0, 4, 9};
  std::vector<float> unperturbed, perturbed, frozen;
  m.forward(batch, Probe{}, &unperturbed);
  m.forward(batch, Probe{1e-2f, 1234}, &perturbed);
  EXPECT_GT(max_diff(unperturbed, perturbed), 0.0) << "the probe perturbs A and B";
  for (Param* p : m.params()) p->info.trainable = false;  // nothing left to perturb: the probe is a no-op
  m.forward(batch, Probe{1e-2f, 1234}, &frozen);
  EXPECT_TRUE(smezo_test::same_bits(unperturbed, frozen)) << "a base weight was perturbed";
  for (Param* p : m.params()) p->info.trainable = p->info.adapter != ADAPTER_NONE;

  std::vector<std::vector<float>> before;
  for (const Param* p : m.params()) before.push_back(param_values(*be, *p));
  opt.apply_update(777, 3.0f, 1e-2f);
  for (size_t i = 0; i < m.params().size(); i++) {
    const Param& p = *m.params()[i];
    const bool same = smezo_test::same_bits(before[i], param_values(*be, p));
    EXPECT_EQ(same, p.info.adapter == ADAPTER_NONE) << p.info.name;
  }
}

TEST(Lora, SparseMezoMasksAAndTunesBDensely) {
  ModelConfig c = smezo_test::tiny_llama_config();
  WeightSource src = smezo_test::random_weight_source(c, 4);
  auto be = make_backend(DEVICE_CPU);
  Model m(src, *be, DTYPE_F32, 64, 64);
  m.add_lora(LoraOptions{}, 8);
  SpsaOptions o;
  o.method = METHOD_SMEZO;
  o.sparsity = 0.5;
  SpsaOptimizer opt(m, o);
  for (const Param* p : m.params()) {
    if (p->info.adapter == ADAPTER_NONE) continue;
    EXPECT_EQ(p->info.mask, MASK_MAGNITUDE) << p->info.name;
    if (p->info.adapter == ADAPTER_LORA_B) {
      EXPECT_TRUE(std::isinf(p->info.threshold)) << p->info.name;
    } else {
      EXPECT_GT(p->info.threshold, 0.0f) << p->info.name;
      EXPECT_LT(p->info.threshold, 1.0f / std::sqrt(static_cast<float>(p->w.cols))) << p->info.name;
    }
  }
}

// Interleaved RoPE (llama2.c, GGUF) holds q/k rows permuted: the adapter file holds B's rows in
// Hugging Face's order and reading it back undoes that.
TEST(Lora, AdapterFolderIsPeftsAndReadsBackIdentically) {
  for (RopeStyle rope : {ROPE_ROTATE_HALF, ROPE_INTERLEAVED}) {
    ModelConfig c = smezo_test::tiny_llama_config();
    c.rope_style = rope;
    WeightSource src = smezo_test::random_weight_source(c, 21);
    auto be = make_backend(DEVICE_CPU);
    Model m(src, *be, DTYPE_F32, 64, 64), back(src, *be, DTYPE_F32, 64, 64);
    m.add_lora(LoraOptions{4, 32.0f, lora_targets_parse("q,k,o,down")}, 1);
    randomize_adapters(m, 500, 0.3f);
    const std::string dir = make_temp_dir("lora_adapter") + "/adapter";
    save_lora_adapter(m, dir, "HuggingFaceTB/SmolLM2-135M");
    const nlohmann::json cfg = nlohmann::json::parse(read_file(dir + "/adapter_config.json"));
    EXPECT_EQ(cfg["peft_type"], "LORA");
    EXPECT_EQ(cfg["task_type"], "CAUSAL_LM");
    EXPECT_EQ(cfg["r"], 4);
    EXPECT_EQ(cfg["lora_alpha"], 32.0);
    EXPECT_EQ(cfg["target_modules"], nlohmann::json({"q_proj", "k_proj", "o_proj", "down_proj"}));
    EXPECT_EQ(cfg["bias"], "none");
    EXPECT_EQ(cfg["fan_in_fan_out"], false);
    EXPECT_EQ(cfg["base_model_name_or_path"], "HuggingFaceTB/SmolLM2-135M");
    const SafetensorsFile file(dir + "/adapter_model.safetensors");
    EXPECT_EQ(file.tensors().size(), 2u * 4 * c.n_layers);
    const HostTensorView& qb = file.tensor("base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight");
    EXPECT_EQ(qb.shape, (std::vector<int64_t>{c.n_heads * c.head_dim, 4}));
    EXPECT_TRUE(file.has("base_model.model.model.layers.0.mlp.down_proj.lora_A.weight"));

    const LoraAdapter adapter = read_lora_adapter(dir);
    EXPECT_EQ(adapter.options.rank, 4);
    EXPECT_EQ(lora_targets_name(adapter.options.targets), "q,k,o,down");
    back.add_lora(adapter.options, 999);  // another seed: every value must come from the file
    load_lora_adapter(back, adapter);
    for (size_t i = 0; i < m.params().size(); i++)
      EXPECT_TRUE(smezo_test::same_bits(param_values(*be, *m.params()[i]), param_values(*be, *back.params()[i])))
          << m.params()[i]->info.name << " rope " << rope;
    // the file's q B is Hugging Face's row order: permuted from the model's under interleaved RoPE
    std::vector<float> in_file(static_cast<size_t>(qb.numel()));
    qb.read_f32(in_file.data());
    const Param* model_qb = nullptr;
    for (const Param* p : m.params())
      if (p->info.name == qb.name) model_qb = p;
    ASSERT_NE(model_qb, nullptr);
    EXPECT_EQ(smezo_test::same_bits(in_file, param_values(*be, *model_qb)), rope == ROPE_ROTATE_HALF);
  }
}

TEST(Lora, AdapterReaderRefusesWhatItCannotApply) {
  ModelConfig c = smezo_test::tiny_llama_config();
  WeightSource src = smezo_test::random_weight_source(c, 2);
  auto be = make_backend(DEVICE_CPU);
  Model m(src, *be, DTYPE_F32, 64, 64);
  m.add_lora(LoraOptions{}, 1);
  const std::string dir = make_temp_dir("lora_bad") + "/adapter";
  save_lora_adapter(m, dir, "base");
  nlohmann::json cfg = nlohmann::json::parse(read_file(dir + "/adapter_config.json"));
  for (const auto& [key, value, want] :
       std::vector<std::tuple<std::string, nlohmann::json, std::string>>{
           {"peft_type", "IA3", "only LORA"}, {"bias", "all", "bias \"none\""},
           {"target_modules", {"q_proj", "c_attn"}, "\"c_attn\" is not one of"}, {"r", 4, "r is 4"},
           // found by the adapter_folder fuzzer's kind of input: wrong types and values out of range
           {"lora_alpha", 1e300, "lora_alpha 1e+300 must be a positive number"},
           {"use_dora", "no", "use_dora \"no\" must be true or false"},
           {"base_model_name_or_path", 7, "base_model_name_or_path 7 must be a string"}}) {
    nlohmann::json bad = cfg;
    bad[key] = value;
    smezo_test::write_file(dir + "/adapter_config.json", bad.dump());
    const std::string err = smezo_test::error_of([&] { read_lora_adapter(dir); });
    EXPECT_THAT(err, testing::HasSubstr(want)) << key;
    EXPECT_THAT(err, testing::HasSubstr("adapter")) << "names the file";
    EXPECT_TRUE(smezo_test::is_one_line(err));
  }
}

TEST(Lora, MergeEqualsTheAdaptedForward) {
  for (RopeStyle rope : {ROPE_ROTATE_HALF, ROPE_INTERLEAVED}) {
    ModelConfig c = smezo_test::tiny_llama_config();
    c.rope_style = rope;
    WeightSource src = smezo_test::random_weight_source(c, 31);
    auto be = make_backend(DEVICE_CPU);
    Model adapted(src, *be, DTYPE_F32, 64, 64), merged(src, *be, DTYPE_F32, 64, 64);
    adapted.add_lora(all_targets(3, 6.0f), 2);
    randomize_adapters(adapted, 700, 0.3f);
    const std::string dir = make_temp_dir("lora_merge") + "/adapter";
    save_lora_adapter(adapted, dir, "base");
    const std::vector<float> plain = smezo_test::logits_of(merged, kTokens);
    merge_lora_adapter(merged, read_lora_adapter(dir));
    const std::vector<float> want = smezo_test::logits_of(adapted, kTokens), got = smezo_test::logits_of(merged, kTokens);
    EXPECT_LE(max_diff(got, want), kTolLogits * max_abs(want)) << "rope " << rope;
    EXPECT_GT(max_diff(plain, want), 1e-2 * max_abs(want));
  }
}

// The whole path on the real stories260K (llama2.c: interleaved RoPE) and SST-2: a --tune lora
// run writes a PEFT adapter; replay rebuilds it byte for byte; a run resumed from half its seed
// log ends with the same adapter and log; `smezo merge` gives a full model whose logits equal
// the adapted model's (kTolLogits).
TEST(LoraTrain, ReplayResumeAndMergeAreExact) {
  const std::string dir = make_temp_dir("lora_train"), smezo = smezo_test::smezo_binary();
  std::string out;
  const std::string run = smezo + " train --task sst2 --batch 2 --max-len 40 --eval-every 0 --dev-examples 8"
                          " --skip-test --progress-every 1000 --flush-every 1 --steps 8 --lr 5e-2 --eps 1e-2"
                          " --method smezo --sparsity 0.5 --tune lora --lora-r 4 --lora-alpha 8 --lora-targets q,v,down";
  ASSERT_EQ(run_command(run + " --out " + dir + "/a", &out), 0) << out;
  const std::string adapter = read_file(dir + "/a/checkpoint/adapter_model.safetensors");
  EXPECT_FALSE(std::filesystem::exists(dir + "/a/checkpoint/model.safetensors")) << "the adapter alone";
  const nlohmann::json header = seed_log_read(dir + "/a/seed_log.txt").header;
  EXPECT_EQ(header["tune"], nlohmann::json({{"mode", "lora"}, {"r", 4}, {"alpha", 8.0}, {"targets", "q,v,down"}}));

  ASSERT_EQ(run_command(smezo + " replay " + default_model_path() + " " + dir + "/a/seed_log.txt --out " + dir +
                            "/replayed", &out), 0) << out;
  EXPECT_EQ(adapter, read_file(dir + "/replayed/adapter_model.safetensors"));

  // resume: a copy of the run cut back to its first 4 logged steps, then --resume
  namespace fs = std::filesystem;
  fs::copy(dir + "/a", dir + "/b", fs::copy_options::recursive);
  fs::remove_all(dir + "/b/checkpoint");
  fs::remove(dir + "/b/summary.json");
  const std::string log = read_file(dir + "/b/seed_log.txt");
  size_t cut = 0;
  for (int line = 0; line < 6; line++) cut = log.find('\n', cut) + 1;  // 2 header lines and 4 steps
  smezo_test::write_file(dir + "/b/seed_log.txt", log.substr(0, cut));
  ASSERT_EQ(seed_log_read(dir + "/b/seed_log.txt").records.size(), 4u);
  ASSERT_EQ(run_command(run + " --out " + dir + "/b --resume", &out), 0) << out;
  EXPECT_THAT(out, testing::HasSubstr("resuming"));
  EXPECT_EQ(log, read_file(dir + "/b/seed_log.txt"));
  EXPECT_EQ(adapter, read_file(dir + "/b/checkpoint/adapter_model.safetensors"));
  // resuming as a full run is refused
  EXPECT_NE(run_command(smezo + " train --task sst2 --batch 2 --max-len 40 --eval-every 0 --dev-examples 8"
                        " --skip-test --progress-every 1000 --flush-every 1 --steps 8 --lr 5e-2 --eps 1e-2"
                        " --method smezo --sparsity 0.5 --out " + dir + "/b --resume", &out), 0);
  EXPECT_THAT(out, testing::HasSubstr("tune = "));

  ASSERT_EQ(run_command(smezo + " merge --adapter " + dir + "/a/checkpoint --out " + dir + "/merged", &out), 0) << out;
  LoadedModel merged = open_model_paths(dir + "/merged", "", DEVICE_CPU, 64, 64);
  LoadedModel adapted = open_model_paths(default_model_path(), "", DEVICE_CPU, 64, 64);
  const LoraAdapter a = read_lora_adapter(dir + "/a/checkpoint");
  adapted.model->add_lora(a.options, 12345);
  load_lora_adapter(*adapted.model, a);
  const std::vector<int32_t> tokens = {1, 403, 72, 9, 300, 17, 88, 250};
  const std::vector<float> want = smezo_test::logits_of(*adapted.model, tokens);
  const std::vector<float> got = smezo_test::logits_of(*merged.model, tokens);
  LoadedModel base = open_model_paths(default_model_path(), "", DEVICE_CPU, 64, 64);
  EXPECT_LE(max_diff(got, want), kTolLogits * max_abs(want));
  EXPECT_GT(max_diff(smezo_test::logits_of(*base.model, tokens), want), 0.0) << "training moved the adapter";
}

// The same on the CUDA backend (bf16 base weights, fp32 adapters): the run's adapter, replayed
// on the device, comes back byte for byte.
TEST(LoraTrainCuda, ReplayOnTheDeviceIsExact) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const std::string dir = make_temp_dir("lora_train_cuda"), smezo = smezo_test::smezo_binary();
  std::string out;
  ASSERT_EQ(run_command(smezo + " train --device cuda --task sst2 --batch 2 --max-len 40 --eval-every 0"
                        " --dev-examples 8 --skip-test --progress-every 1000 --steps 6 --lr 5e-2 --eps 1e-2"
                        " --tune lora --lora-targets q,k,v,o,gate,up,down --out " + dir + "/run", &out), 0) << out;
  EXPECT_EQ(seed_log_read(dir + "/run/seed_log.txt").header["storage_dtype"], "BF16");
  ASSERT_EQ(run_command(smezo + " replay " + default_model_path() + " " + dir + "/run/seed_log.txt --out " + dir +
                            "/replayed", &out), 0) << out;
  EXPECT_THAT(out, testing::HasSubstr("is a LoRA adapter"));
  EXPECT_EQ(read_file(dir + "/run/checkpoint/adapter_model.safetensors"),
            read_file(dir + "/replayed/adapter_model.safetensors"));
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}
