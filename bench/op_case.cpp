// The op case harness (see op_case.h): seeds, parameter infos, and the lists in order.
#include "bench/op_case.h"

#include <algorithm>
#include <cmath>

#include "bench/op_cases.h"
#include "common/splitmix.h"

namespace smezo {

uint64_t OpSeeds::u64(uint64_t part) const {
  return splitmix64(base + 0x9E3779B97F4A7C15ull * (list * 1000003ull + index * 101ull + part));
}

const char* mask_name(MaskKind m) {
  return m == MASK_DENSE ? "dense" : m == MASK_MAGNITUDE ? "magnitude" : "random";
}

ParamInfo op_param_info(const std::string& name, uint32_t tensor_id, MaskKind mask, const std::vector<float>& values,
                        bool trainable, uint64_t mask_seed, NoiseKind noise) {
  ParamInfo info;
  info.name = name;
  info.tensor_id = tensor_id;
  info.trainable = trainable;
  info.noise = noise;
  info.mask = mask;
  if (mask == MASK_MAGNITUDE) {  // the median |w|
    std::vector<float> a(values.size());
    for (size_t i = 0; i < values.size(); ++i) a[i] = std::fabs(values[i]);
    std::nth_element(a.begin(), a.begin() + a.size() / 2, a.end());
    info.threshold = a[a.size() / 2];
  }
  if (mask == MASK_RANDOM) {
    info.keep_prob = 0.3f;
    info.mask_seed = mask_seed;
  }
  return info;
}

void for_each_op_case(OpList list, uint32_t base_seed, const std::function<void(const OpCase&)>& fn) {
  // The lists' seed numbers (OpSeeds::list): the conformance test's, kept as its seeds.
  constexpr uint64_t kSeedList[OPS_COUNT] = {1, 2, 3, 5, 6, 7, 7, 8, 9, 4, 4, 4, 10, 11, 0};
  uint64_t i = 0;
  auto seeds = [&](uint64_t index) { return OpSeeds{base_seed, kSeedList[list], index}; };
  switch (list) {
    case OPS_EMBEDDING:
      for (const auto& c : embedding_cases()) fn(make_embedding_case(c, seeds(i++)));
      break;
    case OPS_POSITION_EMBEDDING:
      for (const auto& c : position_embedding_cases()) fn(make_position_embedding_case(c, seeds(i++)));
      break;
    case OPS_NORM:
      for (const auto& c : norm_cases()) fn(make_norm_case(c, seeds(i++)));
      break;
    case OPS_ROPE:
      for (const auto& c : rope_cases())
        for (RopeStyle style : kRopeStyles) fn(make_rope_case(c, style, seeds(i++)));
      break;
    case OPS_SWIGLU:
      for (const auto& c : swiglu_cases())
        for (bool in_place : {false, true}) fn(make_swiglu_case(c, in_place, seeds(i++)));
      break;
    case OPS_RELU:
      for (const auto& c : relu_add_cases()) fn(make_relu_case(c, seeds(i++)));
      break;
    case OPS_ADD:
      for (const auto& c : relu_add_cases()) fn(make_add_case(c, seeds(i++)));
      break;
    case OPS_GATHER_ROWS:
      for (const auto& c : gather_rows_cases()) fn(make_gather_rows_case(c, seeds(i++)));
      break;
    case OPS_COPY_ROWS:
      for (const auto& c : copy_rows_cases()) fn(make_copy_rows_case(c, seeds(i++)));
      break;
    case OPS_LINEAR_SMALL_INT: case OPS_LINEAR_RANDOM: case OPS_LINEAR_PERTURBED: {
      const LinearGroup group = list == OPS_LINEAR_SMALL_INT ? LINEAR_SMALL_INT
                                : list == OPS_LINEAR_RANDOM  ? LINEAR_RANDOM
                                                             : LINEAR_PERTURBED;
      for (const auto& c : linear_cases())
        if (c.group == group) fn(make_linear_case(c, seeds(c.seed_index)));
      break;
    }
    case OPS_UPDATE:
      for (const auto& c : update_cases())
        for (DType dt : kAllDtypes)
          for (NoiseKind noise : kNoiseKinds) fn(make_update_case(c, dt, noise, seeds(i++)));
      break;
    case OPS_ABS_QUANTILE:
      for (const auto& c : abs_quantile_cases())
        for (DType dt : kAllDtypes) fn(make_abs_quantile_case(c, dt, seeds(i++)));
      break;
    case OPS_ATTENTION:
      for (const auto& c : attention_cases()) fn(make_attention_case(c));
      break;
    case OPS_COUNT:
      break;
  }
}

}  // namespace smezo
