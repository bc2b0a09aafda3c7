#include "common/rope_frequencies.h"

#include <cmath>

namespace nanoserve {

std::vector<float> rope_base_frequencies(int head_dim, float theta) {
  std::vector<float> inv(head_dim > 0 ? head_dim / 2 : 0);
  for (int i = 0; i < int(inv.size()); ++i) {
    // transformers: 1.0 / (base ** (arange(0, dim, 2).float() / dim)), all fp32.
    inv[i] = 1.0f / std::pow(theta, float(2 * i) / float(head_dim));
  }
  return inv;
}

std::vector<float> rope_scaled_frequencies(int head_dim, float theta, const RopeScaling& s) {
  std::vector<float> inv = rope_base_frequencies(head_dim, theta);
  if (s.type == RopeScalingType::kLinear) {
    for (float& f : inv) f = f / s.factor;
  } else if (s.type == RopeScalingType::kLlama3) {
    constexpr double kPi = 3.141592653589793;
    const double orig = s.original_max_position_embeddings;
    // Python floats, compared with (and combined into) fp32 tensors as fp32 values.
    const float low_wavelen = float(orig / double(s.low_freq_factor));
    const float high_wavelen = float(orig / double(s.high_freq_factor));
    const float span = float(double(s.high_freq_factor) - double(s.low_freq_factor));
    for (float& f : inv) {
      // PyTorch evaluates `scalar / tensor` as `tensor.reciprocal() * scalar`.
      const float wavelen = (1.0f / f) * float(2.0 * kPi);
      const float kept = wavelen > low_wavelen ? f / s.factor : f;
      if (!(wavelen < high_wavelen) && !(wavelen > low_wavelen)) {
        const float smooth = ((1.0f / wavelen) * float(orig) - s.low_freq_factor) / span;
        f = (1.0f - smooth) * kept / s.factor + smooth * kept;
      } else {
        f = kept;
      }
    }
  }
  return inv;
}

std::vector<float> rope_frequencies(const ModelConfig& c) {
  return rope_scaled_frequencies(c.head_dim, c.rope_theta, c.rope_scaling);
}

}  // namespace nanoserve
