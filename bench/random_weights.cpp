// Random weights for the benchmarks (see random_weights.h).
#include "bench/random_weights.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/half.h"
#include "common/splitmix.h"
#include "formats/gguf.h"
#include "formats/gguf_dequant.h"  // gguf_scale_offsets, gguf_decode_fn
#include "formats/packed_weights.h"
#include "model/model.h"

namespace smezo {

namespace {

// Random weights, generated when the model loads each tensor (HostTensorView::decode), so the
// host never holds more than one tensor: uniform in center ± scale from a counter hash.
struct RandomTensor {
  uint64_t seed;
  float center, scale;
};

void random_decode(const void* src, int64_t n, float* dst) {
  const RandomTensor& r = *static_cast<const RandomTensor*>(src);
#pragma omp parallel for schedule(static) if (n > (1 << 20))
  for (int64_t i = 0; i < n; i++) {
    const uint64_t h = splitmix64(r.seed ^ (static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ULL));
    const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    dst[i] = r.center + r.scale * (2.0f * u - 1.0f);
  }
}

// The block types --weights packed keeps (gguf_block_quantized), in the order the errors list them.
const std::vector<uint32_t>& random_packed_types() {
  static const std::vector<uint32_t> types = {GGUF_TYPE_Q8_0, GGUF_TYPE_Q4_0, GGUF_TYPE_Q4_1, GGUF_TYPE_Q5_0,
                                              GGUF_TYPE_Q5_1, GGUF_TYPE_Q4_K, GGUF_TYPE_Q5_K, GGUF_TYPE_Q6_K};
  return types;
}

// The f16 scales that keep a block's weights within about ± s, its codes spanning their whole range:
// Q8_0 d*q (q in ±128), Q4_0/Q5_0 d*(q - 8|16), Q4_1/Q5_1 d*q + m (q up to 15|31), Q4_K/Q5_K
// d*sc*q - dmin*mc (6-bit sc and mc), Q6_K d*sc*(q - 32) (8-bit sc). Where they lie: gguf_scale_offsets.
struct RandomBlockScales {
  float d = 0, m = 0;
};

RandomBlockScales random_block_scales(uint32_t type, float s) {
  switch (type) {
    case GGUF_TYPE_Q8_0: return {s / 128, 0};
    case GGUF_TYPE_Q4_0: return {s / 8, 0};
    case GGUF_TYPE_Q5_0: return {s / 16, 0};
    case GGUF_TYPE_Q4_1: return {2 * s / 15, -s};
    case GGUF_TYPE_Q5_1: return {2 * s / 31, -s};
    case GGUF_TYPE_Q4_K: return {2 * s / (63 * 15), s / 63};
    case GGUF_TYPE_Q5_K: return {2 * s / (63 * 31), s / 63};
    case GGUF_TYPE_Q6_K: return {s / (128 * 32), 0};
    default: throw_error("random weights: %s is not a block type smezo keeps packed (choose %s)",
                         gguf_type_name(type), random_packed_type_names().c_str());
  }
}

// rows * cols values of random blocks of `type`: hashed bytes, then each block's f16 scales.
std::shared_ptr<std::vector<uint8_t>> random_blocks(uint32_t type, int64_t rows, int64_t cols, uint64_t seed,
                                                    const std::string& what) {
  const int64_t row_bytes = packed_row_bytes(type, cols, what);
  const GgufTypeTraits& traits = *gguf_type_traits(type);
  auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(rows * row_bytes));
  uint8_t* b = bytes->data();
  const int64_t words = rows * row_bytes / 8;
#pragma omp parallel for schedule(static) if (words > (1 << 20))
  for (int64_t i = 0; i < words; i++) {
    const uint64_t h = splitmix64(seed ^ (static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ULL));
    std::memcpy(b + 8 * i, &h, 8);
  }
  for (int64_t i = 8 * words; i < rows * row_bytes; i++) b[i] = static_cast<uint8_t>(splitmix64(seed + i));
  const RandomBlockScales sc = random_block_scales(type, 1.0f / std::sqrt(static_cast<float>(cols)));
  const GgufScaleOffsets at = gguf_scale_offsets(type);
  const uint16_t d = float_to_f16(sc.d), m = float_to_f16(sc.m);
  for (uint8_t* block = b; block < b + rows * row_bytes; block += traits.block_bytes) {
    std::memcpy(block + at.d, &d, 2);
    if (at.m >= 0) std::memcpy(block + at.m, &m, 2);
  }
  return bytes;
}

}  // namespace

std::string random_packed_type_names() {
  std::string out;
  for (uint32_t t : random_packed_types()) out += (out.empty() ? "" : ", ") + std::string(gguf_type_name(t));
  return out;
}

uint32_t random_packed_type(const std::string& name) {
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (uint32_t t : random_packed_types())
    if (upper == gguf_type_name(t)) return t;
  throw_error("--quant %s is not a block type smezo keeps packed (choose %s)", name.c_str(),
              random_packed_type_names().c_str());
}

WeightSource random_weight_source(const ModelConfig& config, uint64_t seed, const std::string& name,
                                  uint32_t packed_type) {
  WeightSource src;
  src.config = config;
  src.path = "random " + name;
  src.keep_packed = packed_type != 0;
  std::map<std::pair<int64_t, int64_t>, std::shared_ptr<std::vector<uint8_t>>> blocks_of_shape;
  uint64_t k = 0;
  for (const ExpectedTensor& e : expected_tensors(config)) {
    const bool vector = e.shape.size() == 1;
    if (packed_type != 0 && !vector) {  // random blocks, shared by every matrix of this shape
      const int64_t rows = e.shape[0], cols = e.shape[1];
      std::shared_ptr<std::vector<uint8_t>>& blocks = blocks_of_shape[{rows, cols}];
      if (!blocks)
        blocks = random_blocks(packed_type, rows, cols, splitmix64(seed ^ static_cast<uint64_t>(rows * 65537 + cols)),
                               "tensor " + e.name + " of " + src.path);
      HostTensorView v;
      v.name = e.name;
      v.shape = e.shape;
      v.data = blocks->data();
      v.nbytes = static_cast<int64_t>(blocks->size());
      v.decode = gguf_decode_fn(packed_type);
      v.quant_name = gguf_type_name(packed_type);
      v.packed_type = packed_type;
      v.file = src.path;
      src.tensors[e.name] = v;
      src.keep_alive.push_back(blocks);
      ++k;  // the vectors' seeds as without packed_type
      continue;
    }
    const bool norm_weight = vector && e.name.find("norm") != std::string::npos &&
                             e.name.find(".bias") == std::string::npos;
    auto r = std::make_shared<RandomTensor>();
    r->seed = splitmix64(seed + ++k);
    r->center = norm_weight ? 1.0f : 0.0f;
    // about 1/sqrt(fan_in) for matrices, so activations keep their scale through the layers
    r->scale = vector ? (norm_weight ? 0.05f : 0.02f) : 1.0f / std::sqrt(static_cast<float>(e.shape.back()));
    HostTensorView v;
    v.name = e.name;
    v.shape = e.shape;
    v.data = r.get();
    v.decode = random_decode;
    v.quant_name = "random";
    v.file = src.path;
    src.tensors[e.name] = v;
    src.keep_alive.push_back(r);
  }
  return src;
}

}  // namespace smezo
