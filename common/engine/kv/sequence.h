#pragma once
/// \file
/// \brief `Sequence`: one request's token stream as the engine sees it (vLLM's `Request`,
/// nano-vllm's `Sequence`). Introduced minimal in chapter 2, where the KV cache manager needs
/// only an id and the token ids; chapter 4's scheduler drives `num_computed_tokens`.

#include <cstdint>
#include <vector>

#include "common/sampling/sampler.h"

namespace nanoserve::engine {

/// \brief A request's tokens and progress.
///
///     token_ids:  [ p0 p1 p2 p3 p4 | g0 g1 ]   prompt, then generated tokens
///                  └─ computed ─┘└ to compute ┘
///                  num_computed_tokens = 4: the KV of tokens 0..3 is in the cache
///
/// There is no prefill or decode phase: each step computes some of the tokens in
/// [num_computed_tokens, token_ids.size()) — the whole prompt, a chunk of it, or the one token
/// sampled last. Tokens are always appended; speculative decoding may also drop rejected ones
/// from the end.
///
/// \par Example
/// \snippet tests/ch02/test_examples_kv.cpp Sequence
struct Sequence {
  int64_t seq_id = 0;           ///< unique among live sequences
  std::vector<int> token_ids;   ///< prompt followed by generated tokens
  int num_computed_tokens = 0;  ///< tokens whose KV is in the cache (prefix hits included)
  SamplingParams sampling;      ///< how this request samples; its seed keys its own RNG

  /// \brief Number of tokens (prompt + generated).
  int num_tokens() const { return static_cast<int>(token_ids.size()); }
};

}  // namespace nanoserve::engine
