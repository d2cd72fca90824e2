// The noise spec on the GPU, bit for bit against the host functions of
// src/common/noise_spec.h: raw Philox words, z of every noise kind (launch_noise_fill and the
// dispatch noise_z8 / noise_z in a kernel, at small and huge indices), every radius and angle
// of the spec-v2 gaussian, cuRAND's own curand_Philox4x32_10, masks and element rules
// evaluated in a kernel, and the sign kind's kernels (cuda/sign_noise.cu) on ranges that start
// and end anywhere. Every GPU test skips with "no CUDA device: skipped" where no GPU is
// present. The CudaCheck tests (error macros) run everywhere.
#include <gtest/gtest.h>

#include <curand_philox4x32_x.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../cuda/cuda_check.h"
#include "../cuda/noise.h"
#include "../cuda/sign_noise.h"
#include "common/half.h"
#include "common/check.h"
#include "common/noise_spec.h"
#include "test_util.h"

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

const uint64_t kSeeds[] = {0ull, 1ull, 0x0123456789abcdefull, 0xffffffffffffffffull};
const NoiseKind kKinds[] = {NOISE_GAUSSIAN, NOISE_GAUSSIAN_V1, NOISE_RADEMACHER, NOISE_SIGN};

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

// z of groups base + g (exercises the high counter word) through noise_z8, and of each
// element through noise_z.
__global__ void z_at_kernel(float* out8, float* out1, int64_t n_groups, int64_t base,
                            NoiseKind kind, uint64_t seed, uint32_t tensor_id) {
  const int64_t g = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (g >= n_groups) return;
  float z[8];
  noise_z8(kind, seed, tensor_id, base + g, z);
  for (int l = 0; l < 8; ++l) {
    out8[8 * g + l] = z[l];
    out1[8 * g + l] = noise_z(kind, seed, tensor_id, 8 * (base + g) + l);
  }
}

// The spec-v2 gaussian's parts for every 16-bit input: radius of word i << 16 and the
// direction of word i (i in [0, 65536)).
__global__ void v2_parts_kernel(float* radius, float* cos_out, float* sin_out) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 65536u) return;
  radius[i] = noise_v2_radius(i << 16);
  noise_v2_direction(i, &cos_out[i], &sin_out[i]);
}

struct RuleCase {
  NoiseKind noise;
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
  const float z = noise_z(c.noise, c.seed, c.tensor_id, i);
  keep[i] = k;
  pert[i] = perturbed_value(w[i], z, c.scale, k);
  upd[i] = updated_value(w[i], z, c.coef, k);
  rad[i] = noise_z(NOISE_RADEMACHER, c.seed, c.tensor_id, i);
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
  const std::string msg = smezo_test::error_of([&] { CUDA_CHECK(fail()); });
  EXPECT_NE(msg.find("cudaErrorInvalidValue"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fail()"), std::string::npos) << msg;
  EXPECT_NE(msg.find("test_noise_cuda.cu"), std::string::npos) << msg;
  EXPECT_EQ(calls, 1);
  EXPECT_THROW_MSG(CUBLAS_CHECK(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
  EXPECT_NO_THROW(CUDA_CHECK(cudaSuccess));
}

TEST(CudaCheck, DeviceAvailabilityNeverThrows) {
  bool a = false;
  EXPECT_NO_THROW(a = cuda_device_available());
  // the answer is the runtime's own: true exactly when it counts at least one device
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  cudaGetLastError();  // leave no error behind for the next test
  EXPECT_EQ(a, err == cudaSuccess && count > 0) << cudaGetErrorString(err) << ", " << count << " device(s)";
  EXPECT_EQ(a, cuda_device_available());  // and it does not change between calls
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

TEST(NoiseCuda, NoiseFillBitExactEveryKind) {
  SKIP_WITHOUT_GPU();
  const int64_t n = 1000003;  // not a multiple of 8: the tail group is partial
  DeviceBuffer<float> buf(n + 8);
  for (NoiseKind kind : kKinds) {
    for (uint64_t seed : kSeeds) {
      for (int offset : {0, 1}) {  // aligned (float4 stores) and unaligned (scalar stores)
        const uint32_t tensor = 3 + offset;
        CUDA_CHECK(cudaMemset(buf.ptr, 0xff, (n + 8) * sizeof(float)));  // poison: NaNs
        launch_noise_fill(buf.ptr + offset, n, kind, seed, tensor, 0);
        const std::vector<float> got = to_host(buf.ptr, n + 8);
        for (int64_t g = 0; 8 * g < n; ++g) {
          float z[8];
          noise_z8(kind, seed, tensor, g, z);
          for (int l = 0; l < 8 && 8 * g + l < n; ++l)
            ASSERT_EQ(fp_bits(got[offset + 8 * g + l]), fp_bits(z[l]))
                << "kind " << kind << " seed " << seed << " index " << 8 * g + l << ": GPU "
                << got[offset + 8 * g + l] << " host " << z[l];
        }
        // Guard words outside [offset, offset + n) stay poisoned.
        for (int64_t i = 0; i < offset; ++i) EXPECT_EQ(fp_bits(got[i]), 0xffffffffu);
        for (int64_t i = offset + n; i < n + 8; ++i) EXPECT_EQ(fp_bits(got[i]), 0xffffffffu) << i;
      }
    }
  }
}

TEST(NoiseCuda, DispatchAtLargeIndicesBitExactEveryKind) {
  SKIP_WITHOUT_GPU();
  const int64_t n_groups = 65536, base = (int64_t(1) << 33) + 12345;
  DeviceBuffer<float> d8(8 * n_groups), d1(8 * n_groups);
  for (NoiseKind kind : kKinds) {
    z_at_kernel<<<(n_groups + 255) / 256, 256>>>(d8.ptr, d1.ptr, n_groups, base, kind, 0xabcdefull, 11);
    CUDA_CHECK_LAUNCH();
    const std::vector<float> a = to_host(d8.ptr, 8 * n_groups), b = to_host(d1.ptr, 8 * n_groups);
    for (int64_t g = 0; g < n_groups; ++g) {
      float z[8];
      noise_z8(kind, 0xabcdefull, 11, base + g, z);
      for (int l = 0; l < 8; ++l) {
        ASSERT_EQ(fp_bits(a[8 * g + l]), fp_bits(z[l])) << "kind " << kind << " group " << base + g;
        ASSERT_EQ(fp_bits(b[8 * g + l]), fp_bits(z[l])) << "kind " << kind << " group " << base + g;
      }
    }
  }
}

// Every radius and every direction the spec-v2 gaussian can produce, GPU == host bit for bit.
TEST(NoiseCuda, GaussianV2EveryRadiusAndAngleBitExact) {
  SKIP_WITHOUT_GPU();
  DeviceBuffer<float> r(65536), c(65536), s(65536);
  v2_parts_kernel<<<256, 256>>>(r.ptr, c.ptr, s.ptr);
  CUDA_CHECK_LAUNCH();
  const std::vector<float> hr = to_host(r.ptr, 65536), hc = to_host(c.ptr, 65536),
                           hs = to_host(s.ptr, 65536);
  for (uint32_t i = 0; i < 65536u; ++i) {
    float cw, sw;
    noise_v2_direction(i, &cw, &sw);
    ASSERT_EQ(fp_bits(hr[i]), fp_bits(noise_v2_radius(i << 16))) << "radius of " << i;
    ASSERT_EQ(fp_bits(hc[i]), fp_bits(cw)) << "cos of " << i;
    ASSERT_EQ(fp_bits(hs[i]), fp_bits(sw)) << "sin of " << i;
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
      {NOISE_GAUSSIAN, MASK_DENSE, 0.0f, 0.0f, 1e-3f, 2.5e-7f, 42, 0, 1},
      {NOISE_GAUSSIAN_V1, MASK_MAGNITUDE, 0.02f, 0.0f, -1e-3f, -1.5e-6f, 43, 0, 2},
      {NOISE_RADEMACHER, MASK_RANDOM, 0.0f, 0.3f, 1e-3f, 4e-7f, 44, 0x77, 3},
      {NOISE_GAUSSIAN, MASK_RANDOM, 0.0f, 0.3f, -1e-3f, 4e-7f, 45, 0x78, 4},
      {NOISE_SIGN, MASK_MAGNITUDE, 0.02f, 0.0f, 1e-3f, -2e-6f, 46, 0, 5},
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
      const float z = noise_z(c.noise, c.seed, c.tensor_id, i);
      ASSERT_EQ(bool(k[i]), hk) << "mask kind " << c.kind << " index " << i;
      ASSERT_EQ(fp_bits(p[i]), fp_bits(perturbed_value(w[i], z, c.scale, hk))) << i;
      ASSERT_EQ(fp_bits(u[i]), fp_bits(updated_value(w[i], z, c.coef, hk))) << i;
      ASSERT_EQ(fp_bits(r[i]), fp_bits(noise_z(NOISE_RADEMACHER, c.seed, c.tensor_id, i))) << i;
      ASSERT_EQ(fp_bits(f[i]), fp_bits(noise_uniform01(c.seed, c.tensor_id, i, NOISE_STREAM_ROUNDING)));
    }
  }
}

// ---------------------------------------------------------------- the sign kind's kernels

namespace {

// v in dtype dt as raw bytes (f16/bf16 rounded to nearest even), and back.
std::vector<uint8_t> to_raw(DType dt, const std::vector<float>& v) {
  std::vector<uint8_t> raw(v.size() * dtype_size(dt));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DTYPE_F32) {
      std::memcpy(&raw[4 * i], &v[i], 4);
      continue;
    }
    const uint16_t h = dt == DTYPE_BF16 ? float_to_bf16(v[i]) : float_to_f16(v[i]);
    std::memcpy(&raw[2 * i], &h, 2);
  }
  return raw;
}

float raw_at(DType dt, const std::vector<uint8_t>& raw, size_t i) {
  if (dt == DTYPE_F32) {
    float f;
    std::memcpy(&f, &raw[4 * i], 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, &raw[2 * i], 2);
  return dt == DTYPE_BF16 ? bf16_to_float(h) : f16_to_float(h);
}

float rounded_to(DType dt, float v) { return raw_at(dt, to_raw(dt, {v}), 0); }

}  // namespace

// launch_sign_perturb (single and pair) and launch_sign_update on a tensor of several warp tiles
// (4096 elements each), ranges starting on and off a call (128) and a tile, ending mid-group, and
// shorter than a group; every storage dtype and mask kind. Each output element is the spec's rule
// with noise_z(NOISE_SIGN), rounded once to the dtype; outputs are poisoned (0xff bytes, NaN in every
// dtype) with a guard after the range that must stay poisoned.
TEST(NoiseCuda, SignKernelsBitExactOnAnyRange) {
  SKIP_WITHOUT_GPU();
  const int64_t total = 3 * 4096 + 1000 + 5;
  const int64_t ranges[][2] = {{0, total}, {0, 5}, {8, 3}, {136, 2 * 4096 + 13}, {4096 - 8, 24},
                               {total - 5 - 8 * 50, 8 * 50 + 5}, {1024, 4096}};
  const uint64_t seed = 0x5eed5eed12345ull;
  for (DType dt : {DTYPE_F32, DTYPE_F16, DTYPE_BF16}) {
    std::vector<float> w = smezo_test::random_floats(total, 21, -1.0f, 1.0f);
    for (float& x : w) x = rounded_to(dt, x);
    const std::vector<uint8_t> raw = to_raw(dt, w);
    const size_t es = dtype_size(dt), guard = 16;
    DeviceBuffer<uint8_t> src(raw.size()), plus(raw.size() + guard * es), minus(raw.size() + guard * es);
    CUDA_CHECK(cudaMemcpy(src.ptr, raw.data(), raw.size(), cudaMemcpyHostToDevice));
    for (MaskKind mask : {MASK_DENSE, MASK_MAGNITUDE, MASK_RANDOM}) {
      ProbeArgs p;
      p.scale = 0.125f;  // large: a wrong sign shows in every dtype
      p.seed = seed;
      p.noise = NOISE_SIGN;
      p.mask = MaskArgs{mask, 0.4f, 0.3f, 0x77, 9};
      auto want = [&](int64_t i, float scale) {
        const bool keep = mask_keep(mask, w[i], 0.4f, 0.3f, 0x77, 9, i);
        return rounded_to(dt, perturbed_value(w[i], noise_z(NOISE_SIGN, seed, 9, i), scale, keep));
      };
      for (const auto& r : ranges) {
        SCOPED_TRACE(testing::Message() << dtype_name(dt) << " mask " << mask << " range " << r[0] << "+" << r[1]);
        for (bool pair : {true, false}) {
          CUDA_CHECK(cudaMemset(plus.ptr, 0xff, raw.size() + guard * es));
          CUDA_CHECK(cudaMemset(minus.ptr, 0xff, raw.size() + guard * es));
          launch_sign_perturb(dt, plus.ptr, pair ? minus.ptr : nullptr, src.ptr, r[0], r[1], p, 0);
          CUDA_CHECK(cudaDeviceSynchronize());
          const std::vector<uint8_t> hp = to_host(plus.ptr, raw.size() + guard * es);
          const std::vector<uint8_t> hm = to_host(minus.ptr, raw.size() + guard * es);
          for (int64_t k = 0; k < r[1]; ++k) {
            ASSERT_EQ(fp_bits(raw_at(dt, hp, k)), fp_bits(want(r[0] + k, p.scale))) << "+ element " << r[0] + k;
            if (pair) {
              ASSERT_EQ(fp_bits(raw_at(dt, hm, k)), fp_bits(want(r[0] + k, -p.scale))) << "- element " << r[0] + k;
            }
          }
          for (size_t b = r[1] * es; b < r[1] * es + guard * es; ++b) ASSERT_EQ(hp[b], 0xffu) << "written past the end";
          if (!pair) {
            ASSERT_EQ(hm[0], 0xffu) << "a single probe wrote W-";
          }
        }
      }
      const float coef = 3e-3f, decay = 0.25f;  // the update: every element of the tensor, in place
      CUDA_CHECK(cudaMemcpy(plus.ptr, raw.data(), raw.size(), cudaMemcpyHostToDevice));
      launch_sign_update(dt, plus.ptr, total, coef, decay, seed, p.mask, 0);
      const std::vector<uint8_t> hu = to_host(plus.ptr, raw.size());
      for (int64_t i = 0; i < total; ++i) {
        const bool keep = mask_keep(mask, w[i], 0.4f, 0.3f, 0x77, 9, i);
        const float w1 = updated_value(w[i], noise_z(NOISE_SIGN, seed, 9, i), coef, keep);
        ASSERT_EQ(fp_bits(raw_at(dt, hu, i)), fp_bits(rounded_to(dt, keep ? fp_fma(-decay, w[i], w1) : w1)))
            << dtype_name(dt) << " mask " << mask << " update of element " << i;
      }
    }
  }
}
