#pragma once
/// \file
/// \brief Workload traces: one request per line of a JSONL file (chapters 3 and 4).
///
///     {"arrival_s": 0.0, "prompt_len": 37, "max_tokens": 64, "seed": 17}
///     {"arrival_s": 0.21, "prompt": "Once upon a time", "max_tokens": 32, "seed": 5,
///      "temperature": 0.8}
///
/// Fields (anything else is an error, so a typo never silently becomes a default):
///   - `arrival_s`   number in [0, 10^7] (116 days), seconds after the start; lines are in
///                   arrival order
///   - `prompt`      non-empty text (tokenized by the program), or
///   - `prompt_len`  integer in [1, 2^20]: a synthetic prompt made from the seed
///                   (exactly one of the two)
///   - `max_tokens`  integer in [1, 2^20]
///   - `seed`        integer in [0, 2^64): keys the request's sampling (and synthetic prompt)
///   - `temperature` optional number >= 0 (0 = greedy); absent: the program's default
/// Blank lines are skipped. A file with no request is an error, and so is a file over 64 MiB
/// or with more than 100,000 requests (the limits below), a FIFO or a directory.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanoserve::harness {

/// \brief One line of a trace.
struct TraceRequest {
  double arrival_s = 0;   ///< seconds after the start of the run
  std::string prompt;     ///< prompt text; empty when `prompt_len` is used
  int prompt_len = 0;     ///< synthetic prompt length; 0 when `prompt` is used
  int max_tokens = 1;     ///< most generated tokens
  uint64_t seed = 0;      ///< the request's RNG key
  std::optional<float> temperature;  ///< absent: the program's default

  /// \brief Field-by-field equality (for round-trip tests).
  bool operator==(const TraceRequest& o) const {
    return arrival_s == o.arrival_s && prompt == o.prompt && prompt_len == o.prompt_len &&
           max_tokens == o.max_tokens && seed == o.seed && temperature == o.temperature;
  }
};

/// \brief Largest `prompt_len` or `max_tokens` a trace may ask for (2^20).
constexpr int kMaxTraceTokens = 1 << 20;

/// \brief Most requests in one workload, from a trace or the generator: every request is held
/// in memory with its tokens and timestamps for the whole run.
constexpr int kMaxTraceRequests = 100000;

/// \brief Latest arrival a workload may have (10^7 s, 116 days): past it a double's
/// resolution coarsens towards the latencies being measured. Virtual clocks skip idle time;
/// the wall clock waits in real time (chapters 3 and 4 refuse long waits on it).
constexpr double kMaxArrivalSeconds = 1e7;

/// \brief Largest trace file read (64 MiB; a line is ~70 bytes plus its prompt text).
constexpr std::uint64_t kMaxTraceBytes = 64ull << 20;

/// \brief Reads and validates a JSONL trace. Throws `LoadError` whose file is "path:line"
/// and whose field names the offending key (or "json" for a line that does not parse), e.g.
/// `t.jsonl:3: max_tokens: must be an integer in [1, 1048576], got 0`.
std::vector<TraceRequest> load_trace(const std::string& path);

/// \brief `load_trace` on text already in memory; `name` stands for the path in messages (the
/// fuzz target calls this).
std::vector<TraceRequest> parse_trace(const std::string& text, const std::string& name);

/// \brief Writes `requests` as JSONL in the format above (keys in the order shown). Throws
/// `InvalidArgument` for a request `load_trace` would reject, `Error` if the file cannot be
/// written.
void write_trace(const std::string& path, const std::vector<TraceRequest>& requests);

}  // namespace nanoserve::harness
