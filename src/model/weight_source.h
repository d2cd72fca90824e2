// What a checkpoint loader hands to the model: the architecture and a set of named host
// tensors (memory-mapped where the format allows), with Hugging Face names and shapes.
// Loaders: formats/hf_dir.h (config.json + safetensors), formats/llama2c.h (llama2.c .bin).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/tensor.h"
#include "smezo/model_config.h"

namespace smezo {

// A read-only view of one stored tensor.
struct HostTensorView {
  std::string name;
  DType dtype = DTYPE_F32;
  std::vector<int64_t> shape;  // as stored, e.g. {out_features, in_features}
  const void* data = nullptr;  // points into a mapped file or an owned buffer
  std::string file;            // where it came from, for error messages

  int64_t numel() const;
};

// Convert n elements of src (stored as dtype) to fp32.
void convert_to_f32(const void* src, DType dtype, int64_t n, float* dst);

struct WeightSource {
  ModelConfig config;
  std::string path;                                 // the model path the user gave
  std::map<std::string, HostTensorView> tensors;    // by Hugging Face name
  std::vector<std::shared_ptr<void>> keep_alive;    // mappings / buffers backing the views

  const HostTensorView* find(const std::string& name) const;
};

}  // namespace smezo
