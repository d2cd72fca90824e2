// Random weights for the benchmarks (see random_weights.h).
#include "bench/random_weights.h"

#include <cmath>
#include <memory>

#include "model/model.h"
#include "train/spsa.h"  // splitmix64

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

}  // namespace

WeightSource random_weight_source(const ModelConfig& config, uint64_t seed, const std::string& name) {
  WeightSource src;
  src.config = config;
  src.path = "random " + name;
  uint64_t k = 0;
  for (const ExpectedTensor& e : expected_tensors(config)) {
    const bool vector = e.shape.size() == 1;
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
