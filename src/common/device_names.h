// The name tables of the device options (include/smezo/device.h): the command line, seed-log headers
// and messages spell the values from them.
#pragma once

#include <optional>

#include "common/enum_names.h"
#include "smezo/device.h"

namespace smezo {

const EnumNames<Device>& device_names();               // cpu, cuda
const EnumNames<DType>& dtype_option_names();          // f32, f16, bf16 (files spell them F32 ...: dtype_name)
const EnumNames<LinearPathMode>& linear_mode_names();  // auto, wprime, fused
const EnumNames<WeightStorage>& weight_storage_names();  // auto, dequantized, packed

inline const char* device_name(Device d) { return enum_name(device_names(), d); }
inline const char* linear_mode_name(LinearPathMode m) { return enum_name(linear_mode_names(), m); }
// An option's dtype as the command line spells it; unset: "" (the device's default).
inline const char* dtype_option_name(std::optional<DType> d) {
  return d ? enum_name(dtype_option_names(), *d) : "";
}

}  // namespace smezo
