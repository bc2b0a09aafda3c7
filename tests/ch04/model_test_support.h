#pragma once
/// \file
/// \brief Helpers for the batching tests on the real model (chapters 3 and 4): small random
/// workloads whose requests fit a short context, and each request's tokens when it runs alone
/// through chapter 1's `NaiveDecoder` and `generate()` — no scheduler, no batch, no paging.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/engine/decode/naive_decoder.h"
#include "common/engine/serve/serving_loop.h"
#include "common/harness/workload.h"
#include "common/generation/generate.h"

namespace nanoserve::testing {

/// \brief `n` requests from `seed`, all arriving at t = 0 (the executors under test take no
/// virtual time, so spread arrivals would run one after another): long-tailed prompts in [2, max_prompt],
/// outputs uniform in [1, max_output], BOS first, EOS (id 2) stops; even ids greedy, odd ids
/// sampled (temperature 0.9, top-k 40, each with its own seed); request 1 starts with
/// request 0's prompt (a prefix-cache hit when both are long enough).
inline std::vector<engine::Request> model_workload(std::uint64_t seed, int n, int vocab, int max_prompt,
                                           int max_output) {
  harness::WorkloadSpec spec;
  spec.num_requests = n;
  spec.rate = std::numeric_limits<double>::infinity();
  spec.prompt_len = harness::LengthDist::log_normal(max_prompt / 3.0, 0.8, 2, max_prompt);
  spec.max_tokens = harness::LengthDist::uniform(1, max_output);
  spec.seed = seed;
  harness::RequestDefaults defaults;
  defaults.vocab_size = vocab;
  defaults.bos_id = 1;
  defaults.stop_token_ids = {2};
  defaults.sampling.temperature = 0.9f;
  defaults.sampling.top_k = 40;
  std::vector<engine::Request> requests = harness::make_requests(harness::generate_workload(spec), defaults);
  for (engine::Request& r : requests) {
    if (r.id() % 2 == 0) r.seq.sampling.temperature = 0.0f;
  }
  if (n >= 2 && requests[1].prompt_len >= 4) {
    std::vector<int> shared = requests[0].seq.token_ids;
    shared.insert(shared.end(), requests[1].seq.token_ids.begin() + 1,
                  requests[1].seq.token_ids.end());
    shared.resize(std::min<std::size_t>(shared.size(), std::size_t(max_prompt)));
    requests[1].seq.token_ids = shared;
    requests[1].prompt_len = static_cast<int>(shared.size());
  }
  return requests;
}

/// \brief Each request's tokens (prompt + output) when it runs alone: `generate()` on a fresh
/// `NaiveDecoder` (naive contiguous KV) with the request's sampling parameters, stop ids
/// and max_tokens. Indexed by request id.
inline std::vector<std::vector<int>> solo_tokens(const engine::DeviceModel& model,
                                                 const std::vector<engine::Request>& requests,
                                                 int max_seq_len) {
  std::vector<std::vector<int>> out(requests.size());
  engine::NaiveDecoder backend(model, engine::CacheMode::kNaiveCache, max_seq_len);
  for (const engine::Request& r : requests) {
    GenerateOptions opt;
    opt.max_new_tokens = r.max_tokens;
    opt.sampling = r.seq.sampling;
    opt.stop_tokens = r.stop_token_ids;
    backend.reset();
    out[static_cast<std::size_t>(r.id())] = generate(backend, r.seq.token_ids, opt).tokens;
  }
  return out;
}

/// \brief Expects every request of `run` to have finished normally with its solo tokens.
inline void expect_solo_tokens(const engine::ServingRun& run, const std::vector<std::vector<int>>& solo,
                               const std::string& what) {
  ASSERT_EQ(run.requests.size(), solo.size()) << what;
  for (const engine::Request& r : run.requests) {
    ASSERT_TRUE(r.finish_reason == engine::FinishReason::kStop || r.finish_reason == engine::FinishReason::kLength)
        << what << ", request " << r.id() << ": " << to_string(r.finish_reason) << " "
        << r.finish_detail;
    EXPECT_EQ(r.seq.token_ids, solo[static_cast<std::size_t>(r.id())])
        << what << ", request " << r.id() << " (" << (r.seq.sampling.greedy() ? "greedy" : "sampled")
        << ", prompt " << r.prompt_len << ", preempted " << r.num_preemptions << "×)";
  }
}

}  // namespace nanoserve::testing
