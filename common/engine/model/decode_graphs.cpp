#include "common/engine/model/decode_graphs.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace nanoserve::engine {

std::vector<int> cuda_graph_buckets(int max_rows) {
  std::vector<int> buckets;
  for (int b : {1, 2, 4}) {
    if (b <= max_rows) buckets.push_back(b);
  }
  for (int b = 8; b <= max_rows; b += 8) buckets.push_back(b);
  if (max_rows >= 1 && buckets.back() != max_rows) buckets.push_back(max_rows);
  return buckets;
}

int graph_bucket(const std::vector<int>& buckets, int rows) {
  const auto it = std::lower_bound(buckets.begin(), buckets.end(), rows);
  return it == buckets.end() ? 0 : *it;
}

DecodeGraphs::DecodeGraphs(std::vector<int> buckets)
    : buckets_(std::move(buckets)), graphs_(buckets_.size()) {}

DecodeGraphs::~DecodeGraphs() {
  for (Graph& g : graphs_) {
    if (g.exec != nullptr) cudaGraphExecDestroy(g.exec);
  }
}

cudaGraph_t DecodeGraphs::capture(cudaStream_t stream, const std::function<void()>& launches) {
  // Thread-local mode: an allocation or sync on this thread while it captures is an error (it
  // would not be in the graph), while other threads' runners may allocate freely.
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    launches();
  } catch (...) {
    cudaGraph_t partial = nullptr;  // end the capture so the stream works again, then rethrow
    if (cudaStreamEndCapture(stream, &partial) == cudaSuccess && partial != nullptr) {
      cudaGraphDestroy(partial);
    }
    (void)cudaGetLastError();  // the capture's error must not fail the next launch
    throw;
  }
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));  // fails if a launch broke a capture rule
  return graph;
}

void DecodeGraphs::run(int bucket, const std::vector<std::int64_t>& key, cudaStream_t stream,
                       const std::function<void()>& launches) {
  const auto it = std::find(buckets_.begin(), buckets_.end(), bucket);
  if (it == buckets_.end()) {
    throw InvalidArgument("DecodeGraphs: " + std::to_string(bucket) + " rows is not a bucket");
  }
  if (stream == nullptr || stream == cudaStreamLegacy) {
    throw InvalidArgument("DecodeGraphs: the legacy default stream cannot be captured");
  }
  Graph& g = graphs_[std::size_t(it - buckets_.begin())];
  if (g.exec == nullptr || g.key != key) {
    struct Captured {  // the graph is only needed until it is instantiated
      cudaGraph_t graph;
      ~Captured() { cudaGraphDestroy(graph); }
    } captured{capture(stream, launches)};
    const cudaGraph_t graph = captured.graph;
    if (g.exec == nullptr) {
      CUDA_CHECK(cudaGraphInstantiate(&g.exec, graph, 0));
      ++counters_.captures;
    } else {
      // Same kernels in the same order, new arguments: update the executable graph in place
      // (cheaper than instantiating); if CUDA refuses, instantiate afresh.
      cudaGraphExecUpdateResultInfo info{};
      if (cudaGraphExecUpdate(g.exec, graph, &info) != cudaSuccess) {
        (void)cudaGetLastError();
        CUDA_CHECK(cudaGraphExecDestroy(g.exec));
        g.exec = nullptr;
        CUDA_CHECK(cudaGraphInstantiate(&g.exec, graph, 0));
      }
      ++counters_.updates;
    }
    g.key = key;
  }
  CUDA_CHECK(cudaGraphLaunch(g.exec, stream));
  ++counters_.replays;
}

}  // namespace nanoserve::engine
