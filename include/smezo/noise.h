// The kind of random direction z (SpsaOptions::noise); the bits are src/common/noise_spec.h's.
// Underlying type int: any int is a valid NoiseKind that spsa_validate can refuse (no UB before it).
#pragma once

namespace smezo {

enum NoiseKind : int {
  NOISE_GAUSSIAN_V1 = 0,  // Box-Muller, 4 normals per Philox call (spec v1, for old logs)
  NOISE_GAUSSIAN = 1,     // the default of new runs: 8 normals per Philox call (spec v2)
  NOISE_RADEMACHER = 2,   // z = ±1 (spec v2)
  NOISE_AUTO = 3,         // options only (new run: GAUSSIAN; resume: the seed log's), never a kernel's
  NOISE_SIGN = 4,         // z = ±1, 128 per Philox call, applied as a sign flip (spec v3)
};

}  // namespace smezo
