#include "common/sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "common/error.h"

namespace nanoserve {

TokenLogprobs token_logprobs(const float* logits, int vocab, int token, int top_k) {
  if (vocab <= 0 || token < 0 || token >= vocab || top_k < 0) {
    throw InvalidArgument("token_logprobs: token " + std::to_string(token) + ", vocab " +
                          std::to_string(vocab) + ", top_k " + std::to_string(top_k) +
                          " (need 0 <= token < vocab, top_k >= 0)");
  }
  double max = -INFINITY;
  for (int i = 0; i < vocab; ++i) {
    if (std::isnan(logits[i]) || logits[i] == INFINITY) {
      throw InvalidArgument("token_logprobs: logit " + std::to_string(i) + " is " +
                            std::to_string(logits[i]));
    }
    max = std::max(max, double(logits[i]));
  }
  double sum = 0;
  for (int i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - max);
  const double log_z = max + std::log(sum);  // logsumexp
  TokenLogprobs out;
  out.token = token;
  out.logprob = static_cast<float>(double(logits[token]) - log_z);
  const int k = std::min(top_k, vocab);
  if (k > 0) {
    std::vector<int> ids(static_cast<size_t>(vocab));
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int a, int b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    for (int i = 0; i < k; ++i) {
      const int id = ids[static_cast<size_t>(i)];
      out.top.emplace_back(id, static_cast<float>(double(logits[id]) - log_z));
    }
  }
  return out;
}

}  // namespace nanoserve
