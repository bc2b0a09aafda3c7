#pragma once
/// \file
/// \brief What the chapter 3 and 4 programs share to run one workload through a batching
/// policy on the model: length distributions and workloads from command-line text, a clock
/// that charges each forward pass its measured CPU time, and the serving metrics table.
///
/// Two clocks drive a run (`ClockKind`):
///
///     wall  the steady clock: arrivals wait in real time, a pass costs what it took —
///           what a server sees, but on a shared machine other processes' load shows up
///     cpu   virtual time that jumps over idle gaps and advances, per forward pass, by the
///           process CPU time the pass really used — the same real execution, immune to
///           load from other processes (the simulator runs on one thread)

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/engine/executor.h"
#include "common/engine/serving_metrics.h"
#include "common/engine/workload.h"

namespace nanoserve {
class Tokenizer;
}

namespace nanoserve::engine {

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
std::vector<Request> build_workload(const WorkloadOptions& options, const Tokenizer& tokenizer,
                                    int vocab_size);

/// \brief One line for reports: "12 requests, rate 4/s, prompts chat, outputs fixed:32" or
/// "12 requests from data/traces/x.jsonl".
std::string describe_workload(const WorkloadOptions& options, std::size_t num_requests);

/// \brief Which clock a run uses (see the file comment).
enum class ClockKind {
  kWall,  ///< the steady clock
  kCpu,   ///< virtual time advanced by each pass's process CPU time
};
/// \brief Parses "wall" / "cpu"; throws `InvalidArgument` otherwise.
ClockKind parse_clock_kind(const std::string& text);

/// \brief An executor that advances a `SimulatedClock` by the process CPU time each `execute`
/// of the wrapped executor takes (the `cpu` clock).
class CpuTimedExecutor final : public Executor {
 public:
  /// \brief Wraps `inner`; both must outlive this.
  CpuTimedExecutor(Executor& inner, SimulatedClock& clock) : inner_(inner), clock_(clock) {}
  /// \brief Forwards to the wrapped executor.
  void attach_kv(const KVCacheManager* kv) override { inner_.attach_kv(kv); }
  /// \brief Runs the wrapped executor and advances the clock by its CPU time.
  std::vector<int> execute(const SchedulerOutput& output) override;

 private:
  Executor& inner_;
  SimulatedClock& clock_;
};

/// \brief A batching policy run: `run_static` or `run_continuous` with its workload and config
/// bound, given the executor and clock to use.
using PolicyRun = std::function<ServingRun(Executor& executor, Clock& clock)>;

/// \brief Runs `policy` on `executor` under a fresh clock of `kind` (the cpu clock wraps the
/// executor in a `CpuTimedExecutor`).
ServingRun run_with_clock(ClockKind kind, Executor& executor, const PolicyRun& policy);

/// \brief Process CPU seconds (CLOCK_PROCESS_CPUTIME_ID).
double process_cpu_seconds();

/// \brief Prints one row per (label, metrics) pair: requests, throughput in and out, TTFT,
/// TPOT, ITL P99, end-to-end latency mean/P50/P90/P99, preemptions, prefix hits and wasted
/// rows. Times in ms.
void print_metrics_table(const std::vector<std::pair<std::string, ServingMetrics>>& rows);

}  // namespace nanoserve::engine
