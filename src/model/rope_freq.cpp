// RoPE's inverse-frequency table (see rope_freq.h).
#include "model/rope_freq.h"

#include <cmath>

namespace smezo {

namespace {

// transformers' _compute_llama3_parameters in fp32, step for step: wavelengths 2π/f; long ones
// (> L / low_freq_factor) divided by factor, short ones (< L / high_freq_factor) kept, the band
// between blended with smooth = (L / wavelen - low) / (high - low).
void apply_llama3(const RopeScaling& s, std::vector<float>* inv_freq) {
  const float orig = static_cast<float>(s.original_max_positions);
  const float low_wavelen = static_cast<float>(static_cast<double>(s.original_max_positions) / s.low_freq_factor);
  const float high_wavelen = static_cast<float>(static_cast<double>(s.original_max_positions) / s.high_freq_factor);
  const float two_pi = static_cast<float>(2.0 * M_PI);
  for (float& f : *inv_freq) {
    const float wavelen = two_pi / f;
    const float scaled = wavelen > low_wavelen ? f / s.factor : f;
    if (wavelen < high_wavelen || wavelen > low_wavelen) {
      f = scaled;
      continue;
    }
    const float smooth = (orig / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
    f = (1.0f - smooth) * scaled / s.factor + smooth * scaled;
  }
}

}  // namespace

std::vector<float> rope_inverse_frequencies(const ModelConfig& c) {
  const int64_t half = c.head_dim / 2;
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; j++)
    inv_freq[j] = 1.0f / std::pow(c.rope_theta, static_cast<float>(2 * j) / static_cast<float>(c.head_dim));
  const RopeScaling& s = c.rope_scaling;
  if (!s.freq_divisors.empty()) {  // a GGUF's rope_freqs: llama.cpp divides each pair's frequency by it
    for (int64_t j = 0; j < half; j++) inv_freq[j] /= s.freq_divisors[static_cast<size_t>(j)];
  } else if (s.kind == ROPE_SCALING_LLAMA3) {
    apply_llama3(s, &inv_freq);
  }
  return inv_freq;
}

}  // namespace smezo
