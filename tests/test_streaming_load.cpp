// Streaming load: weights go to the backend one tensor at a time in the file's
// dtype, and the file's pages are released once a tensor is uploaded, so a loaded model costs
// its backend weights and not weights + file. The RSS test writes a ~250 MB f32 model into
// the build's test folder, loads it on the CPU backend while the mapping is still open, and
// reads /proc/self/status: the file-backed resident memory must stay near zero (without the
// release it is the whole file), the anonymous one no more than about the weights.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/check.h"
#include "common/half.h"
#include "common/mapped_file.h"
#include "cpu/cpu_backend.h"
#include "formats/safetensors.h"
#include "model/hf_dir.h"
#include "model/model.h"
#include "model/model_loader.h"
#include "test_util.h"

using namespace smezo;

namespace {

// A field of /proc/self/status in bytes ("RssFile", "RssAnon", "VmHWM"), or -1.
int64_t proc_status_bytes(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line))
    if (line.compare(0, key.size(), key) == 0) return std::stoll(line.substr(key.size())) * 1024;
  return -1;
}

// A LLaMA config of about `layers` x 3.4 M + 8.4 M parameters (dim 512, hidden 1536).
ModelConfig mid_llama_config(int64_t layers) {
  ModelConfig c;
  c.family = "llama";
  c.dim = 512;
  c.hidden_dim = 1536;
  c.n_layers = layers;
  c.n_heads = 8;
  c.n_kv_heads = 8;
  c.head_dim = 64;
  c.vocab_size = 8192;
  c.max_seq_len = 256;
  c.rope_style = ROPE_ROTATE_HALF;
  return c;
}

// Writes an HF directory (config.json + model.safetensors) for cfg, every tensor stored as
// dtype with random values (all tensors share one random buffer: this test is about memory).
// Returns the model.safetensors size.
int64_t write_random_hf_dir(const std::string& dir, const ModelConfig& cfg, DType dtype, uint32_t seed) {
  int64_t largest = 0;
  for (const ExpectedTensor& e : expected_tensors(cfg)) {
    int64_t n = 1;
    for (int64_t d : e.shape) n *= d;
    largest = std::max(largest, n);
  }
  const std::vector<float> values = smezo_test::random_floats(largest, seed, -0.05f, 0.05f);
  std::vector<uint16_t> halves(dtype == DTYPE_F32 ? 0 : values.size());
  for (size_t i = 0; i < halves.size(); i++)
    halves[i] = dtype == DTYPE_BF16 ? float_to_bf16(values[i]) : float_to_f16(values[i]);
  std::vector<SafetensorsEntry> entries;
  for (const ExpectedTensor& e : expected_tensors(cfg)) {
    SafetensorsEntry t;
    t.name = e.name;
    t.dtype = dtype;
    t.shape = e.shape;
    t.data = dtype == DTYPE_F32 ? static_cast<const void*>(values.data()) : halves.data();
    entries.push_back(t);
  }
  write_safetensors(dir + "/model.safetensors", entries, {{"format", "pt"}});
  smezo_test::write_file(dir + "/config.json", hf_config_json(cfg, "float32"));
  return static_cast<int64_t>(std::filesystem::file_size(dir + "/model.safetensors"));
}

}  // namespace

TEST(StreamingLoad, ReleasesTheFilePagesSoRssIsTheWeightsNotWeightsPlusFile) {
  const std::string dir = smezo_test::make_temp_dir("streaming_rss");
  const ModelConfig cfg = mid_llama_config(16);  // 63 M parameters: a 252 MB f32 file
  const int64_t file_bytes = write_random_hf_dir(dir, cfg, DTYPE_F32, 7);
  ASSERT_GT(file_bytes, 200000000);
  ASSERT_GE(proc_status_bytes("RssFile"), 0) << "/proc/self/status has no RssFile (Linux >= 4.5)";

  const int64_t file_before = proc_status_bytes("RssFile");
  const int64_t anon_before = proc_status_bytes("RssAnon");
  {
    WeightSource source = load_weights(dir);  // mapped, and kept mapped through the checks
    CpuBackend backend;
    Model model(source, backend, DTYPE_F32, 16, 4);
    const int64_t weights = backend.bytes_allocated();
    const int64_t file_during = proc_status_bytes("RssFile") - file_before;
    const int64_t anon_during = proc_status_bytes("RssAnon") - anon_before;
    std::printf("file %.0f MB, backend %.0f MB: after load RssFile +%.1f MB, RssAnon +%.1f MB\n",
                file_bytes / 1e6, weights / 1e6, file_during / 1e6, anon_during / 1e6);
    // Without the release every page of the file stays resident while the source is alive.
    EXPECT_LT(file_during, file_bytes / 20) << "the model file's pages stayed resident after the load";
    // (No lower bound: memory freed by earlier tests in this process may be reused.)
    EXPECT_LT(anon_during, weights + file_bytes / 10) << "a host copy beyond the backend's weights";
    // The weights are the file's values, and the released pages read back intact.
    const HostTensorView* v = source.find("model.layers.3.mlp.down_proj.weight");
    ASSERT_NE(v, nullptr);
    const float* w = model.weights().layers[3].w_down.w.f32();
    EXPECT_EQ(std::memcmp(w, v->data, static_cast<size_t>(v->nbytes)), 0);
  }
  std::filesystem::remove_all(dir);
}

// bf16 and f16 files load into the CPU's f32 exactly (the widening is exact), straight from
// the mapping; a NaN is found at its index with the tensor named.
TEST(StreamingLoad, HalfFilesConvertExactlyAndNonFiniteValuesAreNamed) {
  for (DType dt : {DTYPE_BF16, DTYPE_F16}) {
    const std::string dir = smezo_test::make_temp_dir("streaming_half");
    ModelConfig cfg = mid_llama_config(1);
    cfg.vocab_size = 64;
    write_random_hf_dir(dir, cfg, dt, 11);
    WeightSource source = load_weights(dir);
    CpuBackend backend;
    Model model(source, backend, DTYPE_F32, 8, 2);
    const HostTensorView* v = source.find("model.layers.0.self_attn.q_proj.weight");
    const float* w = model.weights().layers[0].wq.w.f32();
    for (int64_t i = 0; i < v->numel(); i += 997) {
      uint16_t h;
      std::memcpy(&h, static_cast<const char*>(v->data) + 2 * i, 2);
      ASSERT_EQ(w[i], dt == DTYPE_BF16 ? bf16_to_float(h) : f16_to_float(h)) << dtype_name(dt) << " " << i;
    }
    std::filesystem::remove_all(dir);
  }
  // a NaN in a bf16 tensor (a copy of the view's bytes with one element replaced)
  ModelConfig cfg = mid_llama_config(1);
  cfg.vocab_size = 64;
  const std::string dir = smezo_test::make_temp_dir("streaming_nan");
  write_random_hf_dir(dir, cfg, DTYPE_BF16, 12);
  WeightSource source = load_weights(dir);
  HostTensorView& v = source.tensors.at("model.layers.0.mlp.up_proj.weight");
  std::vector<uint16_t> copy(static_cast<size_t>(v.numel()));
  std::memcpy(copy.data(), v.data, copy.size() * 2);
  copy[1537] = 0x7fc0;  // bf16 NaN: row 3, column 1 of the (1536, 512) matrix
  v.data = copy.data();
  v.mapping = nullptr;  // now an owned buffer: nothing to release
  CpuBackend backend;
  EXPECT_EQ(smezo_test::error_of([&] { Model m(source, backend, DTYPE_F32, 8, 2); }),
            "tensor model.layers.0.mlp.up_proj.weight in " + dir +
                "/model.safetensors holds NaN at index 1537 (row 3, column 1); the checkpoint is "
                "corrupt (or was saved from a diverged run)");
  std::filesystem::remove_all(dir);
}

// MappedFile::release_pages drops pages of a range (widened to whole pages) and the mapping
// reads back the same bytes afterwards.
TEST(StreamingLoad, ReleasedPagesReadBackUnchanged) {
  const std::string dir = smezo_test::make_temp_dir("release_pages");
  std::string bytes(3 * 4096 + 123, '\0');
  for (size_t i = 0; i < bytes.size(); i++) bytes[i] = static_cast<char>((i * 131 + 7) & 0xff);
  smezo_test::write_file(dir + "/f.bin", bytes);
  auto f = MappedFile::open(dir + "/f.bin");
  f->release_pages(f->data() + 100, 5000);
  f->release_pages(f->data() - 64, 1 << 30);  // clipped to the mapping
  EXPECT_EQ(std::memcmp(f->data(), bytes.data(), bytes.size()), 0);
  std::filesystem::remove_all(dir);
}
