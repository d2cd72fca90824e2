#include "common/device_names.h"

namespace smezo {

const EnumNames<Device>& device_names() {
  static const EnumNames<Device> names = {{DEVICE_CPU, "cpu"}, {DEVICE_CUDA, "cuda"}};
  return names;
}

const EnumNames<DType>& dtype_option_names() {
  static const EnumNames<DType> names = {{DTYPE_F32, "f32"}, {DTYPE_F16, "f16"}, {DTYPE_BF16, "bf16"}};
  return names;
}

const EnumNames<LinearPathMode>& linear_mode_names() {
  static const EnumNames<LinearPathMode> names = {
      {LINEAR_MODE_AUTO, "auto"}, {LINEAR_MODE_WPRIME, "wprime"}, {LINEAR_MODE_FUSED, "fused"}};
  return names;
}

const EnumNames<WeightStorage>& weight_storage_names() {
  static const EnumNames<WeightStorage> names = {
      {WEIGHTS_AUTO, "auto"}, {WEIGHTS_DEQUANTIZED, "dequantized"}, {WEIGHTS_PACKED, "packed"}};
  return names;
}

}  // namespace smezo
