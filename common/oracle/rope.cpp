#include "common/oracle/rope.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace nanoserve::oracle {

float rope_frequency(int pair, int head_dim, float theta) {
  return 1.0f / std::pow(theta, float(2 * pair) / float(head_dim));
}

void rope(float* x, const int* positions, int n_rows, int n_heads, int head_dim, float theta,
          RopeStyle style) {
  std::vector<float> inv_freq(head_dim / 2);  // (head_dim / 2)
  for (int i = 0; i < head_dim / 2; ++i) inv_freq[i] = rope_frequency(i, head_dim, theta);
  rope(x, positions, n_rows, n_heads, head_dim, inv_freq.data(), style);
}

void rope(float* x, const int* positions, int n_rows, int n_heads, int head_dim,
          const float* inv_freq, RopeStyle style) {
  const int half = head_dim / 2;
  for (int r = 0; r < n_rows; ++r) {
    for (int i = 0; i < half; ++i) {
      const float angle = float(positions[r]) * inv_freq[i];
      const float c = std::cos(angle), s = std::sin(angle);
      // Offsets of the two members of pair i inside a head.
      const int ia = style == RopeStyle::kAdjacentPairs ? 2 * i : i;
      const int ib = style == RopeStyle::kAdjacentPairs ? 2 * i + 1 : i + half;
      for (int h = 0; h < n_heads; ++h) {
        float* head = x + (int64_t(r) * n_heads + h) * head_dim;  // (head_dim)
        const float a = head[ia], b = head[ib];
        head[ia] = a * c - b * s;
        head[ib] = a * s + b * c;
      }
    }
  }
}

}  // namespace nanoserve::oracle
