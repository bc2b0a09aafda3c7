#pragma once
/// \file
/// \brief `DecodeGraphs`: a decode step's kernel launches captured once per batch-size bucket as
/// a CUDA graph, then replayed with new inputs (vLLM's CUDA graphs, "piecewise" aside).
///
/// A decode step of a small model is a few hundred short kernels; launched one by one, the CPU
/// spends a few microseconds on each and the GPU idles between them. A graph records the whole
/// sequence once (stream capture) and replays it with one `cudaGraphLaunch`. What a graph
/// bakes in is fixed: every launch's grid, every host argument (row counts, pointers). So
///
///     batch sizes     one graph per bucket (1, 2, 4, 8, 16, 24, 32, … ≤ the max batch); a batch
///                     of 5 runs the 8-row graph: 3 padding rows that write no KV, attend to
///                     nothing and whose logits nobody samples
///     inputs          at fixed device addresses: the step uploads token ids, positions, slots,
///                     block tables and lengths into the same place (StepStaging) every step,
///                     and the graph reads whatever is there
///     shapes          launch shapes may depend only on the bucket: block tables are padded to
///                     the longest sequence allowed, so a sequence that grows into a new block
///                     replays the same graph
///
/// A key says what a graph baked in (device addresses of the inputs, the cache's workspace, …).
/// When it changes — a buffer grew and moved — the bucket is captured again and the executable
/// graph updated in place (`cudaGraphExecUpdate`), or re-instantiated if the update is refused.
///
/// Capture rules (the simulator enforces CUDA's, kernels/sim/README.md): nothing in the
/// captured launches may allocate (`cudaMalloc`), copy synchronously, synchronize, or touch the
/// legacy default stream; the capture runs on the runner's own stream in thread-local mode.

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/cuda_compat.h"

namespace nanoserve::engine {

/// \brief The batch sizes vLLM captures: 1, 2, 4, then every multiple of 8, up to and
/// including `max_rows` (which is added when it is not one of them). Empty for `max_rows < 1`.
std::vector<int> cuda_graph_buckets(int max_rows);

/// \brief A device address (or any pointer) as an entry of a graph's key.
inline std::int64_t graph_key_of(const void* address) {
  return static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(address));
}

/// \brief The smallest of `buckets` (ascending) that holds `rows`, or 0 when none does.
int graph_bucket(const std::vector<int>& buckets, int rows);

/// \brief What the graphs of a runner did so far.
///
/// \par Example
/// \snippet tests/ch01/test_decode_graphs.cpp DecodeGraphs
struct GraphCounters {
  long long captures = 0;  ///< graphs captured and instantiated (first use of a bucket)
  long long updates = 0;   ///< re-captures because the key changed (an address moved)
  long long replays = 0;   ///< `cudaGraphLaunch`es
};

/// \brief One executable graph per bucket, captured on first use and replayed after.
///
/// \par Example
/// \snippet tests/ch01/test_decode_graphs.cpp DecodeGraphs
class DecodeGraphs {
 public:
  /// \brief Graphs for `buckets` (ascending sizes, none captured yet).
  explicit DecodeGraphs(std::vector<int> buckets);
  ~DecodeGraphs();
  DecodeGraphs(const DecodeGraphs&) = delete;
  DecodeGraphs& operator=(const DecodeGraphs&) = delete;

  /// \brief Runs the graph of `bucket` on `stream`: replays it when it was captured with the
  /// same `key`; otherwise first captures `launches` (which must enqueue the bucket's kernels on
  /// `stream` and nothing else) into it. Throws `InvalidArgument` for a size that is not a
  /// bucket or the legacy default stream, `CudaError` when the capture fails (e.g. a launch
  /// that allocates or synchronizes); the stream is no longer capturing afterwards.
  void run(int bucket, const std::vector<std::int64_t>& key, cudaStream_t stream,
           const std::function<void()>& launches);

  /// \brief The bucket sizes.
  const std::vector<int>& buckets() const { return buckets_; }
  /// \brief Captures, updates and replays so far.
  const GraphCounters& counters() const { return counters_; }

 private:
  struct Graph {
    cudaGraphExec_t exec = nullptr;
    std::vector<std::int64_t> key;  // what it was captured with
  };
  cudaGraph_t capture(cudaStream_t stream, const std::function<void()>& launches);

  std::vector<int> buckets_;
  std::vector<Graph> graphs_;  // one per bucket
  GraphCounters counters_;
};

}  // namespace nanoserve::engine
