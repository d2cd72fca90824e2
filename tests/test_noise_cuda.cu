// The noise spec on the GPU, bit for bit against the host functions of
// src/common/noise_spec.h: raw Philox words, normals (launch_noise_fill), cuRAND's own
// curand_Philox4x32_10, masks and element rules evaluated in a kernel. Every GPU test skips
// with "no CUDA device: skipped" where no GPU is present. The CudaCheck tests (error macros)
// run everywhere.
#include <gtest/gtest.h>

#include <curand_philox4x32_x.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../cuda/cuda_check.h"
#include "../cuda/noise.h"
#include "common/check.h"
#include "common/noise_spec.h"

using namespace smezo;

#define SKIP_WITHOUT_GPU()                                                  \
  do {                                                                      \
    if (!cuda_device_available()) GTEST_SKIP() << "no CUDA device: skipped"; \
  } while (0)

namespace {

// A device buffer freed on scope exit.
template <typename T>
struct DeviceBuffer {
  T* ptr = nullptr;
  explicit DeviceBuffer(size_t n) { CUDA_CHECK(cudaMalloc(&ptr, n * sizeof(T))); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

template <typename T>
std::vector<T> to_host(const T* dev, size_t n) {
  std::vector<T> h(n);
  CUDA_CHECK(cudaMemcpy(h.data(), dev, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

const uint64_t kSeeds[] = {0ull, 1ull, 0x0123456789abcdefull, 0xffffffffffffffffull};

// cuRAND's device Philox on the same counter/key: the convention check.
__global__ void curand_philox_kernel(uint32_t* out, int64_t n_groups, uint64_t seed,
                                     uint32_t tensor_id, uint32_t stream) {
  const int64_t g = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (g >= n_groups) return;
  const uint4 c = make_uint4(static_cast<uint32_t>(g), static_cast<uint32_t>(g >> 32), tensor_id,
                             stream);
  const uint2 k = make_uint2(static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  const uint4 r = curand_Philox4x32_10(c, k);
  out[4 * g + 0] = r.x;
  out[4 * g + 1] = r.y;
  out[4 * g + 2] = r.z;
  out[4 * g + 3] = r.w;
}

// Normals at groups base + g (exercises the high counter word), via noise_normal too.
__global__ void normals_at_kernel(float* out4, float* out1, int64_t n_groups, int64_t base,
                                  uint64_t seed, uint32_t tensor_id) {
  const int64_t g = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (g >= n_groups) return;
  float z[4];
  noise_normal4(seed, tensor_id, base + g, NOISE_STREAM_GAUSS, z);
  for (int l = 0; l < 4; ++l) {
    out4[4 * g + l] = z[l];
    out1[4 * g + l] = noise_normal(seed, tensor_id, 4 * (base + g) + l, NOISE_STREAM_GAUSS);
  }
}

struct RuleCase {
  MaskKind kind;
  float threshold, keep_prob, scale, coef;
  uint64_t seed, mask_seed;
  uint32_t tensor_id;
};

// Per element: keep flag, perturbed and updated value, Rademacher, uniform01 (rounding).
__global__ void rules_kernel(const float* w, int64_t n, RuleCase c, uint8_t* keep, float* pert,
                             float* upd, float* rad, float* unif) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const bool k = mask_keep(c.kind, w[i], c.threshold, c.keep_prob, c.mask_seed, c.tensor_id, i);
  const float z = noise_normal(c.seed, c.tensor_id, i, NOISE_STREAM_GAUSS);
  keep[i] = k;
  pert[i] = perturbed_value(w[i], z, c.scale, k);
  upd[i] = updated_value(w[i], z, c.coef, k);
  rad[i] = noise_rademacher(c.seed, c.tensor_id, i);
  unif[i] = noise_uniform01(c.seed, c.tensor_id, i, NOISE_STREAM_ROUNDING);
}

}  // namespace

// ---------------------------------------------------------------- error macros (no GPU needed)

TEST(CudaCheck, MacrosThrowWithStatementAndEvaluateOnce) {
  int calls = 0;
  auto fail = [&calls]() {
    ++calls;
    return cudaErrorInvalidValue;
  };
  try {
    CUDA_CHECK(fail());
    FAIL() << "CUDA_CHECK did not throw";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cudaErrorInvalidValue"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fail()"), std::string::npos) << msg;
    EXPECT_NE(msg.find("test_noise_cuda.cu"), std::string::npos) << msg;
  }
  EXPECT_EQ(calls, 1);
  try {
    CUBLAS_CHECK(CUBLAS_STATUS_INVALID_VALUE);
    FAIL() << "CUBLAS_CHECK did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUBLAS_STATUS_INVALID_VALUE"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(CUDA_CHECK(cudaSuccess));
}

TEST(CudaCheck, DeviceAvailabilityNeverThrows) {
  bool a = false;
  EXPECT_NO_THROW(a = cuda_device_available());
  EXPECT_EQ(a, cuda_device_available());
  std::printf("  cuda_device_available() = %s\n", a ? "true" : "false");
}

// ---------------------------------------------------------------- bit-exact noise

TEST(NoiseCuda, PhiloxWordsBitExactAndMatchCurand) {
  SKIP_WITHOUT_GPU();
  const int64_t n_groups = 262144;  // 1,048,576 words
  DeviceBuffer<uint32_t> ours(4 * n_groups), theirs(4 * n_groups);
  for (uint64_t seed : kSeeds) {
    for (uint32_t tensor : {0u, 7u}) {
      for (uint32_t stream : {uint32_t(NOISE_STREAM_GAUSS), uint32_t(NOISE_STREAM_RMEZO_MASK)}) {
        launch_philox_raw(ours.ptr, n_groups, seed, tensor, stream, 0);
        curand_philox_kernel<<<(n_groups + 255) / 256, 256>>>(theirs.ptr, n_groups, seed, tensor,
                                                              stream);
        CUDA_CHECK_LAUNCH();
        const std::vector<uint32_t> a = to_host(ours.ptr, 4 * n_groups);
        const std::vector<uint32_t> b = to_host(theirs.ptr, 4 * n_groups);
        for (int64_t g = 0; g < n_groups; ++g) {
          uint32_t x[4];
          noise_philox4(seed, tensor, g, stream, x);
          for (int l = 0; l < 4; ++l) {
            ASSERT_EQ(a[4 * g + l], x[l]) << "seed " << seed << " group " << g << " lane " << l;
            ASSERT_EQ(b[4 * g + l], x[l]) << "cuRAND, seed " << seed << " group " << g;
          }
        }
      }
    }
  }
}

TEST(NoiseCuda, NormalsBitExact) {
  SKIP_WITHOUT_GPU();
  const int64_t n = 1000003;  // not a multiple of 4: the tail group is partial
  DeviceBuffer<float> buf(n + 8);
  for (uint64_t seed : kSeeds) {
    for (int offset : {0, 1}) {  // aligned (float4 stores) and unaligned (scalar stores)
      const uint32_t tensor = 3 + offset;
      CUDA_CHECK(cudaMemset(buf.ptr, 0xff, (n + 8) * sizeof(float)));  // poison: NaNs
      launch_noise_fill(buf.ptr + offset, n, seed, tensor, NOISE_STREAM_GAUSS, 0);
      const std::vector<float> got = to_host(buf.ptr, n + 8);
      for (int64_t g = 0; 4 * g < n; ++g) {
        float z[4];
        noise_normal4(seed, tensor, g, NOISE_STREAM_GAUSS, z);
        for (int l = 0; l < 4 && 4 * g + l < n; ++l)
          ASSERT_EQ(bits(got[offset + 4 * g + l]), bits(z[l]))
              << "seed " << seed << " index " << 4 * g + l << ": GPU " << got[offset + 4 * g + l]
              << " host " << z[l];
      }
      // Guard words outside [offset, offset + n) stay poisoned.
      for (int64_t i = 0; i < offset; ++i) EXPECT_EQ(bits(got[i]), 0xffffffffu);
      for (int64_t i = offset + n; i < n + 8; ++i) EXPECT_EQ(bits(got[i]), 0xffffffffu) << i;
    }
  }
}

TEST(NoiseCuda, NormalsAtLargeIndicesBitExact) {
  SKIP_WITHOUT_GPU();
  const int64_t n_groups = 65536, base = (int64_t(1) << 33) + 12345;
  DeviceBuffer<float> d4(4 * n_groups), d1(4 * n_groups);
  normals_at_kernel<<<(n_groups + 255) / 256, 256>>>(d4.ptr, d1.ptr, n_groups, base, 0xabcdefull,
                                                     11);
  CUDA_CHECK_LAUNCH();
  const std::vector<float> a = to_host(d4.ptr, 4 * n_groups), b = to_host(d1.ptr, 4 * n_groups);
  for (int64_t g = 0; g < n_groups; ++g) {
    float z[4];
    noise_normal4(0xabcdefull, 11, base + g, NOISE_STREAM_GAUSS, z);
    for (int l = 0; l < 4; ++l) {
      ASSERT_EQ(bits(a[4 * g + l]), bits(z[l])) << "group " << base + g;
      ASSERT_EQ(bits(b[4 * g + l]), bits(z[l])) << "group " << base + g;
    }
  }
}

TEST(NoiseCuda, MasksAndElementRulesBitExact) {
  SKIP_WITHOUT_GPU();
  const int64_t n = 1 << 20;
  std::mt19937 gen(8);
  std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
  std::vector<float> w(n);
  for (float& v : w) v = dist(gen);
  DeviceBuffer<float> dw(n), pert(n), upd(n), rad(n), unif(n);
  DeviceBuffer<uint8_t> keep(n);
  CUDA_CHECK(cudaMemcpy(dw.ptr, w.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  const RuleCase cases[] = {
      {MASK_DENSE, 0.0f, 0.0f, 1e-3f, 2.5e-7f, 42, 0, 1},
      {MASK_MAGNITUDE, 0.02f, 0.0f, -1e-3f, -1.5e-6f, 43, 0, 2},
      {MASK_RANDOM, 0.0f, 0.3f, 1e-3f, 4e-7f, 44, 0x77, 3},
  };
  for (const RuleCase& c : cases) {
    rules_kernel<<<(n + 255) / 256, 256>>>(dw.ptr, n, c, keep.ptr, pert.ptr, upd.ptr, rad.ptr,
                                           unif.ptr);
    CUDA_CHECK_LAUNCH();
    const std::vector<uint8_t> k = to_host(keep.ptr, n);
    const std::vector<float> p = to_host(pert.ptr, n), u = to_host(upd.ptr, n),
                             r = to_host(rad.ptr, n), f = to_host(unif.ptr, n);
    for (int64_t i = 0; i < n; ++i) {
      const bool hk = mask_keep(c.kind, w[i], c.threshold, c.keep_prob, c.mask_seed, c.tensor_id, i);
      const float z = noise_normal(c.seed, c.tensor_id, i, NOISE_STREAM_GAUSS);
      ASSERT_EQ(bool(k[i]), hk) << "mask kind " << c.kind << " index " << i;
      ASSERT_EQ(bits(p[i]), bits(perturbed_value(w[i], z, c.scale, hk))) << i;
      ASSERT_EQ(bits(u[i]), bits(updated_value(w[i], z, c.coef, hk))) << i;
      ASSERT_EQ(bits(r[i]), bits(noise_rademacher(c.seed, c.tensor_id, i))) << i;
      ASSERT_EQ(bits(f[i]), bits(noise_uniform01(c.seed, c.tensor_id, i, NOISE_STREAM_ROUNDING)));
    }
  }
}
