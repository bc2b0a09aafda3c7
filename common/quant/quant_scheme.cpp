#include "common/quant/quant_scheme.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "common/loaders/half_float.h"

namespace nanoserve::quant {

void QuantScheme::validate() const {
  if (bits != 4 && bits != 8) {
    throw InvalidArgument("quantization: bits " + std::to_string(bits) + " is not 4 or 8");
  }
  if (group_size < 0) {
    throw InvalidArgument("quantization: group_size " + std::to_string(group_size) +
                          " is negative (0 = per channel)");
  }
}

std::string QuantScheme::label() const {
  return "int" + std::to_string(bits) + "-" +
         (group_size == 0 ? std::string("ch") : "g" + std::to_string(group_size)) +
         (symmetric ? "-sym" : "-asym");
}

uint16_t fp16_from_float(float x) {
  return Eigen::numext::bit_cast<uint16_t>(Eigen::half(x));  // round to nearest even
}

uint16_t fp16_round_up(float x) {
  uint16_t h = fp16_from_float(x);
  // For a positive value the next larger fp16 is the next bit pattern (subnormal -> normal
  // included); 0x7C00 is +inf.
  if (fp16_to_fp32(h) < x) ++h;
  if (!(x >= 0.0f) || h >= 0x7C00u) {
    throw InvalidArgument("quantization: scale " + std::to_string(x) +
                          " does not fit in fp16 (largest 65504); the weights are too large");
  }
  return h;
}

GroupParams choose_group_params(const float* w, int n, const QuantScheme& scheme) {
  float lo = 0.0f, hi = 0.0f;  // the range always includes 0
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, w[i]);
    hi = std::max(hi, w[i]);
  }
  GroupParams p;
  if (scheme.symmetric) {
    p.zero = float(scheme.symmetric_zero());
    const float amax = std::max(-lo, hi);
    if (amax == 0.0f) return p;  // all zeros: scale 1, every code is the zero point
    p.scale = fp16_to_fp32(fp16_round_up(amax / float(scheme.symmetric_zero() - 1)));
    return p;
  }
  if (hi == lo) return p;  // all zeros (lo <= 0 <= hi): scale 1, zero point 0
  p.scale = fp16_to_fp32(fp16_round_up((hi - lo) / float(scheme.max_code())));
  // (+ 0.0f turns a -0 from round(-0 / s) into +0.)
  p.zero = std::clamp(std::nearbyint(-lo / p.scale), 0.0f, float(scheme.max_code())) + 0.0f;
  return p;
}

int quantize_code(float w, const GroupParams& p, int max_code) {
  // round(w / s) + z, as GPTQ's reference (`torch.round(x / scale) + zero`), not
  // round(w / s + z): the two differ on ties when z is odd.
  const float q = std::nearbyint(w / p.scale) + p.zero;
  return int(std::clamp(q, 0.0f, float(max_code)));
}

}  // namespace nanoserve::quant
