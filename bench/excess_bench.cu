// `smezo bench --kernel excess` (see excess_bench.h): the perturb pass beside a copy of equal bytes,
// one layer's W' blocks in the product's serial order, on two streams, with cuBLAS's SM target,
// and the product's own CudaBackend::linear; the serial pass's bytes per second kernel by kernel.
// The only kernels here are bench kernels: the perturb twin (cuda/linear.cu's body over the same
// device helpers; for sign noise the product's launch_sign_perturb itself), a copy, a fill and a
// max-difference reduction.
#include "bench/excess_bench.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_finish.h"
#include "bench/device_fill.h"
#include "bench/device_timing.h"
#include "bench/host_values.h"  // round_to
#include "bench/model_bench.h"  // model_bench_shape
#include "bench/profiler_region.h"
#include "common/check.h"
#include "common/half.h"
#include "common/noise_spec.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_plan.h"
#include "cuda/device_utils.cuh"
#include "cuda/sign_noise.h"
#include "train/option_names.h"  // noise_name

namespace smezo {

namespace {

using bench::DeviceBuffer;
using bench::RegionTimer;
using bench::Timing;

constexpr int kBlock = 256;
constexpr float kEps = 1e-3f;        // the probe's scale
constexpr float kAmplitude = 0.02f;  // weights uniform on (-a, a): |w|'s 0.75 quantile is 0.75 a
constexpr double kOrderTol = 1e-3;   // another order's output against the serial one, over max |y|

// --- kernels

// The twin of cuda/linear.cu's perturb_weight_pair_kernel: the same body, the same launch shape.
template <typename T>
__global__ void twin_perturb_pair_kernel(T* plus, T* minus, const T* src, int64_t n, int64_t group_base,
                                         ProbeArgs p) {
  SMEZO_GRID_STRIDE(g, ceil_div(n, 8)) {
    float w[8], wp[8], wm[8];
    load4(src, 8 * g, n, w);
    load4(src, 8 * g + 4, n, w + 4);
    perturb_group8(p, group_base + g, w, wp, wm);
    store4(plus, 8 * g, n, wp);
    store4(plus, 8 * g + 4, n, wp + 4);
    store4(minus, 8 * g, n, wm);
    store4(minus, 8 * g + 4, n, wm + 4);
  }
}

// The twin of perturb_weight_kernel (one probe).
template <typename T>
__global__ void twin_perturb_kernel(T* dst, const T* src, int64_t n, int64_t group_base, ProbeArgs p) {
  SMEZO_GRID_STRIDE(g, ceil_div(n, 8)) {
    float w[8], wp[8];
    load4(src, 8 * g, n, w);
    load4(src, 8 * g + 4, n, w + 4);
    perturb_group8(p, group_base + g, w, wp);
    store4(dst, 8 * g, n, wp);
    store4(dst, 8 * g + 4, n, wp + 4);
  }
}

// The copy of equal bytes: 16-byte words read once, written to a and (unless null) b; one word per
// grid-stride step, as the perturb kernels take one group of 8 16-bit elements.
__global__ void copy_words_kernel(uint4* a, uint4* b, const uint4* src, int64_t n_words) {
  SMEZO_GRID_STRIDE(i, n_words) {
    const uint4 v = src[i];
    a[i] = v;
    if (b != nullptr) b[i] = v;
  }
}

// out[0] = max |a - b|, out[1] = max |b| over n floats, as bits (non-negative floats order as
// unsigned integers, and a NaN's bits lie above every number's, so a NaN wins).
__global__ void max_diff_kernel(const float* a, const float* b, int64_t n, unsigned* out) {
  unsigned d = 0, m = 0;
  SMEZO_GRID_STRIDE(i, n) {
    d = max(d, __float_as_uint(fabsf(a[i] - b[i])));
    m = max(m, __float_as_uint(fabsf(b[i])));
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    d = max(d, __shfl_xor_sync(0xffffffffu, d, offset));
    m = max(m, __shfl_xor_sync(0xffffffffu, m, offset));
  }
  if ((threadIdx.x & 31) == 0) {
    atomicMax(out, d);
    atomicMax(out + 1, m);
  }
}

// --- host helpers

// The twin over elements [first, first + n) of src (first a multiple of 8): W+ into plus, W- into
// minus (null: the single probe into plus). Sign noise runs cuda/sign_noise.cu's launch_sign_perturb,
// the product's kernel for it (128 signs per Philox call), not a twin of the generic noise_z8 body.
void twin_perturb(DType dtype, void* plus, void* minus, const void* src, int64_t first, int64_t n,
                  const ProbeArgs& p, cudaStream_t s) {
  if (p.noise == NOISE_SIGN)  // the product's own kernel, as form_wprime_block sends sign there
    return launch_sign_perturb(dtype, plus, minus, src, first, n, p, s);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* from = static_cast<const T*>(src) + first;
    if (minus != nullptr)
      twin_perturb_pair_kernel<T><<<grid_blocks(ceil_div(n, 8), kBlock), kBlock, 0, s>>>(
          static_cast<T*>(plus), static_cast<T*>(minus), from, n, first / 8, p);
    else
      twin_perturb_kernel<T><<<grid_blocks(ceil_div(n, 8), kBlock), kBlock, 0, s>>>(static_cast<T*>(plus), from, n,
                                                                                    first / 8, p);
    CUDA_CHECK_LAUNCH();
  });
}

std::vector<uint16_t> download16(const void* base, int64_t first, int64_t n) {
  std::vector<uint16_t> h(static_cast<size_t>(n));
  CUDA_CHECK(cudaMemcpy(h.data(), static_cast<const uint16_t*>(base) + first, n * 2, cudaMemcpyDeviceToHost));
  return h;
}

float from16(DType dtype, uint16_t v) { return dtype == DTYPE_BF16 ? bf16_to_float(v) : f16_to_float(v); }

// Sampled groups of 8 of an n-element tensor (n % 8 == 0): the first 16, the last 16 and `extra` hashed
// ones. (The layer part compares the twin with the product's own kernel over every element.)
std::vector<int64_t> sample_groups(int64_t n, int extra, uint64_t salt) {
  std::vector<int64_t> g;
  for (int64_t i = 0; i < 16; ++i) {
    g.push_back(std::min(i, n / 8 - 1));
    g.push_back(std::max<int64_t>(0, n / 8 - 1 - i));
  }
  for (int i = 0; i < extra; ++i) g.push_back(static_cast<int64_t>(bench_mix64(salt + i) % (n / 8)));
  std::sort(g.begin(), g.end());
  g.erase(std::unique(g.begin(), g.end()), g.end());
  return g;
}

// Mismatching elements of W+ (and W-, unless null) against the host rule on sampled groups.
int64_t check_twin(DType dt, const void* w, const void* plus, const void* minus, int64_t n, const ProbeArgs& p) {
  int64_t bad = 0;
  for (int64_t g : sample_groups(n, 61, p.seed)) {
    const std::vector<uint16_t> w8 = download16(w, 8 * g, 8), p8 = download16(plus, 8 * g, 8);
    const std::vector<uint16_t> m8 = minus ? download16(minus, 8 * g, 8) : std::vector<uint16_t>(8);
    float z[8];
    noise_z8(p.noise, p.seed, p.mask.tensor_id, g, z);
    for (int l = 0; l < 8; ++l) {
      const float v = from16(dt, w8[l]);
      const bool keep = mask_keep(p.mask.kind, v, p.mask.threshold, p.mask.keep_prob, p.mask.mask_seed,
                                  p.mask.tensor_id, 8 * g + l);
      bad += fp_bits(round_to(dt, perturbed_value(v, z[l], p.scale, keep))) != fp_bits(from16(dt, p8[l]));
      if (minus) bad += fp_bits(round_to(dt, perturbed_value(v, z[l], -p.scale, keep))) != fp_bits(from16(dt, m8[l]));
    }
  }
  return bad;
}

// The S-MeZO probe of a benchmark tensor: magnitude mask at |w|'s 0.75 quantile, kEps, the step seed.
ProbeArgs bench_probe(NoiseKind noise, uint32_t tensor_id, uint64_t seed, float scale) {
  ProbeArgs p;
  p.scale = scale;
  p.seed = seed;
  p.noise = noise;
  p.mask.kind = MASK_MAGNITUDE;
  p.mask.threshold = 0.75f * kAmplitude;
  p.mask.tensor_id = tensor_id;
  return p;
}

struct Bench {
  const ExcessBenchOptions& opt;
  ModelConfig config;
  int sm_count = 1;
  FILE* json = nullptr;
  bool all_ok = true;
  int regions = 0;  // profiler regions opened so far (dram_range)
  int64_t model_linear_elements = 0;
};

// One JSON object per measurement, written as it is built: {"bench":"excess","shape":...,<fields>}.
class JsonLine {
 public:
  JsonLine(const Bench& B, const char* part) {
    text_ = format_string("{\"bench\":\"excess\",\"shape\":\"%s\",\"dtype\":\"%s\",\"part\":\"%s\"", B.opt.shape.c_str(),
                          dtype_name(B.opt.dtype), part);
  }
  JsonLine& str(const char* key, const std::string& v) {
    text_ += format_string(",\"%s\":\"%s\"", key, v.c_str());
    return *this;
  }
  JsonLine& num(const char* key, double v) {
    text_ += format_string(",\"%s\":", key) + (std::isfinite(v) ? format_string("%.6g", v) : std::string("null"));
    return *this;
  }
  JsonLine& integer(const char* key, int64_t v) {
    text_ += format_string(",\"%s\":%lld", key, (long long)v);
    return *this;
  }
  void write(const Bench& B) {
    if (B.json == nullptr) return;
    std::fputs((text_ + "}\n").c_str(), B.json);
    std::fflush(B.json);
  }

 private:
  std::string text_;
};

// --- part "perturb": the W' pass beside a copy of equal bytes

// Times the twin (pair, single) for each noise kind and the copies, on n elements; validates first.
void perturb_part(Bench& B, RegionTimer& timer, cudaStream_t s) {
  const ExcessBenchOptions& o = B.opt;
  const int64_t n = std::max<int64_t>(8, std::min(o.flat_elements, B.model_linear_elements) / 8 * 8);
  const size_t bytes = static_cast<size_t>(n * dtype_size(o.dtype));
  DeviceBuffer w(bytes, "the flat weights"), plus(bytes, "W+"), minus(bytes, "W-");
  bench_fill(o.dtype, w.get(), n, o.seed, kAmplitude, s);
  const double scale_to_model = static_cast<double>(B.model_linear_elements) / n;
  std::printf("\n== perturb pass over %lld elements (%.1f MiB of %s; the model has %lld linear weights: times x %.3g) ==\n",
              (long long)n, bytes / 1048576.0, dtype_name(o.dtype), (long long)B.model_linear_elements, scale_to_model);
  auto report = [&](const char* kind, const std::string& noise, const Timing& t, double moved, bool ok) {
    const double gbps = moved / (t.median_ms * 1e-3) / 1e9;
    std::printf("  %-12s %-11s %9.4f ms  %8.1f GB/s  %7.4f ns/element  model %8.3f ms  %s\n", kind, noise.c_str(),
                t.median_ms, gbps, t.median_ms * 1e6 / n, t.median_ms * scale_to_model, ok ? "PASS" : "FAIL");
    JsonLine(B, "perturb").str("kind", kind).str("noise", noise).integer("elements", n).num("ms", t.median_ms)
        .num("ms_min", t.min_ms).num("bytes", moved).num("gb_per_s", gbps).num("ns_per_element", t.median_ms * 1e6 / n)
        .integer("model_elements", B.model_linear_elements).num("model_ms", t.median_ms * scale_to_model)
        .str("check", ok ? "PASS" : "FAIL").write(B);
    if (!ok) B.all_ok = false;
  };
  for (NoiseKind noise : o.noises) {
    const ProbeArgs p = bench_probe(noise, 7, bench_mix64(o.seed ^ 0x5eed), kEps);
    CUDA_CHECK(cudaMemsetAsync(plus.get(), 0xff, bytes, s));  // poisoned: an unwritten element fails
    CUDA_CHECK(cudaMemsetAsync(minus.get(), 0xff, bytes, s));
    twin_perturb(o.dtype, plus.get(), minus.get(), w.get(), 0, n, p, s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    const bool pair_ok = check_twin(o.dtype, w.get(), plus.get(), minus.get(), n, p) == 0;
    const Timing pair = timer.time([&] { twin_perturb(o.dtype, plus.get(), minus.get(), w.get(), 0, n, p, s); });
    CUDA_CHECK(cudaMemsetAsync(plus.get(), 0xff, bytes, s));
    twin_perturb(o.dtype, plus.get(), nullptr, w.get(), 0, n, p, s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    const bool single_ok = check_twin(o.dtype, w.get(), plus.get(), nullptr, n, p) == 0;
    const Timing single = timer.time([&] { twin_perturb(o.dtype, plus.get(), nullptr, w.get(), 0, n, p, s); });
    report("pair", noise_name(noise), pair, 3.0 * bytes, pair_ok);
    report("single", noise_name(noise), single, 2.0 * bytes, single_ok);
  }
  const int64_t words = static_cast<int64_t>(bytes / 16);
  auto copy = [&](bool both) {
    copy_words_kernel<<<grid_blocks(words, kBlock), kBlock, 0, s>>>(
        plus.as<uint4>(), both ? minus.as<uint4>() : nullptr, w.as<uint4>(), words);
    CUDA_CHECK_LAUNCH();
  };
  CUDA_CHECK(cudaMemsetAsync(minus.get(), 0xff, bytes, s));
  copy(true);
  CUDA_CHECK(cudaStreamSynchronize(s));
  bool copy_ok = true;
  for (int64_t g : sample_groups(n, 61, 99))
    copy_ok = copy_ok && download16(w.get(), 8 * g, 8) == download16(minus.get(), 8 * g, 8);
  report("copy-pair", "-", timer.time([&] { copy(true); }), 3.0 * bytes, copy_ok);
  report("copy-single", "-", timer.time([&] { copy(false); }), 2.0 * bytes, copy_ok);
  if (o.dram_range) {
    profiler_region_start();
    copy(true);
    CUDA_CHECK(cudaStreamSynchronize(s));
    profiler_region_stop();
    std::printf("  profiler region %d: copy-pair over %lld elements (%.0f bytes)\n", ++B.regions, (long long)n,
                3.0 * bytes);
    JsonLine(B, "region").integer("index", B.regions).str("what", "copy-pair").num("model_bytes", 3.0 * bytes).write(B);
  }
}

// --- part "layer": one layer's W' blocks in four orders

struct LayerLinear {
  const char* name;
  int64_t n, k;
};

std::vector<LayerLinear> layer_linears(const ModelConfig& c) {
  const int64_t q = c.n_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim;
  std::vector<LayerLinear> out = {{"q", q, c.dim}, {"k", kv, c.dim}, {"v", kv, c.dim}, {"o", c.dim, q}};
  if (c.mlp_kind != MLP_RELU) out.push_back({"gate", c.hidden_dim, c.dim});
  out.push_back({"up", c.hidden_dim, c.dim});
  out.push_back({"down", c.dim, c.hidden_dim});
  return out;
}

int64_t model_linear_elements(const ModelConfig& c) {
  int64_t per_layer = 0;
  for (const LayerLinear& l : layer_linears(c)) per_layer += l.n * l.k;
  return c.n_layers * per_layer + c.vocab_size * c.dim;  // the layers and the LM head
}

struct WBlock {
  int l;              // the linear
  int64_t n0, rows;   // its rows [n0, n0 + rows)
};

// One layer's buffers for M rows per probe: weights, x per input width (2M rows, storage dtype, and
// fp32 for the product), an output per linear per order, two scratch buffers of W+ | W-.
struct Layer {
  std::vector<LayerLinear> lin;
  std::vector<std::unique_ptr<DeviceBuffer>> w, x16, x32, y_serial, y_other;
  std::unique_ptr<DeviceBuffer> scratch[2];
  std::vector<WBlock> blocks;
  std::vector<ProbeArgs> probe;  // per linear: the + half's
  int64_t m = 0, w_bytes = 0;    // rows per probe; one copy's block bytes (the largest)
  std::vector<int> x_of;         // per linear: which x (by input width)
  std::vector<int64_t> x_k;
};

Layer make_layer(Bench& B, int64_t m, cudaStream_t s) {
  const ExcessBenchOptions& o = B.opt;
  Layer L;
  L.lin = layer_linears(B.config);
  L.m = m;
  const int64_t sz = dtype_size(o.dtype);
  for (size_t l = 0; l < L.lin.size(); ++l) {
    const LayerLinear& f = L.lin[l];
    L.w.push_back(std::make_unique<DeviceBuffer>(static_cast<size_t>(f.n * f.k * sz), "a layer weight"));
    bench_fill(o.dtype, L.w.back()->get(), f.n * f.k, o.seed + 17 * (l + 1), kAmplitude, s);
    const size_t ybytes = static_cast<size_t>(2 * m * f.n * 4);
    L.y_serial.push_back(std::make_unique<DeviceBuffer>(ybytes, "an output"));
    L.y_other.push_back(std::make_unique<DeviceBuffer>(ybytes, "an output"));
    CUDA_CHECK(cudaMemsetAsync(L.y_other.back()->get(), 0xff, ybytes, s));  // poisoned: unwritten fails
    const auto at = std::find(L.x_k.begin(), L.x_k.end(), f.k);
    L.x_of.push_back(static_cast<int>(at - L.x_k.begin()));
    if (at == L.x_k.end()) {
      L.x_k.push_back(f.k);
      L.x16.push_back(std::make_unique<DeviceBuffer>(static_cast<size_t>(2 * m * f.k * sz), "x"));
      L.x32.push_back(std::make_unique<DeviceBuffer>(static_cast<size_t>(2 * m * f.k * 4), "x (fp32)"));
      bench_fill(DTYPE_F32, L.x32.back()->get(), 2 * m * f.k, o.seed + 1000 + f.k, 1.0f, s);
      bench_round(o.dtype, L.x16.back()->get(), L.x32.back()->as<float>(), 2 * m * f.k, s);
    }
    L.probe.push_back(bench_probe(o.noises.front(), static_cast<uint32_t>(100 + l), bench_mix64(o.seed + 5), kEps));
    const LinearCall call{m, f.n, f.k, true, true, o.dtype};
    const LinearScratch plan = linear_scratch_plan(call, LINEAR_MATERIALISE_PAIR);
    L.w_bytes = std::max(L.w_bytes, plan.w_bytes);
    for (int64_t n0 = 0; n0 < f.n; n0 += plan.block_rows)
      L.blocks.push_back({static_cast<int>(l), n0, std::min(plan.block_rows, f.n - n0)});
  }
  for (auto& buf : L.scratch) buf = std::make_unique<DeviceBuffer>(static_cast<size_t>(2 * L.w_bytes), "scratch");
  return L;
}

// The batch-2 GEMM of a block, as CudaBackend::linear's pair path calls it: batch 0 = W+ rows times
// the first M rows of x, batch 1 = W- rows times the second M; outputs at column n0 of y.
void gemm_block(cublasHandle_t h, const Layer& L, const WBlock& b, const void* wpm, DType dt, float* y) {
  const LayerLinear& f = L.lin[b.l];
  const int64_t K = f.k, N = f.n, Mh = L.m;
  const cudaDataType ab = dt == DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(b.rows), static_cast<int>(Mh), static_cast<int>(K), &alpha, wpm,
      ab, static_cast<int>(K), static_cast<long long>(L.w_bytes / dtype_size(dt)), L.x16[L.x_of[b.l]]->get(), ab,
      static_cast<int>(K), static_cast<long long>(Mh * K), &beta, y + b.n0, CUDA_R_32F, static_cast<int>(N),
      static_cast<long long>(Mh * N), 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// W+ and W- of block b into scratch buffer `buf` on stream s.
void perturb_block(const Layer& L, const WBlock& b, int buf, DType dt, cudaStream_t s) {
  char* base = static_cast<char*>(L.scratch[buf]->get());
  const int64_t K = L.lin[b.l].k;
  twin_perturb(dt, base, base + L.w_bytes, L.w[b.l]->get(), b.n0 * K, b.rows * K, L.probe[b.l], s);
}

// The product's order on one stream. With `marks` (2 * blocks + 1 events), an event before each
// kernel and after the last: the per-kernel times of the "bytes" pass.
void serial_pass(const Layer& L, cublasHandle_t h, DType dt, cudaStream_t s, bool to_serial,
                 const std::vector<cudaEvent_t>* marks = nullptr) {
  for (size_t i = 0; i < L.blocks.size(); ++i) {
    const WBlock& b = L.blocks[i];
    if (marks) CUDA_CHECK(cudaEventRecord((*marks)[2 * i], s));
    perturb_block(L, b, 0, dt, s);
    if (marks) CUDA_CHECK(cudaEventRecord((*marks)[2 * i + 1], s));
    gemm_block(h, L, b, L.scratch[0]->get(), dt, (to_serial ? L.y_serial : L.y_other)[b.l]->as<float>());
  }
  if (marks) CUDA_CHECK(cudaEventRecord(marks->back(), s));
}

// Block i's W+/W- on s1 into buffer i % 2 (after block i - 2's GEMM has read that buffer), its GEMM
// on s0 after them. `events`: 2 * blocks + 1 (perturbed[i], gemm_done[i], the start).
void two_stream_pass(const Layer& L, cublasHandle_t h, DType dt, cudaStream_t s0, cudaStream_t s1,
                     const std::vector<cudaEvent_t>& events) {
  const size_t nb = L.blocks.size();
  CUDA_CHECK(cudaEventRecord(events[2 * nb], s0));
  CUDA_CHECK(cudaStreamWaitEvent(s1, events[2 * nb], 0));
  for (size_t i = 0; i < nb; ++i) {
    const int buf = static_cast<int>(i % 2);
    if (i >= 2) CUDA_CHECK(cudaStreamWaitEvent(s1, events[2 * (i - 2) + 1], 0));
    perturb_block(L, L.blocks[i], buf, dt, s1);
    CUDA_CHECK(cudaEventRecord(events[2 * i], s1));
    CUDA_CHECK(cudaStreamWaitEvent(s0, events[2 * i], 0));
    gemm_block(h, L, L.blocks[i], L.scratch[buf]->get(), dt, L.y_other[L.blocks[i].l]->as<float>());
    CUDA_CHECK(cudaEventRecord(events[2 * i + 1], s0));
  }
}

// CudaBackend::linear on each linear of the layer (the pair probe; x converted from fp32 inside).
void product_pass(const Layer& L, CudaBackend& backend, DType dt) {
  for (size_t l = 0; l < L.lin.size(); ++l) {
    const LayerLinear& f = L.lin[l];
    Param w;
    w.w.data = L.w[l]->get();
    w.w.dtype = dt;
    w.w.rows = f.n;
    w.w.cols = f.k;
    w.info.name = std::string("bench.layer.") + f.name;
    w.info.tensor_id = L.probe[l].mask.tensor_id;
    w.info.is_linear = true;
    w.info.mask = MASK_MAGNITUDE;
    w.info.threshold = L.probe[l].mask.threshold;
    w.info.noise = L.probe[l].noise;
    Tensor x, y;
    x.data = L.x32[L.x_of[l]]->get();
    x.dtype = DTYPE_F32;
    x.rows = 2 * L.m;
    x.cols = f.k;
    y.data = L.y_other[l]->get();
    y.dtype = DTYPE_F32;
    y.rows = 2 * L.m;
    y.cols = f.n;
    backend.linear(y, x, w, nullptr, Probe{L.probe[l].scale, L.probe[l].seed, true});
  }
}

// Whether every output of the last pass (y_other) is within kOrderTol * max |y| of the serial one;
// poisons y_other for the next pass.
bool outputs_match(const Layer& L, cudaStream_t s, double* worst) {
  DeviceBuffer out(2 * sizeof(unsigned), "the max-difference result");
  bool ok = true;
  *worst = 0;
  for (size_t l = 0; l < L.lin.size(); ++l) {
    const int64_t n = 2 * L.m * L.lin[l].n;
    CUDA_CHECK(cudaMemsetAsync(out.get(), 0, 2 * sizeof(unsigned), s));
    max_diff_kernel<<<grid_blocks(n, kBlock), kBlock, 0, s>>>(L.y_other[l]->as<float>(), L.y_serial[l]->as<float>(),
                                                                n, out.as<unsigned>());
    CUDA_CHECK_LAUNCH();
    unsigned bits[2];
    CUDA_CHECK(cudaMemcpyAsync(bits, out.get(), sizeof bits, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    float d, m;
    std::memcpy(&d, &bits[0], 4);
    std::memcpy(&m, &bits[1], 4);
    const double r = d / std::max(1e-30, static_cast<double>(m));
    ok = ok && r <= kOrderTol && std::isfinite(m);  // NaN fails both
    *worst = std::max(*worst, std::isnan(r) ? INFINITY : r);
    CUDA_CHECK(cudaMemsetAsync(L.y_other[l]->get(), 0xff, static_cast<size_t>(n) * 4, s));
  }
  CUDA_CHECK(cudaStreamSynchronize(s));  // the poison lands before another stream writes y_other
  return ok;
}

// The layer's model bytes per kernel kind: perturb reads W, writes W+ and W-; each block's GEMM reads
// W+ and W-, both halves of x, writes both halves' y columns.
void model_bytes(const Layer& L, DType dt, double* perturb, double* gemm) {
  const double sz = dtype_size(dt);
  *perturb = *gemm = 0;
  for (const WBlock& b : L.blocks) {
    const double K = L.lin[b.l].k;
    *perturb += 3.0 * b.rows * K * sz;
    *gemm += 2.0 * b.rows * K * sz + 2.0 * L.m * K * sz + 2.0 * L.m * b.rows * 4.0;
  }
}

// The serial pass with an event between its kernels, `reps` times after an L2 flush: per kind the
// median of the summed kernel times, and the model bytes over it.
void bytes_pass(Bench& B, RegionTimer& timer, const Layer& L, cublasHandle_t h, cudaStream_t s,
                const std::vector<cudaEvent_t>& marks) {
  std::vector<double> pt, gt;
  for (int r = 0; r < B.opt.reps; ++r) {
    timer.flush_l2();
    serial_pass(L, h, B.opt.dtype, s, true, &marks);
    CUDA_CHECK(cudaStreamSynchronize(s));
    double p = 0, g = 0;
    for (size_t i = 0; i < L.blocks.size(); ++i) {
      float a = 0, b = 0;
      CUDA_CHECK(cudaEventElapsedTime(&a, marks[2 * i], marks[2 * i + 1]));
      CUDA_CHECK(cudaEventElapsedTime(&b, marks[2 * i + 1], marks[2 * i + 2]));
      p += a;
      g += b;
    }
    pt.push_back(p);
    gt.push_back(g);
  }
  double pb = 0, gb = 0;
  model_bytes(L, B.opt.dtype, &pb, &gb);
  const Timing tp = bench::summarize(pt), tg = bench::summarize(gt);
  for (int k = 0; k < 2; ++k) {
    const Timing& t = k == 0 ? tp : tg;
    const double bytes = k == 0 ? pb : gb, gbps = bytes / (t.median_ms * 1e-3) / 1e9;
    std::printf("  bytes: %-7s kernels %9.4f ms for %.0f model bytes: %8.1f GB/s (events between kernels)\n",
                k == 0 ? "perturb" : "gemm", t.median_ms, bytes, gbps);
    JsonLine(B, "bytes").integer("m", L.m).str("kind", k == 0 ? "perturb" : "gemm").num("ms", t.median_ms)
        .num("model_bytes", bytes).num("gb_per_s", gbps).write(B);
  }
}

void layer_part_m(Bench& B, RegionTimer& timer, RegionTimer& product_timer, CudaBackend& backend, cublasHandle_t h,
                  cudaStream_t s0, cudaStream_t s1, int64_t m) {
  const DType dt = B.opt.dtype;
  Layer L = make_layer(B, m, s0);
  const int64_t nb = static_cast<int64_t>(L.blocks.size());
  const double block_mib = cuda_weight_chunk_bytes() / 1048576.0;
  std::printf("\n== layer: %zu linears, M = %lld rows per probe (a pair: %lld), W' blocks of %.3g MiB: %lld blocks ==\n",
              L.lin.size(), (long long)m, (long long)(2 * m), block_mib, (long long)nb);
  std::vector<cudaEvent_t> events(static_cast<size_t>(2 * nb + 1));
  for (cudaEvent_t& e : events) CUDA_CHECK(cudaEventCreate(&e));
  auto report = [&](const std::string& order, const Timing& t, bool ok, double worst) {
    std::printf("  %-20s %9.4f ms  (worst |y - serial| / max |y| %.2g)  %s\n", order.c_str(), t.median_ms, worst,
                ok ? "PASS" : "FAIL");
    JsonLine(B, "layer").integer("m", m).str("order", order).num("ms", t.median_ms).num("ms_min", t.min_ms)
        .num("block_mib", block_mib).integer("blocks", nb).num("worst", worst).str("check", ok ? "PASS" : "FAIL")
        .write(B);
    if (!ok) B.all_ok = false;
  };
  try {
    serial_pass(L, h, dt, s0, true);
    report("serial", timer.time([&] { serial_pass(L, h, dt, s0, true); }), true, 0.0);
    double worst = 0;
    two_stream_pass(L, h, dt, s0, s1, events);
    bool ok = outputs_match(L, s0, &worst);
    report("two-streams", timer.time([&] { two_stream_pass(L, h, dt, s0, s1, events); }), ok, worst);
    for (int reserve : B.opt.sm_reserve) {
      const int target = std::max(1, B.sm_count - reserve);
      CUBLAS_CHECK(cublasSetSmCountTarget(h, target));
      two_stream_pass(L, h, dt, s0, s1, events);
      ok = outputs_match(L, s0, &worst);
      report("two-streams-sm" + std::to_string(target),
             timer.time([&] { two_stream_pass(L, h, dt, s0, s1, events); }), ok, worst);
      CUBLAS_CHECK(cublasSetSmCountTarget(h, 0));
    }
    CUDA_CHECK(cudaStreamSynchronize(s0));
    product_pass(L, backend, dt);
    CUDA_CHECK(cudaStreamSynchronize(backend.stream()));
    ok = outputs_match(L, s0, &worst);
    report("product", product_timer.time([&] { product_pass(L, backend, dt); }), ok, worst);
    bytes_pass(B, timer, L, h, s0, events);
    if (B.opt.dram_range) {
      CUDA_CHECK(cudaStreamSynchronize(s0));
      profiler_region_start();
      serial_pass(L, h, dt, s0, true);
      CUDA_CHECK(cudaStreamSynchronize(s0));
      profiler_region_stop();
      double pb, gb;
      model_bytes(L, dt, &pb, &gb);
      std::printf("  profiler region %d: serial layer, M = %lld (model bytes %.0f)\n", ++B.regions, (long long)m, pb + gb);
      JsonLine(B, "region").integer("index", B.regions).str("what", "serial-layer").integer("m", m)
          .num("model_bytes", pb + gb).num("model_perturb_bytes", pb).num("model_gemm_bytes", gb).write(B);
    }
  } catch (...) {
    cudaDeviceSynchronize();  // no throw while unwinding: a CUDA error is the one already in flight
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    throw;
  }
  CUDA_CHECK(cudaDeviceSynchronize());  // before the buffers and events go
  for (cudaEvent_t e : events) cudaEventDestroy(e);
}

void check_options(const ExcessBenchOptions& o) {
  SMEZO_REQUIRE(o.dtype == DTYPE_BF16 || o.dtype == DTYPE_F16,
                "bench --kernel excess: --dtype must be bf16 or f16 (got %s)", dtype_name(o.dtype));
  SMEZO_REQUIRE(!o.ms.empty() && !o.noises.empty() && !o.parts.empty(), "bench --kernel excess: no M, noise or part");
  for (int64_t m : o.ms) SMEZO_REQUIRE(m > 0 && m <= (1 << 20), "bench --kernel excess: bad M %lld", (long long)m);
  for (const std::string& p : o.parts)
    SMEZO_REQUIRE(p == "perturb" || p == "layer", "bench --kernel excess: --parts '%s' (choose perturb, layer)",
                  p.c_str());
  for (NoiseKind k : o.noises)
    SMEZO_REQUIRE(k != NOISE_AUTO, "bench --kernel excess: --noise auto is not a kind of z");
  for (int r : o.sm_reserve) SMEZO_REQUIRE(r >= 0, "bench --kernel excess: --sm-reserve %d < 0", r);
  SMEZO_REQUIRE(o.reps >= 1 && o.warmup >= 0 && o.flat_elements >= 8 && o.flush_bytes >= 0,
                "bench --kernel excess: --reps >= 1, --warmup >= 0, at least 8 flat elements");
}

bool has_part(const ExcessBenchOptions& o, const char* part) {
  return std::find(o.parts.begin(), o.parts.end(), part) != o.parts.end();
}

// What run_excess_bench owns: a stream pair and a cuBLAS handle of its own (beside the backend's).
struct Streams {
  cudaStream_t s0 = nullptr, s1 = nullptr;
  cublasHandle_t h = nullptr;
  Streams() {
    try {
      CUDA_CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
      CUDA_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
      CUBLAS_CHECK(cublasCreate(&h));
      CUBLAS_CHECK(cublasSetStream(h, s0));
    } catch (...) {
      release();
      throw;
    }
  }
  ~Streams() { release(); }
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;
  void release() {
    if (s0 != nullptr) cudaStreamSynchronize(s0);
    if (s1 != nullptr) cudaStreamSynchronize(s1);
    if (h != nullptr) cublasDestroy(h);
    if (s1 != nullptr) cudaStreamDestroy(s1);
    if (s0 != nullptr) cudaStreamDestroy(s0);
    h = nullptr;
    s0 = s1 = nullptr;
  }
};

}  // namespace

int run_excess_bench(const ExcessBenchOptions& opt) {
  check_options(opt);
  Bench B{opt, model_bench_shape(opt.shape)};
  B.model_linear_elements = model_linear_elements(B.config);
  CudaBackend backend;
  backend.set_linear_mode(LINEAR_MODE_WPRIME);  // the product's path the twins copy
  Streams st;
  cudaDeviceProp prop;
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  B.sm_count = prop.multiProcessorCount;
  const size_t flush_bytes = static_cast<size_t>(std::max<int64_t>(opt.flush_bytes, 16));
  DeviceBuffer flush(flush_bytes, "L2 flush buffer");
  RegionTimer timer(st.s0, flush.get(), flush_bytes, opt.reps, opt.warmup);
  RegionTimer product_timer(backend.stream(), flush.get(), flush_bytes, opt.reps, opt.warmup);
  std::printf("smezo bench --kernel excess | shape %s, %s weights | %s (%d SMs) | median of %d reps after %d warm-up, "
              "L2 flushed | W' block %.3g MiB (%s)\n",
              opt.shape.c_str(), dtype_name(opt.dtype), prop.name, B.sm_count, opt.reps, opt.warmup,
              cuda_weight_chunk_bytes() / 1048576.0, kWeightBlockEnv);
  B.json = bench::bench_open_json(opt.json_path);
  return bench::bench_finish(B.json, B.all_ok, "every part", [&] {
    if (has_part(opt, "perturb")) perturb_part(B, timer, st.s0);
    if (has_part(opt, "layer"))
      for (int64_t m : opt.ms) layer_part_m(B, timer, product_timer, backend, st.h, st.s0, st.s1, m);
  });
}

}  // namespace smezo
