#pragma once
// What one benchmark request is, what came back, and the two ways to send it (bench_serving):
// over HTTP to `nanoserve serve` (http_backend.h) or into an AsyncEngine in the same process
// (engine_backend.h). Both see the same token ids and report the same timings, so their
// difference is what the HTTP server costs.
//
//   send ──── TTFT ────► first text ─ ITL ─► … ─► last text ── ► end
//   │◄──────────────────────────── e2e ──────────────────────────►│
//   TPOT = (e2e − TTFT) / (output tokens − 1)

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace nanoserve::bench {

using Clock = std::chrono::steady_clock;

/// One request of the workload (token ids, so both backends get exactly the same prompt).
struct BenchRequest {
  int index = 0;               // position in the workload
  double arrival_s = 0;        // when it is due, after the start of the run
  std::vector<int> prompt;     // token ids (BOS first for synthetic prompts)
  int max_tokens = 1;
  float temperature = 0;
  uint64_t seed = 0;
  bool ignore_eos = false;     // run to max_tokens (vLLM's ignore_eos)
  std::vector<int> stop_token_ids;  // engine backend: what ends the text (the server's own)
};

/// What the client saw of one request; times in seconds after the run's start.
struct RequestOutcome {
  bool sent = false;       // false: not sent (the duration bound came first)
  bool ok = false;         // finished (stop or length) with a complete response
  bool incomplete = false;  // cut by the duration bound
  std::string error;       // why not ok
  double send_s = 0;       // when it was sent
  int prompt_tokens = 0;
  int output_tokens = 0;   // completion tokens (the server's usage)
  std::vector<double> chunk_s;  // arrival time of every piece of text
  double end_s = 0;        // the end of the response
};

/// A way to run one request, called from many threads at once.
class Backend {
 public:
  virtual ~Backend() = default;
  /// Sends `r` and waits for its end, or until `deadline` (then it is cut: `incomplete`).
  virtual RequestOutcome run(const BenchRequest& r, Clock::time_point start,
                             Clock::time_point deadline) = 0;
  /// "http" or "engine".
  virtual std::string name() const = 0;
};

/// Seconds from `start` to now.
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace nanoserve::bench
