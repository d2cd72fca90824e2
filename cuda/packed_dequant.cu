// --weights packed on the GPU: GGUF blocks dequantised straight into a W' block (packed_dequant.h), which
// cuBLAS then multiplies as any W' (cuda/linear.cu); the embedding gathers rows the same way. Reference:
// gguf_dequantize_scaled (src/formats/gguf_dequant.cpp, the layouts at its top): the same fp32 products,
// each rounded alone (__fmul_rn / __fadd_rn: nvcc would fuse d * q + m into one FMA, the CPU does not),
// so the fp32 W' equals the CPU decoder's bit for bit (tests/test_packed_cuda.cpp).
//   dequant_packed_kernel  one thread per 8 consecutive values of a row (a row is whole blocks of 32 or
//                          256, so 8 values never straddle blocks): reads the block's d (and m/dmin),
//                          from the file's f16 or, under --tune scales, the scales Param read under the
//                          probe (noise_z and mask_keep of element e, as every Param), decodes its 8
//                          codes, writes 8 values of W' (one or two 16-byte stores). One kernel for every
//                          block type: the type is uniform over the launch, so its switch never diverges.
// Performance model (predicted, not measured; H200: ~4.0 TB/s reachable, 132 SMs). Per weight the kernel
// reads its stored bits (Q4_0 4.5 bits = 0.56 B, Q4_1 5 = 0.63 B, Q8_0 8.5 = 1.06 B, Q4_K 4.5 = 0.56 B, Q6_K
// 6.56 = 0.82 B) and writes W' (bf16 2 B; f32 4 B), which cuBLAS reads again (a 64 MiB W' block does not
// stay in the 50 MB L2): ~4.6 B a weight in bf16 against 2 B for a bf16 weight read by its GEMM alone.
// Integer work ~8-12 ops a weight (byte load, shift, mask, int->float; K-quants their 6-bit sub-scale,
// shared by 32 values) and 1-3 fp32 multiplies/adds; the scale (and, under --tune scales, its noise) is
// read by each of the block's 4 (K: 32) threads: at most one z per 8 weights. LLaMA-7B in Q4_K_M (6.6e9
// linear weights, 4.15 GB stored), one LoRA forward, bf16 W': 4.15 GB read + 13.2 GB written + 13.2 GB
// re-read = 30.6 GB, 7.6 ms at 4.0 TB/s (predicted) against 3.3 ms for a bf16 base's GEMMs reading their
// 13.2 GB: +4.3 ms a pass; the integer work (~8e10 ops, ~2.4 ms at 3.3e13 int32 ops/s) hides under it.
// Beside the GEMM at B 16, T 256 as a pair (M = 8192 rows: 2 * 8192 * 6.6e9 = 1.1e14 flops, ~150 ms at
// ~700 TFLOP/s bf16) the dequantisation is ~3% of a pass (predicted). Its reads are byte loads of a block
// each thread walks alone (not coalesced across a warp): on a GPU it may fall short of the bandwidth the
// model assumes (docs/gpu-backlog.md: time it beside the bf16 step).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/check.h"
#include "cuda_check.h"
#include "device_utils.cuh"
#include "formats/gguf.h"
#include "formats/gguf_dequant.h"  // gguf_scale_offsets
#include "packed_dequant.h"

namespace smezo {

namespace {

constexpr int kBlock = 256;

// What dequant_packed_kernel reads, by value.
struct PackedRead {
  const uint8_t* blocks = nullptr;  // the tensor's first block
  uint32_t type = 0;                // GGUF block type
  int64_t row_bytes = 0;            // bytes of one packed row
  int64_t cols = 0;                 // values a row
  int block_size = 0, block_bytes = 0;
  int d_at = 0, m_at = -1;          // byte offsets of the f16 d and m/dmin in a block (-1: none)
  const float* scales = nullptr;    // (rows, n_blocks) f32 master scales, or null: the file's f16
  int64_t n_blocks = 0;             // the scales' columns (blocks of the whole tensor)
  bool scales_m = false;            // the scales have a second row (m/dmin)
  ProbeArgs probe;                  // the scales Param's read (scale 0: as stored)
};

__device__ __forceinline__ float f16_at(const uint8_t* p) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(p[0] | (p[1] << 8))));
}

// Element e of the scales Param under the probe: w + scale * m(w) * z(seed, tensor_id, e).
__device__ __forceinline__ float read_scale(const PackedRead& r, int64_t e) {
  const float w = r.scales[e];
  if (r.probe.scale == 0.0f) return w;
  const MaskArgs& m = r.probe.mask;
  const float z = noise_z(r.probe.noise, r.probe.seed, m.tensor_id, e);
  const bool keep = mask_keep(m.kind, w, m.threshold, m.keep_prob, m.mask_seed, m.tensor_id, e);
  return perturbed_value(w, z, r.probe.scale, keep);
}

// Nibble j (0..31) of a 32-value block's qs: low of qs[j] for j < 16, high of qs[j - 16] above.
__device__ __forceinline__ int nibble32(const uint8_t* qs, int j) { return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4; }

// Bit j of a Q5_0/Q5_1 block's little-endian qh, as the code's fifth bit.
__device__ __forceinline__ int q5_high(const uint8_t* qh, int j) { return ((qh[j / 8] >> (j % 8)) & 1) << 4; }

// Value j of a Q4_K/Q5_K super-block b (gguf_dequant.cpp's decode_k4_k5).
__device__ __forceinline__ float k45_value(bool q5, const uint8_t* b, int j, float d, float dmin) {
  const int s = j / 32, l = j % 32;
  const uint8_t* sc = b + 4;
  const int scale = s < 4 ? sc[s] & 63 : (sc[s + 4] & 15) | ((sc[s - 4] >> 6) << 4);
  const int min = s < 4 ? sc[s + 4] & 63 : (sc[s + 4] >> 4) | ((sc[s] >> 6) << 4);
  const uint8_t* qs = b + (q5 ? 48 : 16) + 32 * (s / 2);
  int code = (qs[l] >> (4 * (s % 2))) & 15;
  if (q5) code += 16 * ((b[16 + l] >> s) & 1);
  return __fsub_rn(__fmul_rn(__fmul_rn(d, static_cast<float>(scale)), static_cast<float>(code)),
                   __fmul_rn(dmin, static_cast<float>(min)));
}

// Value j of a Q6_K super-block b (decode_q6_k).
__device__ __forceinline__ float q6k_value(const uint8_t* b, int j, float d) {
  const int h = j / 128, g = (j % 128) / 32, l = j % 32;
  const int low = (b[64 * h + l + 32 * (g & 1)] >> (g < 2 ? 0 : 4)) & 15;
  const int code = low | (((b[128 + 32 * h + l] >> (2 * g)) & 3) << 4);
  const float scale = __fmul_rn(d, static_cast<float>(static_cast<int8_t>(b[192 + 8 * h + 2 * g + l / 16])));
  return __fmul_rn(scale, static_cast<float>(code - 32));
}

// Value j of block b of `type` with scales d and m (m: Q4_1/Q5_1's m, Q4_K/Q5_K's dmin).
__device__ __forceinline__ float block_value(uint32_t type, const uint8_t* b, int j, float d, float m) {
  switch (type) {
    case GGUF_TYPE_Q8_0: return __fmul_rn(d, static_cast<float>(static_cast<int8_t>(b[2 + j])));
    case GGUF_TYPE_Q4_0: return __fmul_rn(d, static_cast<float>(nibble32(b + 2, j) - 8));
    case GGUF_TYPE_Q4_1: return __fadd_rn(__fmul_rn(d, static_cast<float>(nibble32(b + 4, j))), m);
    case GGUF_TYPE_Q5_0: return __fmul_rn(d, static_cast<float>((nibble32(b + 6, j) | q5_high(b + 2, j)) - 16));
    case GGUF_TYPE_Q5_1:
      return __fadd_rn(__fmul_rn(d, static_cast<float>(nibble32(b + 8, j) | q5_high(b + 4, j))), m);
    case GGUF_TYPE_Q4_K: return k45_value(false, b, j, d, m);
    case GGUF_TYPE_Q5_K: return k45_value(true, b, j, d, m);
    case GGUF_TYPE_Q6_K: return q6k_value(b, j, d);
  }
  return 0.0f;  // unreachable: launch_dequant_packed admits the types above only
}

// dst(r, c) = value c of row (ids ? ids[r] : row0 + r), r < n_rows, 8 values a thread.
template <typename T>
__global__ void dequant_packed_kernel(T* dst, PackedRead r, const int32_t* ids, int64_t row0, int64_t n_rows) {
  const int64_t groups_per_row = r.cols / 8, n = n_rows * r.cols;
  SMEZO_GRID_STRIDE(g, n_rows * groups_per_row) {
    const int64_t out_row = g / groups_per_row, col = 8 * (g - out_row * groups_per_row);
    const int64_t row = ids != nullptr ? ids[out_row] : row0 + out_row;
    const int64_t local_block = col / r.block_size;
    const uint8_t* b = r.blocks + row * r.row_bytes + local_block * r.block_bytes;
    const int64_t block = row * (r.cols / r.block_size) + local_block;  // global block index
    const float d = r.scales != nullptr ? read_scale(r, block) : f16_at(b + r.d_at);
    const float m = r.scales_m ? read_scale(r, r.n_blocks + block) : r.m_at >= 0 ? f16_at(b + r.m_at) : 0.0f;
    const int j0 = static_cast<int>(col % r.block_size);
    float v[8];
#pragma unroll
    for (int l = 0; l < 8; ++l) v[l] = block_value(r.type, b, j0 + l, d, m);
    store4(dst, 8 * g, n, v);
    store4(dst, 8 * g + 4, n, v + 4);
  }
}

PackedRead packed_read(const Param& w, const Probe& probe) {
  const Tensor& t = w.w;
  PackedRead r;
  const GgufTypeTraits* traits = gguf_type_traits(t.packed_type);
  const GgufScaleOffsets at = gguf_scale_offsets(t.packed_type);  // d < 0: a type the kernel lacks
  r.d_at = at.d;
  r.m_at = at.m;
  SMEZO_REQUIRE(t.packed() && traits && at.d >= 0,
                "%s: the CUDA backend cannot dequantise packed type %s ---> HINT: use --weights dequantized",
                w.info.name.c_str(), traits ? traits->name : "?");
  r.blocks = static_cast<const uint8_t*>(t.data);
  r.type = t.packed_type;
  r.row_bytes = t.packed_row_bytes;
  r.cols = t.cols;
  r.block_size = static_cast<int>(traits->block_size);
  r.block_bytes = static_cast<int>(traits->block_bytes);
  if (w.scales == nullptr) return r;
  const Tensor& s = w.scales->w;
  r.n_blocks = t.numel() / r.block_size;
  SMEZO_REQUIRE(s.dtype == DTYPE_F32 && s.cols == r.n_blocks && (s.rows == 1 || (s.rows == 2 && r.m_at >= 0)),
                "%s: its scales %s are [%lld, %lld] %s, expected f32 [1 or %d, %lld] (one per block)",
                w.info.name.c_str(), w.scales->info.name.c_str(), (long long)s.rows, (long long)s.cols,
                dtype_name(s.dtype), r.m_at >= 0 ? 2 : 1, (long long)r.n_blocks);
  r.scales = s.f32();
  r.scales_m = s.rows == 2;
  r.probe = probe_args(*w.scales, probe);
  return r;
}

}  // namespace

void launch_dequant_packed(DType dtype, void* dst, const Param& w, const int32_t* ids, int64_t row0,
                           int64_t n_rows, const Probe& probe, cudaStream_t stream) {
  SMEZO_REQUIRE(!probe.pair, "launch_dequant_packed of %s: one probe a launch (internal error)", w.info.name.c_str());
  const PackedRead r = packed_read(w, probe);
  if (n_rows == 0) return;
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dequant_packed_kernel<T><<<grid_blocks(n_rows * r.cols / 8, kBlock), kBlock, 0, stream>>>(
        static_cast<T*>(dst), r, ids, row0, n_rows);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace smezo
