// `smezo bench --kernel linear`: the linear layer's kernel playground (see linear_bench.h for
// what is timed). It links the production code — CudaBackend::linear / update / abs_quantile —
// so the benchmark and the product cannot drift; the only kernels here are the weight/input
// initialisers and the floors (noise-only per generator, weight-read), which are not product
// code.
//
// Validation (before any timing, on sampled entries: 4 rows of x times ~8 rows of W):
//   reference    downloaded W rows, x rounded on the host to the storage dtype (what
//                CudaBackend::linear feeds cuBLAS), z regenerated on the host (noise_z of
//                src/common/noise_spec.h, W's noise kind), mask from |w| and the threshold, and
//                w' = round_T(fma(eps, z, w)) for kept entries; sums in double.
//   unperturbed  |y0 - xr·wᵀ| <= tol0 = 2·K·2^-24·Σ|xr·w|  (the worst-case bound of an fp32
//                accumulation of K products, which are exact for bf16/f16 inputs)
//   perturbed    |(y' - y0) - xr·(w' - w)ᵀ| <= tol = 8·sqrt(K)·2^-24·Σ|xr|(|w| + |w'|).
//                The difference cancels the GEMM's own value, so what is left is the
//                perturbation (≈ sqrt(K)·eps·rms(x), ~0.03 at K = 4096) against the rounding
//                of two fp32 accumulations; their errors behave as a random walk of partial
//                sums far smaller than Σ|xr·w|, so tol is safe by orders of magnitude yet ~15x
//                below the signal at K = 4096: a missing, unmasked or wrong-z perturbation
//                fails.
//   update       bit-exact: round_T(keep ? fma(-0, w, fma(-coef, z, w)) : w) per element of
//                the sampled rows (the CPU rule with decay 0, see cuda/optimizer.cu).
//   floors       for N·K <= 2^24: Σz and Σz² of each noise-only checksum against a host sum
//                (relative 1e-4), the weight-read checksum (wrapping u32 word sum) exactly.
#include "bench/linear_bench.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "bench/bench_finish.h"
#include "bench/device_fill.h"
#include "bench/device_timing.h"
#include "bench/host_values.h"  // round_to
#include "common/check.h"
#include "common/device_names.h"
#include "common/half.h"
#include "common/noise_spec.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/device_utils.cuh"

namespace smezo {

namespace {

using bench::DeviceBuffer;
using bench::RegionTimer;
using bench::Timing;

constexpr int kBlock = 256;
constexpr uint32_t kBenchTensorId = 7;         // noise stream id of the benchmark's W
constexpr float kUpdateCoef = 1e-3f;           // lr·g: large enough to change bf16 weights
constexpr int64_t kFloorCheckMax = int64_t(1) << 24;  // floors are checked up to this N·K
constexpr double kU32 = 0x1p-24;                // unit roundoff of fp32 accumulation

// --- kernels

// The RNG floor of one noise kind: every z of n elements, exactly as the spec and
// perturb_weight_kernel (cuda/linear.cu) generate them — one noise_z8 per group of 8,
// grid-stride, 256 threads, at most 65536 blocks — reduced to (Σz, Σz²) per block, so nothing
// W-sized is written and the compiler cannot drop the work.
__global__ void noise_floor_kernel(int64_t n, NoiseKind kind, uint64_t seed, uint32_t tensor_id,
                                   float2* checksum) {
  const int64_t n_groups = ceil_div(n, 8);
  float s1 = 0.0f, s2 = 0.0f;
  for (int64_t g = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; g < n_groups;
       g += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float z[8];
    noise_z8(kind, seed, tensor_id, g, z);
#pragma unroll
    for (int l = 0; l < 8; ++l) {
      if (8 * g + l < n) {
        s1 += z[l];
        s2 = fmaf(z[l], z[l], s2);
      }
    }
  }
  s1 = block_reduce_sum(s1);
  s2 = block_reduce_sum(s2);
  if (threadIdx.x == 0) checksum[blockIdx.x] = make_float2(s1, s2);
}

// The bandwidth floor: W read once as 16-byte words (4 independent loads in flight per
// thread), the 2-byte tail by block 0; a wrapping u32 sum per block.
__global__ void weight_read_kernel(const uint4* w, int64_t n_vec, const uint16_t* tail,
                                   int n_tail, uint32_t* checksum) {
  uint32_t s = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < n_vec; i += 4 * stride) {
    const uint4 a = w[i], b = w[i + stride], c = w[i + 2 * stride], d = w[i + 3 * stride];
    s += (a.x + a.y + a.z + a.w) + (b.x + b.y + b.z + b.w) + (c.x + c.y + c.z + c.w) +
         (d.x + d.y + d.z + d.w);
  }
  for (; i < n_vec; i += stride) {
    const uint4 a = w[i];
    s += a.x + a.y + a.z + a.w;
  }
  if (blockIdx.x == 0 && static_cast<int>(threadIdx.x) < n_tail) s += tail[threadIdx.x];
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_xor_sync(0xffffffffu, s, offset);
  __shared__ uint32_t partial[32];
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t total = 0;
    for (unsigned k = 0; k < blockDim.x / 32; ++k) total += partial[k];
    checksum[blockIdx.x] = total;
  }
}

// --- host helpers

template <typename Fn>
void dispatch_storage(DType dtype, Fn&& fn) {
  SMEZO_REQUIRE(dtype == DTYPE_BF16 || dtype == DTYPE_F16,
                "bench --kernel linear: --dtype must be bf16 or f16 (got %s)", dtype_name(dtype));
  dispatch_dtype(dtype, fn);
}

std::vector<float> download_row(CudaBackend& b, const void* base, DType dtype, int64_t row,
                                int64_t cols) {
  Tensor t;
  t.data = static_cast<char*>(const_cast<void*>(base)) + row * cols * dtype_size(dtype);
  t.dtype = dtype;
  t.rows = 1;
  t.cols = cols;
  std::vector<float> out(static_cast<size_t>(cols));
  b.download(t, out.data());
  return out;
}

// {0, count/2, count-1} plus `extra` hashed indices, sorted and distinct.
std::vector<int64_t> sample_indices(int64_t count, int extra, uint64_t salt) {
  std::vector<int64_t> v = {0, count / 2, count - 1};
  for (int i = 0; i < extra; ++i)
    v.push_back(static_cast<int64_t>(bench_mix64(salt + i) % static_cast<uint64_t>(count)));
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

Tensor view(void* data, DType dtype, int64_t rows, int64_t cols) {
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.rows = rows;
  t.cols = cols;
  return t;
}

// --- validation

// What one sampled output entry must be (see the top of this file).
struct EntryRef {
  int64_t m = 0, n = 0;
  double ref0 = 0, tol0 = 0;  // unperturbed xr·w
  double refd = 0, told = 0;  // perturbation xr·(w' - w)
};

struct CheckResult {
  bool ok = true;
  double worst = 0;  // max |err| / tol over the entries
  int entries = 0;
  void add(double err, double tol) {
    const double r = err / tol;
    if (!(r <= 1.0)) ok = false;  // NaN fails too
    worst = std::max(worst, std::isnan(r) ? INFINITY : r);
    ++entries;
  }
  void merge(const CheckResult& o) {
    ok = ok && o.ok;
    worst = std::max(worst, o.worst);
    entries += o.entries;
  }
};

// Host references for sampled (m, n) of x(M, K) · W'(N, K)ᵀ, W' = W read through `probe`.
std::vector<EntryRef> reference_entries(CudaBackend& b, const Param& w, const Probe& probe,
                                        const float* x, int64_t M, uint64_t salt) {
  const int64_t N = w.w.rows, K = w.w.cols;
  const DType dt = w.w.dtype;
  const std::vector<int64_t> ms = sample_indices(M, 1, salt), ns = sample_indices(N, 5, salt + 99);
  std::vector<std::vector<float>> xr;
  for (int64_t m : ms) {
    std::vector<float> row = download_row(b, x, DTYPE_F32, m, K);
    for (float& v : row) v = round_to(dt, v);
    xr.push_back(row);
  }
  std::vector<EntryRef> refs;
  std::vector<float> wp(static_cast<size_t>(K));
  for (int64_t n : ns) {
    const std::vector<float> wr = download_row(b, w.w.data, dt, n, K);
    for (int64_t k = 0; k < K; ++k) {
      const int64_t idx = n * K + k;
      const float z = noise_z(w.info.noise, probe.seed, w.info.tensor_id, idx);
      const bool keep = mask_keep(w.info.mask, wr[k], w.info.threshold, w.info.keep_prob,
                                  w.info.mask_seed, w.info.tensor_id, idx);
      wp[k] = round_to(dt, perturbed_value(wr[k], z, probe.scale, keep));
    }
    for (size_t i = 0; i < ms.size(); ++i) {
      EntryRef e;
      e.m = ms[i];
      e.n = n;
      double s0 = 0, sd = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double xv = xr[i][k], w0 = wr[k], w1 = wp[k];
        e.ref0 += xv * w0;
        e.refd += xv * (w1 - w0);
        s0 += std::fabs(xv * w0);
        sd += std::fabs(xv) * (std::fabs(w0) + std::fabs(w1));
      }
      e.tol0 = 2.0 * static_cast<double>(K) * kU32 * s0 + 1e-30;
      e.told = 8.0 * std::sqrt(static_cast<double>(K)) * kU32 * sd + 1e-30;
      refs.push_back(e);
    }
  }
  return refs;
}

// |y - ref0| <= tol0 on the sampled entries of y(M, N).
CheckResult check_plain(CudaBackend& b, const float* y, int64_t N,
                        const std::vector<EntryRef>& refs) {
  CheckResult r;
  int64_t cached = -1;
  std::vector<float> row;
  for (const EntryRef& e : refs) {
    if (e.m != cached) row = download_row(b, y, DTYPE_F32, cached = e.m, N);
    r.add(std::fabs(row[e.n] - e.ref0), e.tol0);
  }
  return r;
}

// |(yp - y0) - refd| <= told on the sampled entries.
CheckResult check_delta(CudaBackend& b, const float* yp, const float* y0, int64_t N,
                        const std::vector<EntryRef>& refs) {
  CheckResult r;
  int64_t cached = -1;
  std::vector<float> rp, r0;
  for (const EntryRef& e : refs) {
    if (e.m != cached) {
      cached = e.m;
      rp = download_row(b, yp, DTYPE_F32, e.m, N);
      r0 = download_row(b, y0, DTYPE_F32, e.m, N);
    }
    r.add(std::fabs((static_cast<double>(rp[e.n]) - r0[e.n]) - e.refd), e.told);
  }
  return r;
}

// Runs CudaBackend::update once on `copy` (a fresh copy of w) and compares sampled rows with
// the host rule bit for bit. Returns the number of mismatching elements.
int64_t check_update(CudaBackend& b, const Param& w, Param& copy, uint64_t seed, uint64_t salt) {
  const int64_t N = w.w.rows, K = w.w.cols;
  const DType dt = w.w.dtype;
  const size_t bytes = static_cast<size_t>(w.w.numel() * dtype_size(dt));
  CUDA_CHECK(cudaMemcpyAsync(copy.w.data, w.w.data, bytes, cudaMemcpyDeviceToDevice, b.stream()));
  b.update(copy, kUpdateCoef, 0.0f, seed);
  int64_t bad = 0;
  for (int64_t n : sample_indices(N, 5, salt)) {
    const std::vector<float> before = download_row(b, w.w.data, dt, n, K);
    const std::vector<float> after = download_row(b, copy.w.data, dt, n, K);
    for (int64_t k = 0; k < K; ++k) {
      const int64_t idx = n * K + k;
      const float v = before[k];
      const bool keep = mask_keep(w.info.mask, v, w.info.threshold, w.info.keep_prob,
                                  w.info.mask_seed, w.info.tensor_id, idx);
      float expect = v;
      if (keep) {
        const float z = noise_z(w.info.noise, seed, w.info.tensor_id, idx);
        expect = fp_fma(-0.0f, v, updated_value(v, z, kUpdateCoef, true));
      }
      expect = round_to(dt, expect);
      if (fp_bits(expect) != fp_bits(after[k])) ++bad;
    }
  }
  return bad;
}

// --- the benchmark

// The noise-only floors, one per generator; kNoiseFloors[0] is the default of new runs.
constexpr NoiseKind kNoiseFloors[] = {NOISE_GAUSSIAN, NOISE_GAUSSIAN_V1, NOISE_RADEMACHER};
constexpr int kNumNoiseFloors = 3;
const char* const kNoiseFloorNames[] = {"gaussian", "gaussian-v1", "rademacher"};

const char* noise_label(NoiseKind k) {
  for (int i = 0; i < kNumNoiseFloors; ++i)
    if (kNoiseFloors[i] == k) return kNoiseFloorNames[i];
  return "?";
}

struct ShapeStats {
  double threshold = 0;
  double keep_fraction = 0;  // fraction of sampled |w| <= threshold (≈ mask_quantile)
  Timing quantile, wread, update_smezo, update_mezo;
  Timing noise[kNumNoiseFloors];  // noise-only floor of each kNoiseFloors kind
  std::string floors_check = "skipped";  // PASS / FAIL / skipped (N·K > 2^24)
  std::string update_check = "PASS";
};

struct Row {
  LinearShape shape;
  int64_t m = 0;
  ShapeStats s;
  NoiseKind noise = NOISE_GAUSSIAN;  // W's z
  Timing gemm, linear, smezo, mezo, fused;  // single probes (fused: NAN when not run)
  Timing pair_wprime, pair_fused;           // the S-MeZO pair, 2·m rows
  CheckResult check;
};

struct Bench {
  CudaBackend& backend;
  const LinearBenchOptions& opt;
  RegionTimer& timer;
  int sm_count = 1;
  std::string device, date;
  FILE* json = nullptr;
  std::vector<Row> rows;
  bool all_ok = true;
};

double tflops(int64_t M, int64_t N, int64_t K, const Timing& t) {
  return 2.0 * M * N * K / (t.median_ms * 1e-3) / 1e12;
}

const char* pass_fail(bool ok) { return ok ? "PASS" : "FAIL"; }

ShapeStats bench_shape_floors(Bench& B, Param& w, DeviceBuffer& copy_buf, uint64_t step_seed) {
  CudaBackend& b = B.backend;
  cudaStream_t stream = b.stream();
  const int64_t N = w.w.rows, K = w.w.cols, n = N * K;
  const int64_t bytes = n * dtype_size(w.w.dtype);
  ShapeStats s;

  // abs_quantile: the S-MeZO threshold, once per shape (timed: warm-up + median of 3, wall).
  float h = 0.0f;
  s.quantile = B.timer.time_wall([&] { h = b.abs_quantile(w, B.opt.mask_quantile); }, 3);
  s.threshold = h;
  w.info.threshold = h;

  // Noise-only floors, one per generator: the production launch shape of perturb_weight_kernel.
  const int64_t n_groups = ceil_div(n, 8);
  const unsigned noise_grid = grid_blocks(n_groups, kBlock);
  DeviceBuffer noise_sum(kNumNoiseFloors * noise_grid * sizeof(float2), "noise checksums");
  for (int k = 0; k < kNumNoiseFloors; ++k) {
    float2* sums = noise_sum.as<float2>() + static_cast<size_t>(k) * noise_grid;
    s.noise[k] = B.timer.time([&] {
      noise_floor_kernel<<<noise_grid, kBlock, 0, stream>>>(n, kNoiseFloors[k], step_seed,
                                                            w.info.tensor_id, sums);
      CUDA_CHECK_LAUNCH();
    });
  }

  // Weight-read floor.
  const int64_t n_vec = bytes / 16;
  const int n_tail = static_cast<int>((bytes - 16 * n_vec) / 2);
  const unsigned read_grid = static_cast<unsigned>(
      std::max<int64_t>(1, std::min<int64_t>(ceil_div(n_vec, 4 * kBlock), 8 * B.sm_count)));
  DeviceBuffer read_sum(read_grid * sizeof(uint32_t), "weight-read checksums");
  const uint16_t* tail =
      reinterpret_cast<const uint16_t*>(static_cast<char*>(w.w.data) + 16 * n_vec);
  auto wread = [&] {
    weight_read_kernel<<<read_grid, kBlock, 0, stream>>>(static_cast<const uint4*>(w.w.data), n_vec,
                                                         tail, n_tail, read_sum.as<uint32_t>());
    CUDA_CHECK_LAUNCH();
  };
  s.wread = B.timer.time(wread);

  if (n <= kFloorCheckMax) {  // the last timed runs left their checksums
    std::vector<float2> zs(static_cast<size_t>(kNumNoiseFloors) * noise_grid);
    std::vector<uint32_t> ws(read_grid);
    std::vector<uint32_t> raw(static_cast<size_t>(ceil_div(bytes, 4)), 0u);
    CUDA_CHECK(cudaMemcpyAsync(zs.data(), noise_sum.get(), zs.size() * sizeof(float2),
                               cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaMemcpyAsync(ws.data(), read_sum.get(), ws.size() * sizeof(uint32_t),
                               cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaMemcpyAsync(raw.data(), w.w.data, static_cast<size_t>(bytes),
                               cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    bool ok = true;
    for (int k = 0; k < kNumNoiseFloors; ++k) {
      double g1 = 0, g2 = 0, h1 = 0, h2 = 0, habs = 0;
      for (unsigned b = 0; b < noise_grid; ++b) {
        g1 += zs[static_cast<size_t>(k) * noise_grid + b].x;
        g2 += zs[static_cast<size_t>(k) * noise_grid + b].y;
      }
#pragma omp parallel for reduction(+ : h1, h2, habs) schedule(static)
      for (int64_t g = 0; g < n_groups; ++g) {
        float z[8];
        noise_z8(kNoiseFloors[k], step_seed, w.info.tensor_id, g, z);
        for (int l = 0; l < 8; ++l) {
          if (8 * g + l < n) {
            h1 += z[l];
            h2 += static_cast<double>(z[l]) * z[l];
            habs += std::fabs(z[l]);
          }
        }
      }
      const bool k_ok = std::fabs(g2 - h2) <= 1e-4 * h2 && std::fabs(g1 - h1) <= 1e-4 * habs;
      if (!k_ok)
        std::printf("  FAIL floors: noise %s Σz %.6g vs host %.6g, Σz² %.6g vs %.6g\n",
                    kNoiseFloorNames[k], g1, h1, g2, h2);
      ok = ok && k_ok;
    }
    uint32_t gw = 0, hw = 0;
    for (uint32_t v : ws) gw += v;
    const uint16_t* halves = reinterpret_cast<const uint16_t*>(raw.data());
    for (int64_t i = 0; i < 4 * n_vec; ++i) hw += raw[i];
    for (int i = 0; i < n_tail; ++i) hw += halves[8 * n_vec + i];
    if (gw != hw)
      std::printf("  FAIL floors: weight-read checksum %08x vs host %08x\n", gw, hw);
    ok = ok && gw == hw;
    s.floors_check = pass_fail(ok);
    if (!ok) B.all_ok = false;
  }

  // Update: validated and timed on a copy of W (W is never written).
  Param copy = w;
  copy.w.data = copy_buf.get();
  Param copy_dense = copy;
  copy_dense.info.mask = MASK_DENSE;
  Param w_dense = w;
  w_dense.info.mask = MASK_DENSE;
  const int64_t bad = check_update(b, w, copy, step_seed, 77) +
                      check_update(b, w_dense, copy_dense, step_seed, 78);
  if (bad != 0) {
    s.update_check = "FAIL";
    B.all_ok = false;
    std::printf("  FAIL update: %lld sampled elements differ from the host rule\n", (long long)bad);
  }
  s.update_smezo = B.timer.time([&] { b.update(copy, kUpdateCoef, 0.0f, step_seed); });
  s.update_mezo = B.timer.time([&] { b.update(copy_dense, kUpdateCoef, 0.0f, step_seed); });

  // The mask's kept fraction on the sampled rows (sanity: about mask_quantile).
  int64_t kept = 0, seen = 0;
  for (int64_t r : sample_indices(N, 5, 5)) {
    for (float v : download_row(b, w.w.data, w.w.dtype, r, K)) {
      kept += std::fabs(v) <= h;
      ++seen;
    }
  }
  s.keep_fraction = static_cast<double>(kept) / std::max<int64_t>(1, seen);

  const double gb = bytes / 1e9;
  std::printf("  abs_quantile(|W|, %.2f)    %9.4f ms wall (median of 3)  threshold %.6g, "
              "keeps %.1f%% of sampled rows\n",
              B.opt.mask_quantile, s.quantile.median_ms, s.threshold, 100 * s.keep_fraction);
  for (int k = 0; k < kNumNoiseFloors; ++k)
    std::printf("  noise-only %-14s %9.4f ms  %7.1f G normals/s        check %s\n",
                kNoiseFloorNames[k], s.noise[k].median_ms, n / (s.noise[k].median_ms * 1e-3) / 1e9,
                s.floors_check.c_str());
  std::printf("  weight-read floor         %9.4f ms  %7.0f GB/s               check %s\n",
              s.wread.median_ms, gb / (s.wread.median_ms * 1e-3), s.floors_check.c_str());
  std::printf("  update S-MeZO (copy of W) %9.4f ms  %7.0f GB/s (r+w W)       check %s "
              "(bit-exact)\n",
              s.update_smezo.median_ms, 2 * gb / (s.update_smezo.median_ms * 1e-3),
              s.update_check.c_str());
  std::printf("  update MeZO   (copy of W) %9.4f ms  %7.0f GB/s (r+w W)\n",
              s.update_mezo.median_ms, 2 * gb / (s.update_mezo.median_ms * 1e-3));
  std::fflush(stdout);
  return s;
}

void write_json(Bench& B, const Row& r) {
  if (B.json == nullptr) return;
  std::string device;
  for (char c : B.device)
    if (c != '"' && c != '\\') device += c;
  auto num = [](double v) {
    return std::isfinite(v) ? format_string("%.6g", v) : std::string("null");
  };
  const int64_t M = r.m, N = r.shape.n, K = r.shape.k;
  const double wbytes = static_cast<double>(N) * K * dtype_size(B.opt.dtype);
  std::string line = format_string(
      "{\"bench\":\"linear\",\"device\":\"%s\",\"date\":\"%s\",\"dtype\":\"%s\",\"N\":%lld,"
      "\"K\":%lld,\"M\":%lld,\"reps\":%d,\"eps\":%g,\"mask_quantile\":%g,",
      device.c_str(), B.date.c_str(), dtype_name(B.opt.dtype), (long long)N, (long long)K,
      (long long)M, B.opt.reps, B.opt.eps, B.opt.mask_quantile);
  line += "\"threshold\":" + num(r.s.threshold) + ",\"keep_fraction\":" + num(r.s.keep_fraction);
  line += ",\"quantile_ms\":" + num(r.s.quantile.median_ms);
  line += ",\"gemm_ms\":" + num(r.gemm.median_ms) +
          ",\"gemm_tflops\":" + num(tflops(M, N, K, r.gemm));
  line += ",\"linear_ms\":" + num(r.linear.median_ms) +
          ",\"linear_min_ms\":" + num(r.linear.min_ms);
  line += ",\"linear_tflops\":" + num(tflops(M, N, K, r.linear));
  line += ",\"smezo_ms\":" + num(r.smezo.median_ms) + ",\"smezo_min_ms\":" + num(r.smezo.min_ms);
  line += ",\"mezo_ms\":" + num(r.mezo.median_ms) + ",\"mezo_min_ms\":" + num(r.mezo.min_ms);
  line += ",\"fused_ms\":" + num(r.fused.median_ms);
  line += ",\"noise\":\"" + std::string(noise_label(r.noise)) + "\",\"rows_per_probe\":" + std::to_string(M);
  line += ",\"pair_wprime_ms\":" + num(r.pair_wprime.median_ms) +
          ",\"pair_fused_ms\":" + num(r.pair_fused.median_ms);
  line += ",\"noise_ms\":" + num(r.s.noise[0].median_ms) +
          ",\"noise_gaussian_v1_ms\":" + num(r.s.noise[1].median_ms) +
          ",\"noise_rademacher_ms\":" + num(r.s.noise[2].median_ms);
  line += ",\"wread_ms\":" + num(r.s.wread.median_ms) +
          ",\"wread_gbps\":" + num(wbytes / (r.s.wread.median_ms * 1e-3) / 1e9);
  line += ",\"update_smezo_ms\":" + num(r.s.update_smezo.median_ms) +
          ",\"update_mezo_ms\":" + num(r.s.update_mezo.median_ms);
  line += format_string(",\"check\":\"%s\",\"check_worst\":", pass_fail(r.check.ok)) +
          num(r.check.worst) + ",\"floors_check\":\"" + r.s.floors_check +
          "\",\"update_check\":\"" + r.s.update_check + "\"}\n";
  std::fputs(line.c_str(), B.json);
  std::fflush(B.json);
}

// The S-MeZO probe pair (2·M rows) on both paths, each half validated against its probe's
// reference (x is duplicated, so y0 is each half's unperturbed output); returns the timings
// in row.pair_wprime / row.pair_fused and merges the checks into row.check.
void bench_pair(Bench& B, const Param& ws, const Tensor& x, const Tensor& y0, Row& row,
                const std::vector<EntryRef> refs[2], uint64_t step_seed) {
  CudaBackend& b = B.backend;
  cudaStream_t stream = b.stream();
  const int64_t M = x.rows, K = x.cols, N = ws.w.rows;
  DeviceBuffer x2b(static_cast<size_t>(2 * M * K * 4), "x (pair)");
  DeviceBuffer y2b(static_cast<size_t>(2 * M * N * 4), "y (pair)");
  const Tensor x2 = view(x2b.get(), DTYPE_F32, 2 * M, K);
  const Tensor y2 = view(y2b.get(), DTYPE_F32, 2 * M, N);
  for (int h = 0; h < 2; ++h)
    CUDA_CHECK(cudaMemcpyAsync(x2.f32() + h * M * K, x.data, static_cast<size_t>(M * K * 4),
                               cudaMemcpyDeviceToDevice, stream));
  const Probe pair{B.opt.eps, step_seed, true};
  auto call = [&](LinearPathMode mode) {
    b.set_linear_mode(mode);
    b.linear(y2, x2, ws, nullptr, pair);
    b.set_linear_mode(LINEAR_MODE_WPRIME);
  };
  std::vector<LinearPathMode> modes = {LINEAR_MODE_WPRIME};
  if (B.opt.fused) modes.push_back(LINEAR_MODE_FUSED);
  for (LinearPathMode mode : modes) {
    CUDA_CHECK(cudaMemsetAsync(y2.data, 0xff, static_cast<size_t>(2 * M * N) * sizeof(float), stream));
    call(mode);
    for (int h = 0; h < 2; ++h) {
      const CheckResult c = check_delta(b, y2.f32() + h * M * N, y0.f32(), N, refs[h]);
      if (!c.ok)
        std::printf("           FAIL pair (%s, %s half): y' - y != x·(W%s - W)ᵀ\n", linear_mode_name(mode),
                    h == 0 ? "+" : "-", h == 0 ? "+" : "-");
      row.check.merge(c);
    }
    Timing& t = mode == LINEAR_MODE_FUSED ? row.pair_fused : row.pair_wprime;
    t = B.timer.time([&] { call(mode); });
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));  // before the buffers are freed
}

// cublasGemmEx alone, x already rounded (xr), with the operand layout of cuda/linear.cu ("GEMM
// layout"): y(M, N) = xr(M, K) · Wᵀ.
void gemm_only(CudaBackend& b, const Param& ws, const void* xr, const Tensor& y) {
  const int64_t N = ws.w.rows, K = ws.w.cols, M = y.rows;
  const cudaDataType ab = ws.w.dtype == DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasGemmEx(b.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
                            static_cast<int>(K), &alpha, ws.w.data, ab, static_cast<int>(K), xr, ab,
                            static_cast<int>(K), &beta, y.data, CUDA_R_32F, static_cast<int>(N), CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
}

// The check line of one M (and what failed), merging the paths' checks into row.check.
void report_checks(Row& row, const CheckResult& c_lin, const CheckResult& c_gemm, const CheckResult& c_s,
                   const CheckResult& c_d, const CheckResult& c_f) {
  for (const CheckResult& c : {c_lin, c_gemm, c_s, c_d, c_f}) row.check.merge(c);
  std::printf("  %s M=%-6lld check %s (worst err/tol: linear %.3g, gemm %.3g, s-mezo %.3g, mezo %.3g, fused %.3g)\n",
              noise_label(row.noise), (long long)row.m, pass_fail(row.check.ok), c_lin.worst, c_gemm.worst,
              c_s.worst, c_d.worst, c_f.worst);
  if (!c_lin.ok || !c_gemm.ok) std::printf("           FAIL unperturbed: y != x·Wᵀ beyond 2·K·2^-24·Σ|x·w|\n");
  if (!c_s.ok || !c_d.ok || !c_f.ok)
    std::printf("           FAIL perturbed: y' - y != x·(W' - W)ᵀ (W' = W + eps·m⊙z rounded)\n");
}

void print_row_timings(const Row& row) {
  const double lin = row.linear.median_ms;
  std::printf("           gemm %.4f ms %.1f TF/s | linear %.4f ms | s-mezo %.4f ms (%.2fx) | mezo %.4f ms (%.2fx) | "
              "fused %.4f ms (%.2fx) | pair: w' %.4f ms, fused %.4f ms (%.2fx)\n",
              row.gemm.median_ms, tflops(row.m, row.shape.n, row.shape.k, row.gemm), lin, row.smezo.median_ms,
              row.smezo.median_ms / lin, row.mezo.median_ms, row.mezo.median_ms / lin, row.fused.median_ms,
              row.fused.median_ms / lin, row.pair_wprime.median_ms, row.pair_fused.median_ms,
              row.pair_fused.median_ms / row.pair_wprime.median_ms);
  std::fflush(stdout);
}

// One M (rows per probe) of one shape and noise kind: validates every path, then times it.
void bench_m(Bench& B, const Param& ws, const Param& wd, const ShapeStats& s, int64_t M,
             uint64_t x_seed, uint64_t step_seed) {
  CudaBackend& b = B.backend;
  cudaStream_t stream = b.stream();
  const DType dt = ws.w.dtype;
  const int64_t N = ws.w.rows, K = ws.w.cols;
  const Probe plain{0.0f, 0};
  const Probe probe{B.opt.eps, step_seed};
  DeviceBuffer xb(static_cast<size_t>(M * K * 4), "x (fp32)");
  DeviceBuffer xrb(static_cast<size_t>(M * K * dtype_size(dt)), "x (storage dtype)");
  DeviceBuffer y0b(static_cast<size_t>(M * N * 4), "y (unperturbed)");
  DeviceBuffer y1b(static_cast<size_t>(M * N * 4), "y");
  const Tensor x = view(xb.get(), DTYPE_F32, M, K);
  const Tensor y0 = view(y0b.get(), DTYPE_F32, M, N);
  const Tensor y1 = view(y1b.get(), DTYPE_F32, M, N);
  bench_fill(DTYPE_F32, x.data, M * K, x_seed + static_cast<uint64_t>(M), 1.0f, stream);
  bench_round(dt, xrb.get(), x.f32(), M * K, stream);
  auto gemm = [&] { gemm_only(b, ws, xrb.get(), y1); };
  auto linear = [&] { b.linear(y1, x, ws, nullptr, plain); };
  auto smezo = [&] { b.linear(y1, x, ws, nullptr, probe); };
  auto mezo = [&] { b.linear(y1, x, wd, nullptr, probe); };
  auto fused = [&] {
    b.set_linear_mode(LINEAR_MODE_FUSED);
    b.linear(y1, x, ws, nullptr, probe);
    b.set_linear_mode(LINEAR_MODE_WPRIME);
  };

  // Validate every path once (this also grows the backend's scratch before any timing).
  const uint64_t salt = static_cast<uint64_t>(M) * 131 + static_cast<uint64_t>(N);
  const std::vector<EntryRef> ref_s = reference_entries(b, ws, probe, x.f32(), M, salt);
  const std::vector<EntryRef> ref_d = reference_entries(b, wd, probe, x.f32(), M, salt);
  Row row;
  row.shape = {N, K};
  row.m = M;
  row.noise = ws.info.noise;
  row.s = s;
  // Each output poisoned (all-ones bytes: NaN) before the path that must write it, so an
  // entry left unwritten fails its check (and initcheck sees bytes set: nvjet GEMMs' rows).
  auto poison = [&](const Tensor& y) {
    CUDA_CHECK(cudaMemsetAsync(y.data, 0xff, static_cast<size_t>(M * N) * sizeof(float), stream));
  };
  poison(y0);
  b.linear(y0, x, ws, nullptr, plain);
  const CheckResult c_lin = check_plain(b, y0.f32(), N, ref_s);
  poison(y1);
  gemm();
  const CheckResult c_gemm = check_plain(b, y1.f32(), N, ref_s);
  poison(y1);
  smezo();
  const CheckResult c_s = check_delta(b, y1.f32(), y0.f32(), N, ref_s);
  poison(y1);
  mezo();
  const CheckResult c_d = check_delta(b, y1.f32(), y0.f32(), N, ref_d);
  CheckResult c_f;
  if (B.opt.fused) {
    poison(y1);
    fused();
    c_f = check_delta(b, y1.f32(), y0.f32(), N, ref_s);
  }
  report_checks(row, c_lin, c_gemm, c_s, c_d, c_f);

  row.gemm = B.timer.time(gemm);
  row.linear = B.timer.time(linear);
  row.smezo = B.timer.time(smezo);
  row.mezo = B.timer.time(mezo);
  if (B.opt.fused) row.fused = B.timer.time(fused);
  const std::vector<EntryRef> refs[2] = {ref_s, reference_entries(b, ws, half_probe(Probe{B.opt.eps, step_seed, true}, -1),
                                                                  x.f32(), M, salt)};
  bench_pair(B, ws, x, y0, row, refs, step_seed);
  if (!row.check.ok) B.all_ok = false;

  print_row_timings(row);
  write_json(B, row);
  B.rows.push_back(row);
  CUDA_CHECK(cudaStreamSynchronize(stream));  // before the buffers are freed
}

void bench_rows(Bench& B, const Param& ws, const Param& wd, const ShapeStats& s, uint64_t x_seed,
                uint64_t step_seed) {
  for (int64_t M : B.opt.ms) bench_m(B, ws, wd, s, M, x_seed, step_seed);
}

void print_table(const Bench& B) {
  std::printf(
      "\nsummary (ms = median of %d reps, L2 flushed; x lin = / linear; noise = gaussian (spec v2),"
      " nz-v1 = gaussian-v1; fl1 = max(wread, noise), fl2 = max(linear, noise); z = W's noise)\n",
      B.opt.reps);
  std::printf("%6s %6s %6s %-10s | %8s %8s %6s | %8s %6s | %8s %6s | %8s %6s %8s | %8s %6s | %8s | "
              "%6s %6s | %5s | %s\n",
              "N", "K", "M", "z", "gemm", "linear", "TF/s", "s-mezo", "x lin", "mezo", "x lin", "noise", "x lin",
              "nz-v1", "wread", "GB/s", "update", "s/fl1", "s/fl2", "check", "fused");
  for (const Row& r : B.rows) {
    const int64_t N = r.shape.n, K = r.shape.k;
    const double lin = r.linear.median_ms, nz = r.s.noise[0].median_ms, wr = r.s.wread.median_ms;
    const double gbps = static_cast<double>(N) * K * dtype_size(B.opt.dtype) / (wr * 1e-3) / 1e9;
    const double fl1 = std::max(wr, nz), fl2 = std::max(lin, nz);
    const std::string fused = B.opt.fused ? format_string("%.4f (%.2fx)", r.fused.median_ms, r.fused.median_ms / lin)
                                          : std::string("n/a");
    std::printf("%6lld %6lld %6lld %-10s | %8.4f %8.4f %6.1f | %8.4f %6.2f | %8.4f %6.2f | %8.4f "
                "%6.2f %8.4f | %8.4f %6.0f | %8.4f | %6.2f %6.2f | %5s | %s\n",
                (long long)N, (long long)K, (long long)r.m, noise_label(r.noise), r.gemm.median_ms, lin,
                tflops(r.m, N, K, r.linear), r.smezo.median_ms, r.smezo.median_ms / lin, r.mezo.median_ms,
                r.mezo.median_ms / lin, nz, nz / lin, r.s.noise[1].median_ms, wr, gbps, r.s.update_smezo.median_ms,
                r.smezo.median_ms / fl1, r.smezo.median_ms / fl2,
                pass_fail(r.check.ok && r.s.floors_check != "FAIL" && r.s.update_check == "PASS"), fused.c_str());
  }
}

// The fused kernel against W' + cuBLAS for the S-MeZO probe pair (the call a step makes) and
// the single probe: < 1 means fused is faster. cuda_plan.h's fused_crossover_table takes the
// (dtype, pair, rows per probe, weight size) where it is.
void print_crossover(const Bench& B) {
  if (!B.opt.fused) return;
  std::printf("\ncrossover: fused / W' (S-MeZO mask, %s W; ms = median of %d reps; < 1: fused faster)\n",
              dtype_name(B.opt.dtype), B.opt.reps);
  std::printf("%6s %6s %-10s %8s | %9s %9s %7s | %9s %9s %7s\n", "N", "K", "z", "rows/pr", "pair w'",
              "pair fus", "ratio", "single w'", "sing fus", "ratio");
  for (const Row& r : B.rows)
    std::printf("%6lld %6lld %-10s %8lld | %9.4f %9.4f %7.2f | %9.4f %9.4f %7.2f\n", (long long)r.shape.n,
                (long long)r.shape.k, noise_label(r.noise), (long long)r.m, r.pair_wprime.median_ms,
                r.pair_fused.median_ms, r.pair_fused.median_ms / r.pair_wprime.median_ms, r.smezo.median_ms,
                r.fused.median_ms, r.fused.median_ms / r.smezo.median_ms);
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

}  // namespace

int run_linear_bench(const LinearBenchOptions& opt) {
  dispatch_storage(opt.dtype, [](auto) {});
  SMEZO_REQUIRE(!opt.shapes.empty() && !opt.ms.empty(), "bench: no shapes or no M given");
  for (const LinearShape& s : opt.shapes)
    SMEZO_REQUIRE(s.n > 0 && s.k > 0 && s.n <= 0x7fffffff && s.k <= 0x7fffffff,
                  "bench: bad shape %lldx%lld (N and K must be in [1, 2^31))", (long long)s.n,
                  (long long)s.k);
  for (int64_t m : opt.ms)
    SMEZO_REQUIRE(m > 0 && m <= 0x7fffffff, "bench: bad M %lld", (long long)m);
  SMEZO_REQUIRE(opt.reps >= 1 && opt.warmup >= 0, "bench: --reps must be >= 1 and --warmup >= 0");
  SMEZO_REQUIRE(opt.mask_quantile >= 0.0 && opt.mask_quantile <= 1.0,
                "bench: --quantile %g outside [0, 1]", opt.mask_quantile);
  SMEZO_REQUIRE(opt.eps != 0.0f, "bench: eps must be nonzero (the perturbed path is timed)");
  SMEZO_REQUIRE(!opt.noises.empty(), "bench: no noise kind given");
  SMEZO_REQUIRE(opt.flush_bytes >= 0, "bench: negative flush size");

  CudaBackend backend;
  backend.set_linear_mode(LINEAR_MODE_WPRIME);  // s-mezo / mezo: the W' path; fused switches per call
  cudaStream_t stream = backend.stream();
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  int runtime = 0, driver = 0, cublas = 0;
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  CUBLAS_CHECK(cublasGetVersion(backend.cublas(), &cublas));

  const size_t flush_bytes = static_cast<size_t>(std::max<int64_t>(opt.flush_bytes, 16));
  DeviceBuffer flush(flush_bytes, "L2 flush buffer");
  RegionTimer timer(stream, flush.get(), flush_bytes, opt.reps, opt.warmup);
  Bench B{backend, opt, timer};
  B.sm_count = prop.multiProcessorCount;
  B.device = prop.name;
  B.date = utc_now();

  std::printf("smezo bench --kernel linear | %s\n", B.date.c_str());
  std::printf("device %d: %s (sm_%d%d, %d SMs, L2 %.1f MiB, %.1f GiB) | CUDA runtime %d.%d, "
              "driver %d.%d, cuBLAS %d.%d.%d\n",
              dev, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
              prop.l2CacheSize / 1048576.0, prop.totalGlobalMem / 1073741824.0, runtime / 1000,
              runtime % 1000 / 10, driver / 1000, driver % 1000 / 10, cublas / 10000,
              cublas / 100 % 100, cublas % 100);
  std::printf("W %s, x fp32, y fp32 | eps %g | S-MeZO mask |w| <= the %.2f quantile of |W| | "
              "median of %d reps after %d warm-up, L2 flushed (%.0f MiB memset) before each rep\n",
              dtype_name(opt.dtype), opt.eps, opt.mask_quantile, opt.reps, opt.warmup,
              opt.flush_bytes / 1048576.0);
  std::printf("gemm = cublasGemmEx alone (x pre-rounded) | linear = CudaBackend::linear, scale 0 "
              "(x rounding + GEMM) | s-mezo / mezo = CudaBackend::linear perturbed (materialise W'"
              " + x rounding + GEMM) | fused = s-mezo on cuda/fused_linear.cu | pair = the S-MeZO probe pair"
              " (2M rows) on each path | floors: noise-only (regenerate every z), weight-read (read W"
              " once)\n");

  B.json = bench::bench_open_json(opt.json_path);
  return bench::bench_finish(B.json, B.all_ok, "every path", [&] {
    for (size_t si = 0; si < opt.shapes.size(); ++si) {
      const int64_t N = opt.shapes[si].n, K = opt.shapes[si].k;
      const size_t bytes = static_cast<size_t>(N * K * dtype_size(opt.dtype));
      std::printf("\n== W %lld x %lld %s (%.1f MiB) ==\n", (long long)N, (long long)K,
                  dtype_name(opt.dtype), bytes / 1048576.0);
      DeviceBuffer wbuf(bytes, "W");
      DeviceBuffer copy(bytes, "the copy of W for the update");
      const uint64_t shape_seed = bench_mix64(opt.seed + 1000003 * (si + 1));
      bench_fill(opt.dtype, wbuf.get(), N * K, shape_seed, 0.02f * std::sqrt(3.0f), stream);
      Param ws;
      ws.w = view(wbuf.get(), opt.dtype, N, K);
      ws.info.name = format_string("bench.W[%lldx%lld]", (long long)N, (long long)K);
      ws.info.tensor_id = kBenchTensorId;
      ws.info.is_linear = true;
      ws.info.trainable = true;
      ws.info.mask = MASK_MAGNITUDE;
      const uint64_t step_seed = bench_mix64(shape_seed ^ 0x5eedull);
      const ShapeStats s = bench_shape_floors(B, ws, copy, step_seed);  // sets the threshold
      for (NoiseKind noise : opt.noises) {
        ws.info.noise = noise;
        Param wd = ws;
        wd.info.mask = MASK_DENSE;
        bench_rows(B, ws, wd, s, shape_seed ^ 0xa11ce, step_seed);
      }
      CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    print_table(B);
    print_crossover(B);
  });
}

}  // namespace smezo
