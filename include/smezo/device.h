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
// --weights: how a GGUF's block-quantised weights are held: dequantized to the storage dtype at load,
// or packed in the file's blocks (frozen). auto (train's default): packed unless the run updates the
// base's weights (--tune full), which needs them dequantized.
enum WeightStorage : int { WEIGHTS_AUTO, WEIGHTS_DEQUANTIZED, WEIGHTS_PACKED };

}  // namespace smezo
