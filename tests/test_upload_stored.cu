// CudaBackend::upload_stored (cuda/upload_stored.cu): raw file bytes of every stored dtype
// into every storage dtype, converted on the GPU exactly as the host rounds (nearest even),
// with the first NaN/Inf found at its index; finite values out of the storage dtype's range
// (f32 65520 into F16) reported the same way, by the GPU converter and by the Backend default
// (the host path of wrappers), and refused by the model load naming the tensor; cases larger
// than the 64 MiB upload chunk, converted (f32 -> bf16) and copied as is (bf16 -> bf16).
// Skips with "no CUDA device: skipped" where no GPU is present.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../cuda/cuda_backend.h"
#include "../cuda/cuda_check.h"
#include "common/half.h"
#include "cuda/cuda_plan.h"  // kCudaUploadChunkBytes
#include "model/model.h"
#include "model_fixture.h"
#include "test_util.h"

using namespace smezo;
using smezo_test::round_to;

namespace {

// n random values in [-2, 2) stored as dtype: the raw bytes and their exact float values.
void stored_values(DType dt, int64_t n, uint32_t seed, std::vector<char>* bytes, std::vector<float>* values) {
  *values = smezo_test::random_floats(n, seed, -2.0f, 2.0f);
  bytes->resize(static_cast<size_t>(n * dtype_size(dt)));
  for (int64_t i = 0; i < n; i++) {
    float& v = (*values)[i];
    if (dt == DTYPE_F32) {
      std::memcpy(bytes->data() + 4 * i, &v, 4);
      continue;
    }
    const uint16_t h = dt == DTYPE_BF16 ? float_to_bf16(v) : float_to_f16(v);
    v = dt == DTYPE_BF16 ? bf16_to_float(h) : f16_to_float(h);
    std::memcpy(bytes->data() + 2 * i, &h, 2);
  }
}

void set_stored(DType dt, std::vector<char>* bytes, int64_t i, float v) {
  if (dt == DTYPE_F32) {
    std::memcpy(bytes->data() + 4 * i, &v, 4);
  } else {
    const uint16_t h = dt == DTYPE_BF16 ? float_to_bf16(v) : float_to_f16(v);
    std::memcpy(bytes->data() + 2 * i, &h, 2);
  }
}

}  // namespace

TEST(UploadStoredCuda, EveryDtypePairConvertsExactlyAndFindsNonFinite) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CudaBackend gpu;
  const DType dtypes[] = {DTYPE_F32, DTYPE_F16, DTYPE_BF16};
  uint32_t seed = 1;
  for (DType src : dtypes)
    for (DType dst : dtypes) {
      // one case spans several 64 MiB chunks (f32 source: 16 Mi elements each)
      const int64_t n = src == DTYPE_F32 && dst == DTYPE_BF16 ? (int64_t(1) << 25) + 4099 : 100003;
      SCOPED_TRACE(std::string(dtype_name(src)) + " -> " + dtype_name(dst) + ", n " + std::to_string(n));
      std::vector<char> bytes;
      std::vector<float> values;
      stored_values(src, n, seed++, &bytes, &values);
      Tensor t = gpu.alloc(1, n, dst);
      ASSERT_EQ(gpu.upload_stored(t, bytes.data(), src), -1);
      std::vector<float> got(static_cast<size_t>(n));
      gpu.download(t, got.data());
      int64_t wrong = 0;
      for (int64_t i = 0; i < n; i++) wrong += got[i] != round_to(dst, values[i]);
      EXPECT_EQ(wrong, 0);
      // two non-finite values: the first index is reported, whatever the chunk it is in
      const int64_t first = n * 2 / 3, second = n - 2;
      set_stored(src, &bytes, second, NAN);
      set_stored(src, &bytes, first, -INFINITY);
      EXPECT_EQ(gpu.upload_stored(t, bytes.data(), src), first);
    }
}

// cudaMemGetInfo counts the whole device: another process (the GPU backlog runs the suite in
// shards at once) can free or take memory between the two readings. So a few tries, each with
// its own backend (its memory freed at the end of the try); one try must see the 1 GiB taken,
// within 64 MiB. A free_memory_bytes that does not follow the allocation fails every try.
TEST(UploadStoredCuda, FreeMemoryIsReported) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const int64_t gib = int64_t(1) << 30, slack = int64_t(64) << 20;
  std::string seen;
  bool ok = false;
  for (int attempt = 0; attempt < 5 && !ok; ++attempt) {
    CudaBackend gpu;
    const int64_t before = gpu.free_memory_bytes();
    ASSERT_GT(before, 0);
    gpu.alloc(1, gib / 4, DTYPE_F32);
    const int64_t taken = before - gpu.free_memory_bytes();
    ok = taken >= gib - slack && taken <= gib + slack;
    seen += " " + std::to_string(taken >> 20) + " MiB";
  }
  EXPECT_TRUE(ok) << "free memory did not drop by 1 GiB on any try; drops seen:" << seen;
}

// A finite value that the storage dtype cannot hold becomes Inf there; it is reported at its
// index like a NaN/Inf of the file (the check looks at the converted value, not the source
// bits), and values just inside the range load. Both the GPU converter and the Backend default
// (convert on the host, then upload: what a wrapper without its own upload_stored runs).
TEST(UploadStoredCuda, OutOfRangeValuesAreReportedLikeNonFinite) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CudaBackend gpu;
  const int64_t n = 70001;
  struct Case {
    DType src, dst;
    float inside;  // the largest magnitude that still rounds to a finite dst value
    float outside;  // finite in src, Inf once rounded to dst
  } cases[] = {
      {DTYPE_F32, DTYPE_F16, 65519.0f, 65520.0f},
      {DTYPE_BF16, DTYPE_F16, 65280.0f, 65536.0f},  // bf16 neighbours of the F16 limit
      {DTYPE_F32, DTYPE_BF16, bf16_to_float(0x7f7f), FLT_MAX},
  };
  uint32_t seed = 50;
  for (const Case& k : cases)
    for (bool host_default : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(k.src)) + " -> " + dtype_name(k.dst) +
                   (host_default ? ", Backend::upload_stored" : ", CudaBackend::upload_stored"));
      auto upload = [&](const Tensor& t, const std::vector<char>& b) {
        return host_default ? gpu.Backend::upload_stored(t, b.data(), k.src) : gpu.upload_stored(t, b.data(), k.src);
      };
      std::vector<char> bytes;
      std::vector<float> values;
      stored_values(k.src, n, seed++, &bytes, &values);
      set_stored(k.src, &bytes, 7, k.inside);
      set_stored(k.src, &bytes, 8, -k.inside);
      Tensor t = gpu.alloc(1, n, k.dst);
      ASSERT_EQ(upload(t, bytes), -1);
      std::vector<float> got(static_cast<size_t>(n));
      gpu.download(t, got.data());
      EXPECT_EQ(got[7], round_to(k.dst, k.inside));
      EXPECT_TRUE(std::isfinite(got[7]) && std::isfinite(got[8]));
      // two out-of-range values: the first is reported
      set_stored(k.src, &bytes, n - 3, k.outside);
      set_stored(k.src, &bytes, n / 2, -k.outside);
      EXPECT_EQ(upload(t, bytes), n / 2);
      // and a NaN before them is reported first
      set_stored(k.src, &bytes, 1000, NAN);
      EXPECT_EQ(upload(t, bytes), 1000);
    }
  // same dtype: the largest finite value is stored as is
  for (DType dt : {DTYPE_F32, DTYPE_BF16, DTYPE_F16}) {
    std::vector<char> bytes;
    std::vector<float> values;
    stored_values(dt, 1000, seed++, &bytes, &values);
    set_stored(dt, &bytes, 500, dt == DTYPE_F32 ? FLT_MAX : dt == DTYPE_BF16 ? bf16_to_float(0x7f7f) : 65504.0f);
    Tensor t = gpu.alloc(1, 1000, dt);
    EXPECT_EQ(gpu.upload_stored(t, bytes.data(), dt), -1) << dtype_name(dt);
  }
}

// bf16 file into bf16 storage (the common case): no conversion, the bytes go straight into the
// tensor chunk by chunk (64 MiB = 32 Mi elements) and check_kernel scans each. 32 Mi + 4099
// elements: a second, short chunk. Exact copy; NaN/Inf found in either chunk, the first
// reported.
TEST(UploadStoredCuda, Bf16UploadAcrossTheChunkBoundary) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CudaBackend gpu;
  const int64_t chunk = kCudaUploadChunkBytes / 2, n = chunk + 4099;
  std::vector<char> bytes;
  std::vector<float> values;
  stored_values(DTYPE_BF16, n, 60, &bytes, &values);
  Tensor t = gpu.alloc(1, n, DTYPE_BF16);
  ASSERT_EQ(gpu.upload_stored(t, bytes.data(), DTYPE_BF16), -1);
  std::vector<float> got(static_cast<size_t>(n));
  gpu.download(t, got.data());
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; i++) wrong += smezo::float_bits(got[i]) != smezo::float_bits(values[i]);
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(got[chunk - 1], values[chunk - 1]);  // the last element of the first chunk
  EXPECT_EQ(got[chunk], values[chunk]);          // the first of the second
  set_stored(DTYPE_BF16, &bytes, chunk + 17, NAN);  // in the second chunk only
  EXPECT_EQ(gpu.upload_stored(t, bytes.data(), DTYPE_BF16), chunk + 17);
  set_stored(DTYPE_BF16, &bytes, chunk, INFINITY);  // the second chunk's first element
  EXPECT_EQ(gpu.upload_stored(t, bytes.data(), DTYPE_BF16), chunk);
  set_stored(DTYPE_BF16, &bytes, chunk - 1, -INFINITY);  // the first chunk's last element
  EXPECT_EQ(gpu.upload_stored(t, bytes.data(), DTYPE_BF16), chunk - 1);
}

// Loading a model into F16 storage refuses a weight that F16 cannot hold, naming the tensor,
// the value, its place and the storage dtype, with a hint; into BF16 the same weights load.
TEST(UploadStoredCuda, ModelLoadRefusesAWeightOutOfTheStorageRange) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  const ModelConfig c = smezo_test::tiny_llama_config();  // q_proj is (32, 32)
  const std::string name = "model.layers.1.self_attn.q_proj.weight";
  WeightSource src = smezo_test::random_weight_source(c, 9);
  smezo_test::mutable_tensor(src, name)[2 * 32 + 7] = 70000.0f;  // row 2, column 7
  smezo_test::mutable_tensor(src, name)[9 * 32 + 1] = 1e6f;       // a later one
  {
    CudaBackend gpu;
    const std::string msg = smezo_test::error_of([&] { Model m(src, gpu, DTYPE_F16, 8, 8); });
    EXPECT_THAT(msg, testing::HasSubstr("tensor " + name + " in random-test-model holds 70000 at index 71 "
                                        "(row 2, column 7), out of range for the F16 storage dtype "
                                        "(largest finite value 65504) ---> HINT: load it with --dtype bf16 or f32"));
  }
  CudaBackend gpu;
  Model m(src, gpu, DTYPE_BF16, 8, 8);
  std::vector<float> w(32 * 32);
  for (const Param* p : m.params())
    if (p->info.name == name) gpu.download(p->w, w.data());
  EXPECT_EQ(w[2 * 32 + 7], 70144.0f);  // 70000 in bf16 (8 significand bits)
}
