#pragma once
/// \file
/// \brief A small, fixed batch of requests with mixed prompt and output lengths — the
/// workload chapter 1 measures KV reservation against, and chapter 2 replays under a paged
/// cache so the two utilizations compare like for like.

#include <string>
#include <vector>

namespace nanoserve::harness {

/// \brief The lengths of one request.
struct RequestShape {
  std::string name;       ///< a label for tables ("chat", "summary", …)
  int prompt_tokens = 0;  ///< prompt length, BOS included
  int output_tokens = 0;  ///< tokens generated after the prompt
  /// \brief Positions whose keys and values end up cached: the prompt and every generated
  /// token but the last (which is sampled, never fed back).
  int cached_positions() const { return prompt_tokens + output_tokens - 1; }
};

/// \brief Eight requests, short and long, each fitting a 256-position context (so every model
/// in the project can serve them): prompt + output between 16 and 246 positions, 976 in all.
std::vector<RequestShape> mixed_length_requests();

}  // namespace nanoserve::harness
