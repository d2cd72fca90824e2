// The random direction z that the zeroth-order optimiser perturbs along (SpsaOptions::noise).
// The exact bits of every kind are defined in src/common/noise_spec.h; this header is only the
// name of the choice, so that the public API and the CUDA kernels can share it (no includes).
// The underlying type is fixed (int) so that every int is a valid NoiseKind: a value from a
// caller or a file that names no kind (say 7) is well defined and spsa_validate refuses it by
// number, instead of being undefined behaviour before the check (UBSan: "load of value 7").
#pragma once

namespace smezo {

enum NoiseKind : int {
  NOISE_GAUSSIAN_V1 = 0,  // Box-Muller, 4 normals per Philox call (noise spec v1; every run
                          // logged before spec v2 used it, and still replays with it)
  NOISE_GAUSSIAN = 1,     // the default of new runs: 8 normals per Philox call (spec v2)
  NOISE_RADEMACHER = 2,   // z = ±1 (spec v2)
  NOISE_AUTO = 3,         // options only: a new run takes NOISE_GAUSSIAN, a resumed run the
                          // noise its seed log names. Never reaches a ParamInfo or a kernel.
};

}  // namespace smezo
