#pragma once
/// \file
/// \brief Log-probabilities of sampled tokens, as the OpenAI API returns them (`logprobs`,
/// `top_logprobs`): log softmax of the model's raw logits (before temperature, top-k, top-p
/// and min-p, as vLLM's default "raw" logprobs), in fp64 and stored as float.
///
///     logits (vocab) ─► log_softmax ─► logprob of the sampled token
///                                    └► the k most likely tokens (ties: lower id first)

#include <utility>
#include <vector>

namespace nanoserve {

/// \brief The log-probability of one sampled token and of the most likely alternatives.
struct TokenLogprobs {
  int token = -1;         ///< the sampled token
  float logprob = 0.0f;   ///< its log-probability under the raw logits
  /// \brief The `k` most likely tokens with their log-probabilities, most likely first.
  std::vector<std::pair<int, float>> top;
};

/// \brief Log softmax of `logits` at `token`, plus the `top_k` most likely tokens (0: none).
/// Throws `InvalidArgument` for a token outside [0, vocab), top_k < 0, vocab <= 0, or a NaN
/// or +inf logit.
/// \param logits (vocab) raw logits of one row
/// \param vocab  number of logits
/// \param token  the sampled token
/// \param top_k  how many of the most likely tokens to list (0: none)
TokenLogprobs token_logprobs(const float* logits, int vocab, int token, int top_k);

}  // namespace nanoserve
