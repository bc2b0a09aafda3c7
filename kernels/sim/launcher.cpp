// launch_kernel: validation like the CUDA runtime's, then the blocks in the chosen order on one
// or more OS threads, and the first failure (by start order) reported as a launch error.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <memory>
#include <string>
#include <utility>

#include "kernels/sim/block_scheduler.h"
#include "kernels/sim/elf_symbols.h"
#include "kernels/sim/graph_capture.h"
#include "kernels/sim/permutation.h"
#include "kernels/sim/runtime_state.h"
#include "kernels/sim/thread_pool.h"

namespace nanoserve::sim {
namespace {

std::string format_dim(dim3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

// Empty if the configuration is one CUDA accepts, else why not.
std::string check_configuration(dim3 grid, dim3 block) {
  const unsigned grid_dims[3] = {grid.x, grid.y, grid.z};
  const unsigned block_dims[3] = {block.x, block.y, block.z};
  const char* axis = "xyz";
  for (int i = 0; i < 3; ++i) {
    if (grid_dims[i] == 0 || grid_dims[i] > DeviceLimits::kMaxGridDim[i]) {
      return std::string("grid ") + format_dim(grid) + ": gridDim." + axis[i] + " must be in [1, " +
             std::to_string(DeviceLimits::kMaxGridDim[i]) + "]";
    }
    if (block_dims[i] == 0 || block_dims[i] > DeviceLimits::kMaxBlockDim[i]) {
      return std::string("block ") + format_dim(block) + ": blockDim." + axis[i] +
             " must be in [1, " + std::to_string(DeviceLimits::kMaxBlockDim[i]) + "]";
    }
  }
  const std::uint64_t threads = std::uint64_t{block.x} * block.y * block.z;
  if (threads > DeviceLimits::kMaxThreadsPerBlock) {
    return "block " + format_dim(block) + " has " + std::to_string(threads) + " threads; at most " +
           std::to_string(DeviceLimits::kMaxThreadsPerBlock) + " are allowed";
  }
  return {};
}

uint3 block_index(std::uint64_t linear, dim3 grid) {
  const auto x = static_cast<unsigned>(linear % grid.x);
  const auto y = static_cast<unsigned>((linear / grid.x) % grid.y);
  const auto z = static_cast<unsigned>(linear / (std::uint64_t{grid.x} * grid.y));
  return uint3{x, y, z};
}

// The first error by start ordinal wins, so that a multi-threaded run reports what a
// single-threaded run in the same order would have reported.
struct LaunchOutcome {
  std::mutex mutex;
  std::atomic<bool> failed{false};
  std::uint64_t ordinal = UINT64_MAX;
  std::string error;

  void report(std::uint64_t at, const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex);
    if (at < ordinal) {
      ordinal = at;
      error = message;
    }
    failed = true;
  }
};

// Runs blocks whose start ordinals come from `next` until none are left or a block failed.
void run_blocks(const LaunchSpec& spec, const Options& options, const Permutation& order,
                std::uint64_t total, std::atomic<std::uint64_t>& next, LaunchOutcome& outcome) {
  BlockScheduler& scheduler = BlockScheduler::for_this_thread();
  scheduler.begin_launch(spec);
  for (;;) {
    if (outcome.failed.load(std::memory_order_relaxed)) break;
    const std::uint64_t ordinal = next.fetch_add(1, std::memory_order_relaxed);
    if (ordinal >= total) break;
    const std::uint64_t linear = order(ordinal);
    // Threads inside a shuffled block get their own permutation, reproducible per block.
    const std::uint64_t thread_seed = mix64(options.seed ^ mix64(linear));
    try {
      if (!scheduler.run_block(block_index(linear, spec.grid), options.order, thread_seed)) {
        outcome.report(ordinal, scheduler.error());
      }
    } catch (const std::exception& e) {  // e.g. no memory left for another fiber stack
      outcome.report(ordinal, std::string("the simulator failed: ") + e.what());
    }
  }
  scheduler.end_launch();
}

}  // namespace

cudaError_t launch_kernel(const void* kernel, dim3 grid, dim3 block, std::size_t smem_bytes,
                          cudaStream_t stream, KernelBody body, const void* closure,
                          ClosureCopy copy, ClosureFree release) {
  const Options opts = options();
  if (!opts.env_error.empty()) return record_error(cudaErrorInvalidValue, opts.env_error);
  if (BlockScheduler::active() != nullptr) {
    return record_error(cudaErrorNotSupported,
                        "launch from inside a kernel (dynamic parallelism) is not simulated");
  }
  const std::string bad_configuration = check_configuration(grid, block);
  if (!bad_configuration.empty()) {
    return record_error(cudaErrorInvalidConfiguration, bad_configuration);
  }
  // Static shared memory counts as on hardware: ptxas refuses a kernel whose `__shared__`
  // variables exceed 48 KiB, and static + dynamic must fit the per-block opt-in maximum.
  const std::size_t static_smem = static_shared_bytes(kernel);
  if (static_smem > DeviceLimits::kSharedPerBlock) {
    return record_error(cudaErrorInvalidValue,
                        "the kernel's static __shared__ variables take " +
                            std::to_string(static_smem) + " bytes, over the " +
                            std::to_string(DeviceLimits::kSharedPerBlock) +
                            " a kernel may declare statically (nvcc's ptxas refuses it; use "
                            "dynamic shared memory and cudaFuncSetAttribute)");
  }
  if (static_smem + smem_bytes > DeviceLimits::kSharedPerBlockOptin) {
    return record_error(cudaErrorInvalidValue,
                        "launch needs " + std::to_string(static_smem) + " bytes of static and " +
                            std::to_string(smem_bytes) + " of dynamic shared memory, over the " +
                            std::to_string(DeviceLimits::kSharedPerBlockOptin) +
                            " a block can have");
  }
  std::size_t smem_limit = max_dynamic_smem(kernel);
  if (!has_max_dynamic_smem(kernel)) {  // the default leaves 48 KiB for static + dynamic
    smem_limit = DeviceLimits::kSharedPerBlock - static_smem;
  }
  if (smem_bytes > smem_limit) {
    return record_error(cudaErrorInvalidValue,
                        "launch requests " + std::to_string(smem_bytes) +
                            " bytes of dynamic shared memory (beside " +
                            std::to_string(static_smem) +
                            " static); the limit for this kernel is " +
                            std::to_string(smem_limit) +
                            " (raise it with cudaFuncSetAttribute("
                            "cudaFuncAttributeMaxDynamicSharedMemorySize), at most " +
                            std::to_string(DeviceLimits::kSharedPerBlockOptin) + ")");
  }
  if (!is_valid_stream(stream)) {
    return record_error(cudaErrorInvalidResourceHandle, "launch on a stream that is not live");
  }
  if (any_capture_active()) {  // record instead of running (kernels/sim/cudart_graph.cpp)
    GraphNode node;
    node.kind = NodeKind::kKernel;
    node.kernel = kernel;
    node.grid = grid;
    node.block = block;
    node.smem_bytes = smem_bytes;
    node.body = body;
    if (stream_is_capturing(stream)) {
      if (copy == nullptr || release == nullptr) {
        return record_error(cudaErrorStreamCaptureUnsupported,
                            "this launch cannot be captured (no way to copy its arguments)");
      }
      node.closure = std::shared_ptr<void>(copy(closure), release);
    }
    bool recorded = false;
    const cudaError_t e = capture_or_run("kernel launch", stream, std::move(node), &recorded);
    if (e != cudaSuccess || recorded) return e;
  }

  const LaunchSpec spec{body, closure, grid, block, smem_bytes, kernel};
  const std::uint64_t total = std::uint64_t{grid.x} * grid.y * grid.z;
  const Permutation order(opts.order, opts.seed, total);
  std::atomic<std::uint64_t> next{0};
  LaunchOutcome outcome;
  int os_threads = opts.os_threads;
#if defined(NANOSERVE_ASAN)
  os_threads = 1;  // __shared__ is a plain static under ASan: one block at a time
#endif
  if (static_cast<std::uint64_t>(os_threads) > total) os_threads = static_cast<int>(total);
  if (os_threads <= 1) {
    run_blocks(spec, opts, order, total, next, outcome);
  } else {
    ThreadPool::instance().run(os_threads,
                               [&](int) { run_blocks(spec, opts, order, total, next, outcome); });
  }
  if (outcome.failed) return record_error(cudaErrorLaunchFailure, outcome.error);
  return cudaSuccess;
}

}  // namespace nanoserve::sim
