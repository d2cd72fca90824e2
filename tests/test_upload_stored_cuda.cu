// CudaBackend::upload_stored (cuda/upload_stored.cu): raw file bytes of every stored dtype
// into every storage dtype, converted on the GPU exactly as the host rounds (nearest even),
// with the first NaN/Inf found at its index; one case larger than the 64 MiB upload chunk.
// Skips with "no CUDA device: skipped" where no GPU is present.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "../cuda/cuda_backend.h"
#include "../cuda/cuda_check.h"
#include "common/half.h"
#include "test_util.h"

using namespace smezo;

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

float round_to(DType dt, float v) {
  if (dt == DTYPE_BF16) return bf16_to_float(float_to_bf16(v));
  if (dt == DTYPE_F16) return f16_to_float(float_to_f16(v));
  return v;
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

TEST(UploadStoredCuda, FreeMemoryIsReported) {
  if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped";
  CudaBackend gpu;
  const int64_t before = gpu.free_memory_bytes();
  ASSERT_GT(before, 0);
  gpu.alloc(1, int64_t(256) << 20, DTYPE_F32);  // 1 GiB
  EXPECT_LE(gpu.free_memory_bytes(), before - (int64_t(1000) << 20));
}
