#include "common/rope_frequencies.h"

#include <cmath>
#include <string>

#include "common/error.h"

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
  for (size_t i = 0; i < s.freq_factors.size() && i < inv.size(); ++i) inv[i] /= s.freq_factors[i];
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

std::vector<float> llama3_rope_freq_factors(int head_dim, float theta, const RopeScaling& s) {
  if (s.type != RopeScalingType::kLlama3) {
    throw InvalidArgument(std::string("llama3_rope_freq_factors: rope scaling is ") +
                          to_string(s.type) + ", not llama3");
  }
  constexpr double kPi = 3.141592653589793;
  const double orig = s.original_max_position_embeddings;
  const double low_wavelen = orig / double(s.low_freq_factor);  // Python floats
  const double high_wavelen = orig / double(s.high_freq_factor);
  std::vector<float> factors;
  for (const float freq : rope_base_frequencies(head_dim, theta)) {
    // `2 * math.pi / freq`: a float32 tensor, compared with Python floats as float32.
    const float wavelen = (1.0f / freq) * float(2.0 * kPi);
    if (wavelen < float(high_wavelen)) {
      factors.push_back(1.0f);
    } else if (wavelen > float(low_wavelen)) {
      factors.push_back(s.factor);
    } else {
      const float smooth = ((1.0f / wavelen) * float(orig) - s.low_freq_factor) /
                           float(double(s.high_freq_factor) - double(s.low_freq_factor));
      factors.push_back(1.0f / ((1.0f - smooth) / s.factor + smooth));
    }
  }
  return factors;
}

std::vector<float> rope_frequencies(const ModelConfig& c) {
  return rope_scaled_frequencies(c.head_dim, c.rope_theta, c.rope_scaling);
}

}  // namespace nanoserve
