// CUDA graphs in the simulator: stream capture records kernel launches (with a copy of their
// arguments), cudaMemcpyAsync and cudaMemsetAsync as nodes; an instantiated graph replays them
// in capture order on the launching stream. Calls CUDA prohibits during a capture fail with
// CUDA's error codes and invalidate the capture.
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kernels/sim/graph_capture.h"
#include "kernels/sim/runtime_state.h"

/// The simulator's graph: operations in capture order (a capture on one stream is a chain).
struct CUgraph_st {
  std::vector<nanoserve::sim::GraphNode> nodes;
};

/// The simulator's executable graph: its own copy of the nodes (updatable in place).
struct CUgraphExec_st {
  std::vector<nanoserve::sim::GraphNode> nodes;
};

namespace nanoserve::sim {
namespace {

struct Capture {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  bool invalidated = false;
  std::string why;  // what invalidated it
  std::vector<GraphNode> nodes;
};

struct GraphState {
  std::mutex mutex;
  std::unordered_map<cudaStream_t, Capture> captures;
  std::atomic<int> active{0};  // captures.size(), readable without the lock
  std::unordered_set<cudaGraph_t> graphs;
  std::unordered_set<cudaGraphExec_t> execs;
};

GraphState& state() {
  static GraphState s;
  return s;
}

bool is_legacy(cudaStream_t stream) { return stream == nullptr || stream == cudaStreamLegacy; }

// Does `c` prohibit potentially unsafe calls on the calling thread (CUDA's capture modes)?
bool prohibits_unsafe(const Capture& c) {
  return c.mode == cudaStreamCaptureModeGlobal ||
         (c.mode == cudaStreamCaptureModeThreadLocal && c.thread == std::this_thread::get_id());
}

void invalidate(Capture& c, const std::string& why) {
  if (!c.invalidated) {
    c.invalidated = true;
    c.why = why;
  }
}

const char* node_kind_name(NodeKind kind) {
  switch (kind) {
    case NodeKind::kKernel:
      return "kernel";
    case NodeKind::kMemcpy:
      return "memcpy";
    case NodeKind::kMemset:
      return "memset";
  }
  return "?";
}

}  // namespace

bool any_capture_active() { return state().active.load(std::memory_order_acquire) > 0; }

bool stream_is_capturing(cudaStream_t stream) {
  if (!any_capture_active()) return false;
  GraphState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.captures.count(stream) == 1;
}

cudaError_t capture_or_run(const char* api, cudaStream_t stream, GraphNode node, bool* recorded) {
  *recorded = false;
  if (!any_capture_active()) return cudaSuccess;
  GraphState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.captures.find(stream);
  if (it != s.captures.end()) {
    Capture& c = it->second;
    if (c.invalidated) {
      return record_error(cudaErrorStreamCaptureInvalidated,
                          std::string(api) + ": the capture on this stream was invalidated by " +
                              c.why + "; end it with cudaStreamEndCapture and capture again");
    }
    c.nodes.push_back(std::move(node));
    *recorded = true;
    return cudaSuccess;
  }
  if (is_legacy(stream)) {
    bool conflict = false;
    for (auto& [captured, c] : s.captures) {
      if (c.mode == cudaStreamCaptureModeRelaxed) continue;
      invalidate(c, std::string(api) + " on the legacy default stream");
      conflict = true;
    }
    if (conflict) {
      return record_error(cudaErrorStreamCaptureImplicit,
                          std::string(api) +
                              " on the legacy default stream while another stream captures: it "
                              "would synchronize with the capturing stream (use that stream, or "
                              "a stream created with cudaStreamNonBlocking)");
    }
  }
  return cudaSuccess;
}

cudaError_t check_unsafe_during_capture(const char* api, cudaError_t code) {
  if (!any_capture_active()) return cudaSuccess;
  GraphState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  bool prohibited = false;
  for (auto& [stream, c] : s.captures) {
    if (!prohibits_unsafe(c)) continue;
    invalidate(c, std::string(api));
    prohibited = true;
  }
  if (!prohibited) return cudaSuccess;
  return record_error(code, std::string(api) +
                                " is not permitted while a stream captures a graph (the capture "
                                "is invalidated); do it before cudaStreamBeginCapture");
}

cudaError_t check_sync_during_capture(const char* api, cudaStream_t stream) {
  if (!any_capture_active()) return cudaSuccess;
  GraphState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.captures.find(stream);
  if (it == s.captures.end()) return cudaSuccess;
  invalidate(it->second, std::string(api));
  return record_error(cudaErrorStreamCaptureUnsupported,
                      std::string(api) +
                          ": the stream is capturing a graph; nothing runs until the graph is "
                          "launched, so it cannot be synchronized (the capture is invalidated)");
}

void drop_capture(cudaStream_t stream) {
  GraphState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.captures.erase(stream);
  s.active.store(static_cast<int>(s.captures.size()), std::memory_order_release);
}

namespace {

// Replays one node on `stream` (which is not capturing).
cudaError_t replay(const GraphNode& node, cudaStream_t stream) {
  switch (node.kind) {
    case NodeKind::kKernel:
      return launch_kernel(node.kernel, node.grid, node.block, node.smem_bytes, stream, node.body,
                           node.closure.get());
    case NodeKind::kMemcpy:
      return cudaMemcpyAsync(node.dst, node.src, node.count, node.copy_kind, stream);
    case NodeKind::kMemset:
      return cudaMemsetAsync(node.dst, node.value, node.count, stream);
  }
  return cudaErrorUnknown;
}

// Why `next` cannot replace `current` in an executable graph (CUDA's update rules), or
// cudaGraphExecUpdateSuccess.
cudaGraphExecUpdateResult update_conflict(const GraphNode& current, const GraphNode& next,
                                          std::string* why) {
  if (current.kind != next.kind) {
    *why = std::string("a ") + node_kind_name(current.kind) + " node became a " +
           node_kind_name(next.kind) + " node";
    return cudaGraphExecUpdateErrorNodeTypeChanged;
  }
  if (current.kind == NodeKind::kKernel && current.body != next.body) {
    *why = "a kernel node launches a kernel with other parameter types";
    return cudaGraphExecUpdateErrorUnsupportedFunctionChange;
  }
  if (current.kind == NodeKind::kMemcpy && current.copy_kind != next.copy_kind) {
    *why = "a memcpy node changed its direction";
    return cudaGraphExecUpdateErrorParametersChanged;
  }
  return cudaGraphExecUpdateSuccess;
}

}  // namespace
}  // namespace nanoserve::sim

namespace sim = nanoserve::sim;

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  if (!sim::is_valid_stream(stream)) {
    return sim::record_error(cudaErrorInvalidResourceHandle,
                             "cudaStreamBeginCapture: not a live stream");
  }
  if (sim::is_legacy(stream)) {
    return sim::record_error(cudaErrorStreamCaptureUnsupported,
                             "cudaStreamBeginCapture: the legacy default stream cannot be "
                             "captured; capture a stream made with cudaStreamCreate");
  }
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed) {
    return sim::record_error(cudaErrorInvalidValue, "cudaStreamBeginCapture: unknown mode " +
                                                        std::to_string(static_cast<int>(mode)));
  }
  sim::GraphState& s = sim::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.captures.count(stream) == 1) {
    return sim::record_error(cudaErrorIllegalState,
                             "cudaStreamBeginCapture: the stream is already capturing");
  }
  sim::Capture& c = s.captures[stream];
  c.mode = mode;
  c.thread = std::this_thread::get_id();
  s.active.store(static_cast<int>(s.captures.size()), std::memory_order_release);
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  if (pGraph == nullptr) {
    return sim::record_error(cudaErrorInvalidValue, "cudaStreamEndCapture: null graph pointer");
  }
  *pGraph = nullptr;
  sim::GraphState& s = sim::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.captures.find(stream);
  if (it == s.captures.end()) {
    return sim::record_error(cudaErrorIllegalState,
                             "cudaStreamEndCapture: the stream is not capturing");
  }
  if (it->second.thread != std::this_thread::get_id() &&
      it->second.mode != cudaStreamCaptureModeRelaxed) {
    return sim::record_error(cudaErrorStreamCaptureWrongThread,
                             "cudaStreamEndCapture: called from another thread than "
                             "cudaStreamBeginCapture");
  }
  sim::Capture c = std::move(it->second);
  s.captures.erase(it);
  s.active.store(static_cast<int>(s.captures.size()), std::memory_order_release);
  if (c.invalidated) {
    return sim::record_error(cudaErrorStreamCaptureInvalidated,
                             "cudaStreamEndCapture: the capture was invalidated by " + c.why);
  }
  *pGraph = new CUgraph_st{std::move(c.nodes)};
  s.graphs.insert(*pGraph);
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* pStatus) {
  if (pStatus == nullptr) {
    return sim::record_error(cudaErrorInvalidValue, "cudaStreamIsCapturing: null status");
  }
  if (!sim::is_valid_stream(stream)) {
    return sim::record_error(cudaErrorInvalidResourceHandle,
                             "cudaStreamIsCapturing: not a live stream");
  }
  sim::GraphState& s = sim::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.captures.find(stream);
  *pStatus = it == s.captures.end()   ? cudaStreamCaptureStatusNone
             : it->second.invalidated ? cudaStreamCaptureStatusInvalidated
                                      : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* numNodes) {
  sim::GraphState& s = sim::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (numNodes == nullptr || s.graphs.count(graph) == 0) {
    return sim::record_error(cudaErrorInvalidValue,
                             "cudaGraphGetNodes: not a live graph, or null count");
  }
  if (nodes != nullptr) {
    return sim::record_error(cudaErrorNotSupported,
                             "cudaGraphGetNodes: node handles are not simulated (pass null "
                             "nodes to read the count)");
  }
  *numNodes = graph->nodes.size();
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                 unsigned long long flags) {
  if (pGraphExec == nullptr) {
    return sim::record_error(cudaErrorInvalidValue, "cudaGraphInstantiate: null exec pointer");
  }
  *pGraphExec = nullptr;
  if (flags != 0) {
    return sim::record_error(
        cudaErrorNotSupported,
        "cudaGraphInstantiate: flags " + std::to_string(flags) + " are not simulated (only 0)");
  }
  sim::GraphState& s = sim::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.graphs.count(graph) == 0) {
    return sim::record_error(cudaErrorInvalidValue, "cudaGraphInstantiate: not a live graph");
  }
  *pGraphExec = new CUgraphExec_st{graph->nodes};  // closures are immutable: shared
  s.execs.insert(*pGraphExec);
  return cudaSuccess;
}

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                                cudaGraphExecUpdateResultInfo* resultInfo) {
  if (resultInfo == nullptr) {
    return sim::record_error(cudaErrorInvalidValue, "cudaGraphExecUpdate: null resultInfo");
  }
  *resultInfo = cudaGraphExecUpdateResultInfo{cudaGraphExecUpdateError, nullptr, nullptr};
  sim::GraphState& s = sim::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.execs.count(hGraphExec) == 0 || s.graphs.count(hGraph) == 0) {
    return sim::record_error(cudaErrorInvalidValue,
                             "cudaGraphExecUpdate: not a live executable graph and graph");
  }
  std::vector<sim::GraphNode>& current = hGraphExec->nodes;
  const std::vector<sim::GraphNode>& next = hGraph->nodes;
  std::string why;
  if (current.size() != next.size()) {
    resultInfo->result = cudaGraphExecUpdateErrorTopologyChanged;
    why = "the graph has " + std::to_string(next.size()) + " nodes, the executable graph " +
          std::to_string(current.size());
  } else {
    for (std::size_t i = 0; i < current.size() && why.empty(); ++i) {
      const cudaGraphExecUpdateResult r = sim::update_conflict(current[i], next[i], &why);
      if (r != cudaGraphExecUpdateSuccess) {
        resultInfo->result = r;
        why = "node " + std::to_string(i) + ": " + why;
      }
    }
  }
  if (!why.empty()) {
    return sim::record_error(cudaErrorGraphExecUpdateFailure, "cudaGraphExecUpdate: " + why);
  }
  current = next;
  resultInfo->result = cudaGraphExecUpdateSuccess;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  std::vector<sim::GraphNode> nodes;
  {
    sim::GraphState& s = sim::state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.execs.count(graphExec) == 0) {
      return sim::record_error(cudaErrorInvalidValue,
                               "cudaGraphLaunch: not a live executable graph");
    }
    nodes = graphExec->nodes;  // a copy: an update during the replay does not affect it
  }
  if (!sim::is_valid_stream(stream)) {
    return sim::record_error(cudaErrorInvalidResourceHandle, "cudaGraphLaunch: not a live stream");
  }
  if (sim::stream_is_capturing(stream)) {
    return sim::record_error(cudaErrorNotSupported,
                             "cudaGraphLaunch into a capturing stream (a child graph) is not "
                             "simulated");
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const cudaError_t e = sim::replay(nodes[i], stream);
    if (e != cudaSuccess) {
      return sim::record_error(e, "cudaGraphLaunch: node " + std::to_string(i) + " (" +
                                      sim::node_kind_name(nodes[i].kind) +
                                      ") failed: " + sim::last_error_detail());
    }
  }
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  sim::GraphState& s = sim::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.execs.erase(graphExec) == 0) {
    return sim::record_error(
        cudaErrorInvalidValue,
        "cudaGraphExecDestroy: not a live executable graph (destroyed twice?)");
  }
  delete graphExec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  sim::GraphState& s = sim::state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.graphs.erase(graph) == 0) {
    return sim::record_error(cudaErrorInvalidValue,
                             "cudaGraphDestroy: not a live graph (destroyed twice?)");
  }
  delete graph;
  return cudaSuccess;
}
