#pragma once
/// \file
/// \brief Host cost of continuous batching's bookkeeping: microseconds per `schedule()` and
/// `update()` with hundreds of running sequences (chapter 4). A forward pass of a real model
/// takes milliseconds; a C++ scheduler should stay in microseconds so that it never becomes
/// the bottleneck (Python schedulers famously did). Reported by a test; not a timed assertion.

#include <cstdint>

namespace nanoserve::harness {

/// \brief Most running sequences `bench_scheduler` takes (`sched-bench --num-seqs`).
constexpr int kMaxBenchSeqs = 65536;

/// \brief The steady state `bench_scheduler` measures: `num_seqs` requests all running and
/// decoding one token per step (each count at most 65536, and num_seqs x (prompt_tokens +
/// decode_steps) at most 2^28 tokens).
struct SchedulerBenchOptions {
  int num_seqs = 256;        ///< running requests (max_num_seqs)
  int prompt_tokens = 128;   ///< tokens per prompt (prefilled before timing starts)
  int decode_steps = 128;    ///< tokens generated per sequence (>= 2): all but the first timed
  int block_size = 16;       ///< tokens per KV block
  bool prefix_caching = true;  ///< hash full blocks as they fill
  uint64_t seed = 1;         ///< keys the random prompts (RngStream::kWorkload)
};

/// \brief Mean host time per step, split by call.
struct SchedulerBenchResult {
  int num_seqs = 0;            ///< sequences scheduled in every timed step
  long long steps = 0;         ///< timed steps
  double schedule_us = 0;      ///< mean µs per schedule()
  double update_us = 0;        ///< mean µs per update()
  /// \brief schedule + update per step, divided by the sequences in it (ns).
  double ns_per_seq() const {
    return num_seqs == 0 ? 0.0 : (schedule_us + update_us) * 1e3 / double(num_seqs);
  }
};

/// \brief Admits and prefills `num_seqs` random prompts, then times `decode_steps` steps of
/// schedule() + update() with a token per sequence (no model: the executor's work is out of
/// the measurement). Throws `InvalidArgument` for non-positive sizes or decode_steps < 2.
SchedulerBenchResult bench_scheduler(const SchedulerBenchOptions& options);

}  // namespace nanoserve::harness
