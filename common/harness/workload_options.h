#pragma once
/// \file
/// \brief Workloads from command-line text (chapters 3 and 4): length distributions such as
/// "lognormal:32:1:4:128", the generator-or-trace options of a run, and the requests they make.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/engine/serve/request.h"
#include "common/harness/workload.h"

namespace nanoserve {
class Tokenizer;
}

namespace nanoserve::harness {

/// \brief Parses "fixed:N", "uniform:LO:HI", "lognormal:MEDIAN:SIGMA:LO:HI" or "chat" (the
/// long tail of the bundled chat trace: lognormal:32:1:4:128). Throws `InvalidArgument`
/// naming `what` and the text for anything else or invalid numbers.
LengthDist parse_length_dist(const std::string& text, const std::string& what);

/// \brief Where requests come from.
struct WorkloadOptions {
  std::string trace;             ///< JSONL trace (trace.h); empty: the generator below
  int num_requests = 16;         ///< generator: requests
  double rate = 4;               ///< generator: Poisson arrivals per second (inf = all at 0)
  std::string prompt_len = "chat";  ///< generator: prompt length distribution
  std::string output_len = "chat";  ///< generator: max_tokens distribution
  std::uint64_t seed = 1;        ///< generator: keys every draw
  float temperature = 0.0f;      ///< sampling of requests whose line has none (0 = greedy)
};

/// \brief The requests of `options`: synthetic prompts (BOS first) over `vocab_size` ids,
/// text prompts through `tokenizer`, EOS `eos_id` as a stop token. Throws what the trace
/// loader and `generate_workload` throw.
std::vector<engine::Request> build_workload(const WorkloadOptions& options, const Tokenizer& tokenizer,
                                    int vocab_size);

/// \brief One line for reports: "12 requests, rate 4/s, prompts chat, outputs fixed:32" or
/// "12 requests from data/traces/x.jsonl".
std::string describe_workload(const WorkloadOptions& options, std::size_t num_requests);

}  // namespace nanoserve::harness
