// Causal grouped-query attention on the GPU, flash style: CudaBackend::attention. Query i of a sequence
// sits at pos = kv_len - q_len + i and sees keys [max(0, pos - sliding_window + 1), pos] (window 0:
// from 0) at rows kv_row + t; query head h reads kv head h / group; softmax and sums in fp32, as
// src/cpu/attention.cpp. Tested in tests/test_attention.cu.
// Version 1 (plain fp32 FMAs, no tensor cores): the host cuts each sequence into work items of BQ
// queries, heaviest first, for ONE grid of n_items * n_heads CTAs. A CTA has n_warps (1..8) warps of
// kRowsPerWarp = 4 query rows; it stages Q once, then walks its visible keys in shared-memory tiles of
// kBlockK = 32: lane j scores key j (K rows padded by 4 floats against bank conflicts), an online
// softmax rescales by exp(m_old - m_new), and each lane accumulates P·V into its float4 output
// chunk(s). head_dim 1..256 is zero-padded to a multiple of 4 in shared memory; global accesses are
// scalar (no alignment needed). Known costs: fp32 pipes only, no split-kv for generation, no cp.async.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <climits>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/check.h"
#include "cuda_backend.h"
#include "cuda_check.h"
#include "device_utils.cuh"

namespace smezo {

namespace {

constexpr int kRowsPerWarp = 4;               // query rows per warp
constexpr int kMaxWarps = 8;                  // BQ <= 32
constexpr int kBlockK = 32;                   // keys per shared-memory tile: one per lane
constexpr int kMaxHeadDim = 256;
constexpr int kMaxKvLen = INT_MAX / 2;        // positions are int in the kernel
constexpr int kDefaultSmemLimit = 48 * 1024;  // above this the kernel must opt in

// A sequence as the kernel reads it (AttentionSeq's fields, device-side plain struct).
struct AttnSeqDev {
  int64_t q_row, q_len, kv_row, kv_len;
};

// One block of BQ queries of one sequence.
struct AttnWork {
  int32_t seq;      // index into the sequence array
  int32_t q_start;  // first query (relative to the sequence) of the block
};

struct AttnKernelParams {
  float* out;      // (M, >= n_heads*head_dim), row stride out_stride
  const float* q;  // (M, >= n_heads*head_dim), row stride q_stride
  const float* k;  // (rows, >= n_kv_heads*head_dim), row stride k_stride
  const float* v;  // (rows, >= n_kv_heads*head_dim), row stride v_stride
  int64_t out_stride, q_stride, k_stride, v_stride;
  const AttnSeqDev* seqs;  // (n_seqs)
  const AttnWork* work;    // (n_items), heaviest first
  int n_heads;
  int group;     // query heads per kv head
  int head_dim;
  int hdp;       // head_dim rounded up to a multiple of 4 (shared-memory row length)
  int window;    // sliding window, 0 = none
  float scale;   // 1/sqrt(head_dim)
};

// Shared floats of a CTA: Q (BQ, hdp), K (kBlockK, hdp + 4), V (kBlockK, hdp), P (BQ, kBlockK).
int64_t attention_smem_floats(int n_warps, int hdp) {
  const int64_t bq = int64_t(n_warps) * kRowsPerWarp;
  return bq * hdp + int64_t(kBlockK) * (hdp + 4) + int64_t(kBlockK) * hdp + bq * kBlockK;
}

// First key visible from absolute position pos.
__host__ __device__ inline int attention_first_key(int pos, int window) {
  return (window > 0 && pos - window + 1 > 0) ? pos - window + 1 : 0;
}

__device__ inline float warp_max(float x) {
  for (int off = 16; off > 0; off >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
  return x;
}

__device__ inline float dot4(float4 a, float4 b, float acc) {
  acc = fmaf(a.x, b.x, acc);
  acc = fmaf(a.y, b.y, acc);
  acc = fmaf(a.z, b.z, acc);
  return fmaf(a.w, b.w, acc);
}

__device__ inline void axpy4(float a, float4 x, float4& y) {
  y.x = fmaf(a, x.x, y.x);
  y.y = fmaf(a, x.y, y.y);
  y.z = fmaf(a, x.z, y.z);
  y.w = fmaf(a, x.w, y.w);
}

// --- kernels

// Grid n_items * n_heads, block n_warps * 32; kChunks: float4 output chunks per lane, 1 or 2 (> 128).
template <int kChunks>
__global__ void __launch_bounds__(kMaxWarps * 32, kChunks == 1 ? 3 : 1)
    attention_kernel(const AttnKernelParams p) {
  extern __shared__ float4 attn_smem4[];
  float* smem = reinterpret_cast<float*>(attn_smem4);
  const int n_warps = blockDim.x / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int bq = n_warps * kRowsPerWarp;
  const int hd = p.head_dim, hdp = p.hdp, ksd = hdp + 4;
  const int n_chunks = hdp / 4;  // float4 chunks per row
  float* q_s = smem;                  // (bq, hdp)
  float* k_s = q_s + bq * hdp;        // (kBlockK, ksd)
  float* v_s = k_s + kBlockK * ksd;   // (kBlockK, hdp)
  float* p_s = v_s + kBlockK * hdp;   // (bq, kBlockK)

  const int h = static_cast<int>(blockIdx.x % static_cast<unsigned>(p.n_heads));
  const AttnWork w = p.work[blockIdx.x / static_cast<unsigned>(p.n_heads)];
  const AttnSeqDev s = p.seqs[w.seq];
  const int64_t kvh = h / p.group;
  // Positions fit in int (the host checks kv_len); row offsets are int64.
  const int q0 = w.q_start;                                // first query of the block
  const int n_rows = min(bq, static_cast<int>(s.q_len) - q0);  // valid rows
  const int pos0 = static_cast<int>(s.kv_len - s.q_len) + q0;  // position of row 0
  const int lo = attention_first_key(pos0, p.window);      // keys [lo, hi] for the CTA
  const int hi = pos0 + n_rows - 1;

  // Stage Q (rows past the sequence and dims past head_dim are zero).
  for (int r = warp; r < bq; r += n_warps) {
    const float* src =
        r < n_rows ? p.q + (s.q_row + q0 + r) * p.q_stride + int64_t(h) * hd : nullptr;
    for (int d = lane; d < hdp; d += 32) q_s[r * hdp + d] = (src && d < hd) ? src[d] : 0.0f;
  }

  // This warp's rows: positions and first visible keys (invalid rows see nothing).
  const int r0 = warp * kRowsPerWarp;
  int row_pos[kRowsPerWarp], row_first[kRowsPerWarp];
  int w_lo = INT_MAX, w_hi = -1;  // union of the rows' key ranges
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    if (r0 + r < n_rows) {
      row_pos[r] = pos0 + r0 + r;
      row_first[r] = attention_first_key(row_pos[r], p.window);
      w_lo = min(w_lo, row_first[r]);
      w_hi = max(w_hi, row_pos[r]);
    } else {
      row_pos[r] = -1;
      row_first[r] = 0;
    }
  }

  float m[kRowsPerWarp], l[kRowsPerWarp];  // running max; this lane's share of the sum
  float4 acc[kRowsPerWarp][kChunks];    // chunks lane (and lane + 32) of each row
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) acc[r][c] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }

  for (int t0 = lo; t0 <= hi; t0 += kBlockK) {
    __syncthreads();  // Q staged / the previous tile consumed by every warp
    for (int j = warp; j < kBlockK; j += n_warps) {
      const int64_t row = s.kv_row + t0 + j;
      const bool key_ok = t0 + j <= hi;
      const float* ksrc = key_ok ? p.k + row * p.k_stride + kvh * hd : nullptr;
      const float* vsrc = key_ok ? p.v + row * p.v_stride + kvh * hd : nullptr;
      for (int d = lane; d < hdp; d += 32) {
        const bool ok = key_ok && d < hd;
        k_s[j * ksd + d] = ok ? ksrc[d] : 0.0f;
        v_s[j * hdp + d] = ok ? vsrc[d] : 0.0f;
      }
    }
    __syncthreads();
    if (t0 > w_hi || t0 + kBlockK - 1 < w_lo) continue;  // warp-uniform: nothing visible

    // Scores of key t0 + lane against the warp's rows.
    float sc[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) sc[r] = 0.0f;
    const float4* krow = reinterpret_cast<const float4*>(k_s + lane * ksd);
    const float4* qrows = reinterpret_cast<const float4*>(q_s + r0 * hdp);
    for (int c = 0; c < n_chunks; ++c) {
      const float4 kk = krow[c];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) sc[r] = dot4(qrows[r * n_chunks + c], kk, sc[r]);
    }

    // Online softmax update, one row at a time.
    const int t = t0 + lane;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const float score = (t >= row_first[r] && t <= row_pos[r]) ? sc[r] * p.scale : -INFINITY;
      const float m_new = fmaxf(m[r], warp_max(score));
      const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // all masked so far: p = 0
      const float alpha = expf(m[r] - m_use);                 // 0 when m[r] = -inf
      const float pr = expf(score - m_use);
      m[r] = m_new;
      l[r] = fmaf(l[r], alpha, pr);
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        acc[r][c].x *= alpha;
        acc[r][c].y *= alpha;
        acc[r][c].z *= alpha;
        acc[r][c].w *= alpha;
      }
      p_s[(r0 + r) * kBlockK + lane] = pr;
    }
    __syncwarp();

    // acc += P · V over the tile's keys that exist (the rest have p = 0 and V = 0).
    const int n_keys = min(kBlockK, hi - t0 + 1);
    const int j_end = (n_keys + 3) / 4 * 4;
    for (int j = 0; j < j_end; j += 4) {
      float4 pp[kRowsPerWarp];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
        pp[r] = *reinterpret_cast<const float4*>(p_s + (r0 + r) * kBlockK + j);
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int chunk = lane + 32 * c;
        if (chunk >= n_chunks) continue;
        const float4 v0 = reinterpret_cast<const float4*>(v_s + (j + 0) * hdp)[chunk];
        const float4 v1 = reinterpret_cast<const float4*>(v_s + (j + 1) * hdp)[chunk];
        const float4 v2 = reinterpret_cast<const float4*>(v_s + (j + 2) * hdp)[chunk];
        const float4 v3 = reinterpret_cast<const float4*>(v_s + (j + 3) * hdp)[chunk];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) {
          axpy4(pp[r].x, v0, acc[r][c]);
          axpy4(pp[r].y, v1, acc[r][c]);
          axpy4(pp[r].z, v2, acc[r][c]);
          axpy4(pp[r].w, v3, acc[r][c]);
        }
      }
    }
    __syncwarp();  // p_s is rewritten by this warp on the next tile
  }

  // out = acc / l for the valid rows (every valid row sees at least its own key: l > 0).
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const float sum = warp_reduce_sum(l[r]);
    if (r0 + r >= n_rows) continue;
    const float inv = 1.0f / sum;
    float* dst = p.out + (s.q_row + q0 + r0 + r) * p.out_stride + int64_t(h) * hd;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int d = 4 * (lane + 32 * c);
      if (d >= hd) continue;
      const float4 a = acc[r][c];
      dst[d] = a.x * inv;
      if (d + 1 < hd) dst[d + 1] = a.y * inv;
      if (d + 2 < hd) dst[d + 2] = a.z * inv;
      if (d + 3 < hd) dst[d + 3] = a.w * inv;
    }
  }
}

// --- launcher

void launch_attention(const AttnKernelParams& kp, int64_t n_items, int n_warps,
                      cudaStream_t stream) {
  const int64_t n_blocks = n_items * kp.n_heads;
  SMEZO_REQUIRE(n_blocks <= 0x7fffffff,
                "attention: %lld query blocks x %d heads exceed the grid limit; split the batch",
                (long long)n_items, kp.n_heads);
  const size_t smem = static_cast<size_t>(attention_smem_floats(n_warps, kp.hdp)) * sizeof(float);
  auto kernel = kp.hdp <= 128 ? attention_kernel<1> : attention_kernel<2>;
  if (smem > static_cast<size_t>(kDefaultSmemLimit))
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)));
  kernel<<<static_cast<unsigned>(n_blocks), n_warps * 32, smem, stream>>>(kp);
  CUDA_CHECK_LAUNCH();
}

// CudaBackend::attention's preconditions: the kernel's limits, every sequence inside q/out and k/v.
void check_attention_params(const AttentionParams& p) {
  const int64_t hd = p.head_dim;
  SMEZO_REQUIRE(p.n_heads > 0 && p.n_kv_heads > 0 && p.n_heads % p.n_kv_heads == 0,
                "attention: n_heads %lld must be a positive multiple of n_kv_heads %lld",
                (long long)p.n_heads, (long long)p.n_kv_heads);
  SMEZO_REQUIRE(hd >= 1 && hd <= kMaxHeadDim,
                "attention: head_dim %lld is not supported by the CUDA kernel (1..%d)",
                (long long)hd, kMaxHeadDim);
  SMEZO_REQUIRE(p.n_heads <= 0x7fffffff, "attention: too many heads (%lld)", (long long)p.n_heads);
  SMEZO_REQUIRE(p.sliding_window >= 0, "attention: negative sliding window %lld",
                (long long)p.sliding_window);
  const Tensor* tensors[] = {&p.out, &p.q, &p.k, &p.v};
  const char* names[] = {"out", "q", "k", "v"};
  for (int i = 0; i < 4; ++i)
    SMEZO_REQUIRE(tensors[i]->dtype == DTYPE_F32 && tensors[i]->data,
                  "attention: tensor %s must be an allocated fp32 tensor (dtype %s)", names[i],
                  dtype_name(tensors[i]->dtype));
  const int64_t q_width = p.n_heads * hd, kv_width = p.n_kv_heads * hd;
  SMEZO_REQUIRE(p.q.cols >= q_width && p.out.cols >= q_width,
                "attention: q has %lld columns and out %lld, need n_heads*head_dim = %lld",
                (long long)p.q.cols, (long long)p.out.cols, (long long)q_width);
  SMEZO_REQUIRE(p.k.cols >= kv_width && p.v.cols >= kv_width,
                "attention: k has %lld columns and v %lld, need n_kv_heads*head_dim = %lld",
                (long long)p.k.cols, (long long)p.v.cols, (long long)kv_width);
  SMEZO_REQUIRE(p.seqs.size() < 0x7fffffffu, "attention: too many sequences");
  for (size_t i = 0; i < p.seqs.size(); ++i) {
    const AttentionSeq& s = p.seqs[i];
    SMEZO_REQUIRE(s.q_len >= 0 && s.q_len <= s.kv_len && s.kv_len <= kMaxKvLen,
                  "attention: sequence %zu has q_len %lld and kv_len %lld (need 0 <= q_len <= "
                  "kv_len <= %d)",
                  i, (long long)s.q_len, (long long)s.kv_len, kMaxKvLen);
    SMEZO_REQUIRE(s.q_row >= 0 && s.q_row + s.q_len <= std::min(p.q.rows, p.out.rows),
                  "attention: sequence %zu query rows [%lld, %lld) exceed q/out (%lld, %lld rows)",
                  i, (long long)s.q_row, (long long)(s.q_row + s.q_len), (long long)p.q.rows,
                  (long long)p.out.rows);
    SMEZO_REQUIRE(s.kv_row >= 0 && s.kv_row + s.kv_len <= std::min(p.k.rows, p.v.rows),
                  "attention: sequence %zu key rows [%lld, %lld) exceed k/v (%lld, %lld rows)",
                  i, (long long)s.kv_row, (long long)(s.kv_row + s.kv_len), (long long)p.k.rows,
                  (long long)p.v.rows);
  }
}

}  // namespace

void CudaBackend::attention(const AttentionParams& p) {
  check_attention_params(p);
  const int64_t hd = p.head_dim;

  // A window longer than any sequence is no window (keeps it an int for the kernel).
  const int window = p.sliding_window > kMaxKvLen ? 0 : static_cast<int>(p.sliding_window);

  // CTA shape: enough warps for the longest query block, at most kMaxWarps.
  int64_t max_q = 0;
  for (const AttentionSeq& s : p.seqs) max_q = std::max(max_q, s.q_len);
  const int64_t warps_needed = ceil_div(max_q, kRowsPerWarp);
  const int n_warps =
      static_cast<int>(std::min<int64_t>(kMaxWarps, std::max<int64_t>(1, warps_needed)));
  const int64_t bq = int64_t(n_warps) * kRowsPerWarp;

  // Sequences and work items (query blocks), heaviest first.
  std::vector<AttnSeqDev> seqs(p.seqs.size());
  std::vector<AttnWork> work;
  std::vector<int64_t> cost;
  for (size_t i = 0; i < p.seqs.size(); ++i) {
    const AttentionSeq& s = p.seqs[i];
    seqs[i] = AttnSeqDev{s.q_row, s.q_len, s.kv_row, s.kv_len};
    for (int64_t q0 = 0; q0 < s.q_len; q0 += bq) {
      const int pos_lo = static_cast<int>(s.kv_len - s.q_len + q0);
      const int pos_hi = pos_lo + static_cast<int>(std::min(bq, s.q_len - q0)) - 1;
      work.push_back(AttnWork{static_cast<int32_t>(i), static_cast<int32_t>(q0)});
      cost.push_back(pos_hi - attention_first_key(pos_lo, window) + 1);
    }
  }
  if (work.empty()) return;
  std::vector<size_t> order(work.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&cost](size_t a, size_t b) { return cost[a] > cost[b]; });

  // One device copy: [sequences | work items] (AttnSeqDev is 32 bytes, so items stay aligned).
  const size_t seq_bytes = seqs.size() * sizeof(AttnSeqDev);
  std::vector<unsigned char> packed(seq_bytes + work.size() * sizeof(AttnWork));
  std::memcpy(packed.data(), seqs.data(), seq_bytes);
  AttnWork* packed_work = reinterpret_cast<AttnWork*>(packed.data() + seq_bytes);
  for (size_t i = 0; i < order.size(); ++i) packed_work[i] = work[order[i]];
  unsigned char* dev =
      static_cast<unsigned char*>(device_copy(SLOT_SEQS, packed.data(), packed.size()));

  AttnKernelParams kp;
  kp.out = p.out.f32();
  kp.q = p.q.f32();
  kp.k = p.k.f32();
  kp.v = p.v.f32();
  kp.out_stride = p.out.cols;
  kp.q_stride = p.q.cols;
  kp.k_stride = p.k.cols;
  kp.v_stride = p.v.cols;
  kp.seqs = reinterpret_cast<const AttnSeqDev*>(dev);
  kp.work = reinterpret_cast<const AttnWork*>(dev + seq_bytes);
  kp.n_heads = static_cast<int>(p.n_heads);
  kp.group = static_cast<int>(p.n_heads / p.n_kv_heads);
  kp.head_dim = static_cast<int>(hd);
  kp.hdp = static_cast<int>((hd + 3) / 4 * 4);
  kp.window = window;
  kp.scale = 1.0f / std::sqrt(static_cast<float>(hd));  // as the CPU reference computes it
  launch_attention(kp, static_cast<int64_t>(work.size()), n_warps, stream());
}

}  // namespace smezo
