#pragma once
/// \file
/// \brief The control message of a disaggregated run (`disaggregated.h`): a prefill instance's
/// hand-off header for one request, or its end-of-work notice, in a few dozen bytes.

#include <cstdint>
#include <string>
#include <vector>

#include "common/engine/serve/request.h"

namespace nanoserve::engine {

/// \brief The tag of hand-off messages (below `MpiCommunicator::kDataTag`).
constexpr int kHandOffTag = 101;

/// \brief What a prefill instance tells the decode instance about one request — or, with
/// `done`, that it has handed off all of its share.
///
/// \par Example
/// \snippet tests/ch09/test_examples_disagg.cpp HandOff
struct HandOff {
  bool done = false;         ///< end of work: the other fields are unused
  std::int64_t id = 0;       ///< the request
  int first_token = -1;      ///< the token sampled after the prompt (-1: none, rejected)
  int num_blocks = 0;        ///< KV blocks that follow (0: finished on the prefill side)
  bool finished = false;     ///< finished by its first token, or rejected
  FinishReason finish_reason = FinishReason::kNone;  ///< when finished
  std::string finish_detail;     ///< when finished
  std::string output_text;       ///< text so far (stop strings)
  double first_scheduled_s = -1;  ///< when the prefill instance first scheduled it
  double token_time_s = -1;       ///< when the first token was sampled
  double finished_s = -1;         ///< when finished
  int num_prefix_hit_tokens = 0;  ///< prompt tokens the prefill instance took from its cache
  int num_preemptions = 0;        ///< preemptions on the prefill instance

  /// \brief The header of `r` (prompt done, first token sampled) with `num_blocks` to follow.
  static HandOff of(const Request& r, int num_blocks);
  /// \brief The bytes sent.
  std::vector<std::uint8_t> encode() const;
  /// \brief Parses `bytes`; throws `InvalidArgument` for a malformed message.
  static HandOff decode(const std::vector<std::uint8_t>& bytes);
  /// \brief Applies the prefill instance's part of the request to `r` (the decode instance's
  /// copy of the same request from the workload): the first token, times and counters, and
  /// the finish when `finished`.
  void apply_to(Request& r) const;
};

}  // namespace nanoserve::engine
