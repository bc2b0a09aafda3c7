#pragma once
/// \file
/// \brief The chapter's workload, "stories with shared openings": requests whose prompts share
/// a few long prefixes (a system prompt, a shared document) and whose outputs are long-tailed —
/// the two properties the stacked techniques feed on (prefix caching, and paged memory that
/// holds what a request really uses instead of its worst case).
///
///     request i:  [BOS | opening of story i mod K (prefix_tokens) | start of story K+i (u_i)]
///                  └──────────── shared by every K-th request ────┘ └ its own, long-tailed ┘
///     max_tokens: long-tailed (log-normal, clamped); stops at EOS too
///
/// Text comes from the TinyStories sample's evaluation slice when the model is real (so greedy
/// stories repeat names and phrases: prompt lookup finds drafts); a synthetic model gets
/// random tokens of the same lengths. Every draw comes from Philox on the workload stream, so a
/// (options, seed) pair always gives the same requests.

#include <cstdint>
#include <string>
#include <vector>

#include "common/engine/serve/request.h"
#include "common/harness/workload.h"
#include "common/model_bundle.h"

namespace nanoserve::ch07 {

/// \brief The generator's knobs.
struct StackWorkloadOptions {
  int num_requests = 24;   ///< requests, all arriving at t = 0 unless `rate` is finite
  double rate = 0;         ///< Poisson arrivals per second; 0 = all at t = 0 (offline)
  int num_prefixes = 3;    ///< distinct shared openings
  int prefix_tokens = 32;  ///< tokens of each opening (BOS included)
  /// \brief Each request's own part of the prompt.
  harness::LengthDist user_len = harness::LengthDist::log_normal(12, 0.8, 2, 48);
  /// \brief max_tokens: most requests short, a few long.
  harness::LengthDist output_len = harness::LengthDist::log_normal(20, 0.9, 4, 128);
  float temperature = 0.0f;  ///< 0 = greedy
  std::uint64_t seed = 1;    ///< keys the lengths and each request's sampling seed
  int gamma = 0;             ///< num_speculative_tokens of every request
  int samples = 1;           ///< parallel samples (n) of every request

  /// \brief Throws `InvalidArgument` naming the field for counts outside their ranges.
  void validate() const;
};

/// \brief The requests (ids 0, 1, …) and where their text came from.
struct StackWorkload {
  std::vector<engine::Request> requests;  ///< EOS stops each one
  std::string source;                     ///< "the text sample (stories …)" or "random tokens"
  std::string description;                ///< one line for reports
};

/// \brief Builds the workload for `bundle` (see the file comment). Throws `InvalidArgument`
/// for bad options, or when the text sample's stories are too short for the lengths asked.
StackWorkload make_stack_workload(const StackWorkloadOptions& options, const ModelBundle& bundle);

/// \brief Token sequences to fit GPTQ and AWQ on (the text sample's calibration slice, or the
/// workload's prompts for a synthetic model) and to measure KL divergence on.
std::vector<std::vector<int>> calibration_for(const ModelBundle& bundle,
                                              const StackWorkload& workload);

}  // namespace nanoserve::ch07
