// Public API: where a model runs and how its weights are stored (TrainOptions, ReplayOptions).
#pragma once

namespace smezo {

enum Device : int { DEVICE_CPU, DEVICE_CUDA };
// A tensor's storage dtype; an unset std::optional<DType> option means the device's default
// (cpu: f32, cuda: bf16).
enum DType : int { DTYPE_F32, DTYPE_F16, DTYPE_BF16 };
// --linear-path: how a perturbed linear runs on the GPU (the CPU has one path): wprime = W' to
// scratch + cuBLAS, fused = one kernel, auto = fused where a measured crossover table says so.
enum LinearPathMode : int { LINEAR_MODE_AUTO, LINEAR_MODE_WPRIME, LINEAR_MODE_FUSED };

}  // namespace smezo
