// Checkpoints in the weights' storage dtype, or the one --checkpoint-dtype asks for,
// with the free disk space checked before anything is written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "common/half.h"
#include "formats/safetensors.h"
#include "setup/model_setup.h"
#include "test_util.h"
#include "train/checkpoint.h"
#ifdef SMEZO_WITH_CUDA
#include "cuda/cuda_check.h"
#endif

using namespace smezo;
using smezo_test::make_temp_dir;
using smezo_test::read_file;
using smezo_test::run_command;
using testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

// tensor name -> dtype, read from the safetensors header itself.
std::map<std::string, std::string> header_dtypes(const std::string& path) {
  const std::string bytes = read_file(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);  // little-endian host
  const nlohmann::json h = nlohmann::json::parse(bytes.substr(8, n));
  std::map<std::string, std::string> out;
  for (const auto& [name, v] : h.items())
    if (name != "__metadata__") out[name] = v["dtype"].get<std::string>();
  return out;
}

void expect_all(const std::map<std::string, std::string>& dtypes, const std::string& want, size_t count) {
  EXPECT_EQ(dtypes.size(), count);
  for (const auto& [name, d] : dtypes) EXPECT_EQ(d, want) << name;
}

std::string torch_dtype(const std::string& dir) {
  return nlohmann::json::parse(read_file(dir + "/config.json"))["torch_dtype"].get<std::string>();
}

int64_t folder_bytes(const std::string& dir) {
  int64_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += static_cast<int64_t>(e.file_size());
  return n;
}

// Every 16-bit value of `half` is the rounding (round to nearest even) of the f32 value.
void expect_rounded(const std::string& f32_file, const std::string& half_file, DType half) {
  SafetensorsFile a(f32_file), b(half_file);
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (const auto& [name, va] : a.tensors()) {
    const HostTensorView& vb = b.tensor(name);
    ASSERT_EQ(va.dtype, DTYPE_F32);
    ASSERT_EQ(vb.dtype, half);
    ASSERT_EQ(va.shape, vb.shape);
    const float* x = static_cast<const float*>(va.data);
    const uint16_t* y = static_cast<const uint16_t*>(vb.data);
    for (int64_t i = 0; i < va.numel(); i++)
      ASSERT_EQ(y[i], half == DTYPE_BF16 ? float_to_bf16(x[i]) : float_to_f16(x[i])) << name << " " << i;
  }
}

struct FakeFreeSpace {
  explicit FakeFreeSpace(int64_t bytes)
      : previous(checkpoint_set_free_space_query([bytes](const std::string&) { return bytes; })) {}
  ~FakeFreeSpace() { checkpoint_set_free_space_query(previous); }
  FreeSpaceQuery previous;
};

}  // namespace

// f32 weights give an f32 checkpoint; bf16 and f16 on request are the round-to-nearest-even
// values of the same (permuted) tensors, and config.json says which.
TEST(CheckpointDtype, StorageDtypeByDefaultAndOthersOnRequest) {
  const std::string dir = make_temp_dir("ckdtype");
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 1, 1);
  const size_t n = lm.model->params().size();
  EXPECT_EQ(checkpoint_dtype(*lm.model, std::nullopt), DTYPE_F32);
  save_hf_checkpoint(*lm.model, dir + "/f32", lm.tokenizer_path);
  save_hf_checkpoint(*lm.model, dir + "/bf16", lm.tokenizer_path, nullptr, DTYPE_BF16);
  save_hf_checkpoint(*lm.model, dir + "/f16", lm.tokenizer_path, nullptr, DTYPE_F16);
  expect_all(header_dtypes(dir + "/f32/model.safetensors"), "F32", n);
  expect_all(header_dtypes(dir + "/bf16/model.safetensors"), "BF16", n);
  expect_all(header_dtypes(dir + "/f16/model.safetensors"), "F16", n);
  EXPECT_EQ(torch_dtype(dir + "/f32"), "float32");
  EXPECT_EQ(torch_dtype(dir + "/bf16"), "bfloat16");
  EXPECT_EQ(torch_dtype(dir + "/f16"), "float16");
  expect_rounded(dir + "/f32/model.safetensors", dir + "/bf16/model.safetensors", DTYPE_BF16);
  expect_rounded(dir + "/f32/model.safetensors", dir + "/f16/model.safetensors", DTYPE_F16);
  // a bf16 checkpoint loads back (into f32 storage) with exactly the rounded weights
  LoadedModel back = open_model_paths(dir + "/bf16", "", DEVICE_CPU, 1, 1);
  std::vector<float> w(static_cast<size_t>(back.model->params()[1]->w.numel()));
  back.model->backend().download(back.model->params()[1]->w, w.data());
  const float* orig = lm.model->params()[1]->w.f32();  // a norm weight: not permuted
  for (size_t i = 0; i < w.size(); i++) ASSERT_EQ(w[i], bf16_to_float(float_to_bf16(orig[i]))) << i;
  EXPECT_THAT([&] { checkpoint_dtype(*lm.model, static_cast<DType>(8)); },
              testing::ThrowsMessage<Error>(HasSubstr("unknown checkpoint dtype 8 (choose f32, f16 or bf16)")));
}

// A weight beyond f16's range is refused for an f16 checkpoint (it would turn infinite),
// naming the tensor; nothing is left behind and bf16 still takes it.
TEST(CheckpointDtype, F16OverflowIsRefused) {
  const std::string dir = make_temp_dir("ckf16");
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 1, 1);
  lm.model->params()[1]->w.f32()[3] = 1e5f;
  EXPECT_THAT([&] { save_hf_checkpoint(*lm.model, dir + "/c", "", nullptr, DTYPE_F16); },
              testing::ThrowsMessage<Error>(HasSubstr("tensor " + lm.model->params()[1]->info.name +
                                                      " value 100000 at index 3 does not fit F16")));
  EXPECT_FALSE(fs::exists(dir + "/c.tmp"));
  EXPECT_FALSE(fs::exists(dir + "/c"));
  save_hf_checkpoint(*lm.model, dir + "/c", "", nullptr, DTYPE_BF16);
}

// The free space is compared with the checkpoint's size before writing: short by one byte,
// nothing is written and the previous checkpoint stays; exactly enough, it is written.
TEST(CheckpointDtype, FreeSpaceIsCheckedBeforeWriting) {
  const std::string dir = make_temp_dir("ckspace");
  LoadedModel lm = open_model_paths(default_model_path(), "", DEVICE_CPU, 1, 1);
  const nlohmann::json settings = {{"written_by", "test"}, {"step", 1}};
  save_hf_checkpoint(*lm.model, dir + "/c", lm.tokenizer_path, settings);
  const int64_t need = checkpoint_bytes(*lm.model, lm.tokenizer_path, settings);
  EXPECT_EQ(need, folder_bytes(dir + "/c"));  // the estimate is the size written
  save_hf_checkpoint(*lm.model, dir + "/b", lm.tokenizer_path, settings, DTYPE_BF16);
  EXPECT_EQ(checkpoint_bytes(*lm.model, lm.tokenizer_path, settings, DTYPE_BF16), folder_bytes(dir + "/b"));
  EXPECT_GT(checkpoint_free_bytes(dir + "/c"), 0);  // the real statvfs answers
  const std::string good = read_file(dir + "/c/model.safetensors");
  lm.model->params()[1]->w.f32()[0] += 1.0f;
  {
    FakeFreeSpace fake(need - 1);
    const std::string msg = smezo_test::error_of([&] { save_hf_checkpoint(*lm.model, dir + "/c", lm.tokenizer_path,
                                                                          settings); });
    EXPECT_THAT(msg, HasSubstr("not writing checkpoint " + dir + "/c: it needs " + std::to_string(need) +
                               " bytes"));
    EXPECT_THAT(msg, HasSubstr("the disk has " + std::to_string(need - 1) + " bytes"));
    EXPECT_THAT(msg, HasSubstr("the previous checkpoint is kept ---> HINT: free disk space"));
    EXPECT_TRUE(smezo_test::is_one_line(msg));
    EXPECT_EQ(read_file(dir + "/c/model.safetensors"), good);
    EXPECT_FALSE(fs::exists(dir + "/c.tmp"));
  }
  {
    FakeFreeSpace fake(need);
    save_hf_checkpoint(*lm.model, dir + "/c", lm.tokenizer_path, settings);
    EXPECT_NE(read_file(dir + "/c/model.safetensors"), good);
  }
}

// smezo train --checkpoint-dtype writes that dtype; a bad name is a command-line error.
TEST(CheckpointDtype, TrainWritesTheAskedDtype) {
  const std::string dir = make_temp_dir("cktrain");
  const std::string run = smezo_test::smezo_binary() + " train --task sst2 --batch 2 --max-len 32 --steps 2 "
                          "--eval-every 0 --dev-examples 2 --test-examples 2 --lr 2e-3";
  std::string out;
  ASSERT_EQ(run_command(run + " --checkpoint-dtype bf16 --out " + dir + "/run", &out), 0) << out;
  const auto dtypes = header_dtypes(dir + "/run/checkpoint/model.safetensors");
  ASSERT_FALSE(dtypes.empty());
  expect_all(dtypes, "BF16", dtypes.size());
  EXPECT_EQ(torch_dtype(dir + "/run/checkpoint"), "bfloat16");
  EXPECT_EQ(nlohmann::json::parse(read_file(dir + "/run/summary.json"))["checkpoint"]["dtype"], "BF16");
  EXPECT_EQ(run_command(run + " --checkpoint-dtype f8 --out " + dir + "/bad", &out), 2);
  EXPECT_THAT(out, HasSubstr("--checkpoint-dtype"));
}

// GPU: a bf16 model writes a bf16 checkpoint whose values are the bf16 weights themselves.
TEST(CheckpointDtype, CudaBf16WeightsWriteBf16) {
#ifdef SMEZO_WITH_CUDA
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const std::string dir = make_temp_dir("ckcuda");
  LoadedModel cpu = open_model_paths(default_model_path(), "", DEVICE_CPU, 1, 1);
  LoadedModel gpu = open_model_paths(default_model_path(), "", DEVICE_CUDA, 1, 1, DTYPE_BF16);
  save_hf_checkpoint(*cpu.model, dir + "/f32", "");
  save_hf_checkpoint(*gpu.model, dir + "/bf16", "");
  save_hf_checkpoint(*gpu.model, dir + "/wide", "", nullptr, DTYPE_F32);
  expect_all(header_dtypes(dir + "/bf16/model.safetensors"), "BF16", gpu.model->params().size());
  EXPECT_EQ(torch_dtype(dir + "/bf16"), "bfloat16");
  // the upload rounded f32 -> bf16 to nearest even; the checkpoint holds those bits
  expect_rounded(dir + "/f32/model.safetensors", dir + "/bf16/model.safetensors", DTYPE_BF16);
  // asked for f32, the same values widened exactly
  expect_rounded(dir + "/wide/model.safetensors", dir + "/bf16/model.safetensors", DTYPE_BF16);
  expect_all(header_dtypes(dir + "/wide/model.safetensors"), "F32", gpu.model->params().size());
#else
  GTEST_SKIP() << "built without CUDA: skipped";
#endif
}
