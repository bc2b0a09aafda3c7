#include "common/oracle/attention.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/oracle/eigen_maps.h"
#include "common/oracle/ops.h"

namespace nanoserve::oracle {

void attention(const float* q, const int* positions, int n_queries, const float* k,
               const float* v, int n_keys, const AttentionShape& shape, float* out) {
  const int hd = shape.head_dim;
  if (shape.n_kv_heads <= 0 || shape.n_heads % shape.n_kv_heads != 0) {
    throw InvalidArgument("oracle::attention: n_kv_heads=" + std::to_string(shape.n_kv_heads) +
                          " does not divide n_heads=" + std::to_string(shape.n_heads));
  }
  const int group = shape.n_heads / shape.n_kv_heads;  // query heads per KV head
  const int64_t kv_stride = int64_t(shape.n_kv_heads) * hd;  // floats per key row
  const float scale = 1.0f / std::sqrt(float(hd));
  std::vector<float> scores(n_keys);  // (n_keys) one query head's scores, then probabilities

  for (int t = 0; t < n_queries; ++t) {
    const int pos = positions[t];
    if (pos < 0 || pos >= n_keys) {
      throw InvalidArgument("oracle::attention: query " + std::to_string(t) + " at position " +
                            std::to_string(pos) + " has no key (n_keys=" +
                            std::to_string(n_keys) + ")");
    }
    const int n_seen = pos + 1;  // causal: keys 0..pos
    for (int h = 0; h < shape.n_heads; ++h) {
      const int g = h / group;
      ConstVectorMap qh(q + (int64_t(t) * shape.n_heads + h) * hd, hd);  // (head_dim)
      // Head g of keys 0..pos, a strided (n_seen, head_dim) view into (n_keys, kv_dim).
      Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>> kg(k + int64_t(g) * hd, n_seen, hd,
                                                             Eigen::OuterStride<>(kv_stride));
      Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>> vg(v + int64_t(g) * hd, n_seen, hd,
                                                             Eigen::OuterStride<>(kv_stride));
      VectorMap s(scores.data(), n_seen);  // (n_seen)
      s.noalias() = (kg * qh) * scale;
      softmax(scores.data(), 1, n_seen, scores.data());
      VectorMap oh(out + (int64_t(t) * shape.n_heads + h) * hd, hd);  // (head_dim)
      oh.noalias() = vg.transpose() * s;
    }
  }
}

}  // namespace nanoserve::oracle
