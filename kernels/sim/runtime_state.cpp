// Last error per host thread, per-kernel attributes and the set of live streams.
#include "kernels/sim/runtime_state.h"

#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "kernels/sim/launch.h"

namespace nanoserve::sim {
namespace {

struct ErrorState {
  cudaError_t last = cudaSuccess;         // what cudaGetLastError returns (cleared by it)
  cudaError_t detail_code = cudaSuccess;  // the code `detail` explains (kept until the next error)
  std::string detail;
};

ErrorState& error_state() {
  thread_local ErrorState state;  // CUDA's last error is per host thread
  return state;
}

struct SharedState {
  std::mutex mutex;
  std::unordered_map<const void*, std::size_t> max_smem;
  std::unordered_set<cudaStream_t> streams;
};

SharedState& shared() {
  static SharedState state;
  return state;
}

}  // namespace

cudaError_t record_error(cudaError_t code, std::string detail) {
  ErrorState& state = error_state();
  state.last = code;
  state.detail_code = code;
  state.detail = std::move(detail);
  return code;
}

cudaError_t take_last_error() { return std::exchange(error_state().last, cudaSuccess); }

cudaError_t peek_last_error() { return error_state().last; }

const std::string& last_error_detail() { return error_state().detail; }

cudaError_t last_error_detail_code() { return error_state().detail_code; }

std::size_t max_dynamic_smem(const void* kernel) {
  SharedState& s = shared();
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.max_smem.find(kernel);
  return it == s.max_smem.end() ? DeviceLimits::kSharedPerBlock : it->second;
}

bool has_max_dynamic_smem(const void* kernel) {
  SharedState& s = shared();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.max_smem.count(kernel) != 0;
}

void set_max_dynamic_smem(const void* kernel, std::size_t bytes) {
  SharedState& s = shared();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.max_smem[kernel] = bytes;
}

void add_stream(cudaStream_t stream) {
  SharedState& s = shared();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.streams.insert(stream);
}

bool remove_stream(cudaStream_t stream) {
  SharedState& s = shared();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.streams.erase(stream) == 1;
}

bool is_valid_stream(cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) return true;
  SharedState& s = shared();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.streams.count(stream) == 1;
}

}  // namespace nanoserve::sim
