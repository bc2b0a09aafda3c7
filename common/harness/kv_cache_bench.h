#pragma once
/// \file
/// \brief Host cost of the KV cache manager's calls: how many nanoseconds `allocate`,
/// `append_slot` and `free` take with thousands of live sequences. A scheduler makes these
/// calls for every sequence at every step, so they must stay far below a forward pass
/// (microseconds, not milliseconds). No program reports it: the chapter-2 test
/// `Ch02KVCacheBench.RunsTheWorkloadItDescribes` (tests/ch02/test_kv_cache_bench.cpp) runs it
/// with 512 sequences, checks the calls, hit rate and utilization it exercises, and prints the
/// per-call costs without asserting any timing.

#include <cstdint>

namespace nanoserve::harness {

/// \brief The workload `bench_kv_cache_manager` runs.
struct KVCacheBenchOptions {
  int num_seqs = 4096;              ///< sequences, all live at once
  int prompt_tokens = 256;          ///< tokens per prompt
  int shared_prefix_tokens = 128;   ///< leading prompt tokens common to every sequence
  int decode_tokens = 64;           ///< tokens appended to each sequence, one at a time
  int block_size = 16;              ///< tokens per block
  bool prefix_caching = true;       ///< hash and reuse full blocks
  uint64_t seed = 1;                ///< keys the random prompt suffixes (RngStream::kWorkload)
};

/// \brief Per-call costs (wall time of a phase divided by its calls) and what was exercised.
struct KVCacheBenchResult {
  int num_blocks = 0;             ///< pool size: every sequence fits, nothing is evicted
  long long allocate_calls = 0;   ///< one per sequence
  long long append_calls = 0;     ///< num_seqs * decode_tokens
  long long free_calls = 0;       ///< one per sequence
  double allocate_ns = 0;         ///< mean ns per `allocate` (prefix lookup included)
  double append_ns = 0;           ///< mean ns per `append_slot`
  double free_ns = 0;             ///< mean ns per `free`
  double hit_rate = 0;            ///< prefix-cache block hit rate of the allocations
  double utilization = 0;         ///< used / allocated slots after the decode phase
};

/// \brief Allocates `num_seqs` sequences, appends `decode_tokens` tokens to each in
/// round-robin order (as a decode step does), then frees them all, timing each phase.
/// Throws `InvalidArgument` for non-positive sizes or a shared prefix longer than the prompt.
KVCacheBenchResult bench_kv_cache_manager(const KVCacheBenchOptions& options);

}  // namespace nanoserve::harness
