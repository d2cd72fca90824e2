// How a parameter is read under a probe, as plain data kernels take by value. Host-compilable.
#pragma once

#include <cstdint>

#include "common/noise_spec.h"
#include "backend/tensor.h"

namespace smezo {

struct MaskArgs {
  MaskKind kind = MASK_DENSE;
  float threshold = 0.0f;   // MASK_MAGNITUDE
  float keep_prob = 1.0f;   // MASK_RANDOM
  uint64_t mask_seed = 0;   // MASK_RANDOM
  uint32_t tensor_id = 0;   // noise stream id of the parameter
};

inline MaskArgs mask_args(const ParamInfo& info) {
  MaskArgs m;
  m.kind = info.mask;
  m.threshold = info.threshold;
  m.keep_prob = info.keep_prob;
  m.mask_seed = info.mask_seed;
  m.tensor_id = info.tensor_id;
  return m;
}

struct ProbeArgs {
  float scale = 0.0f;  // sigma * eps; 0 = read as stored (no noise is generated)
  uint64_t seed = 0;   // step seed (key of the z stream)
  NoiseKind noise = NOISE_GAUSSIAN;  // the run's z (ParamInfo::noise)
  MaskArgs mask;
};

// How `p` is read under `probe`: scale 0 when the parameter is not trainable.
inline ProbeArgs probe_args(const Param& p, const Probe& probe) {
  ProbeArgs a;
  a.scale = p.info.trainable ? probe.scale : 0.0f;
  a.seed = probe.seed;
  a.noise = p.info.noise;
  a.mask = mask_args(p.info);
  return a;
}

}  // namespace smezo
