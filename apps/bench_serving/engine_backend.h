#pragma once
/// \file
/// \brief bench_serving's in-process backend: the engine `nanoserve serve` runs (an
/// `AsyncEngine` over the `ModelExecutor`, configured as serve configures it), fed the same
/// token ids, each request read from its `RequestStream` by a thread of its own — everything
/// the server does except HTTP, JSON and SSE. Against it, the HTTP backend's extra latency is
/// the server's cost.

#include <memory>
#include <string>

#include "apps/bench_serving/backend.h"
#include "common/engine/model/device_info.h"
#include "common/engine/model/device_model.h"
#include "common/engine/serve/async_engine.h"
#include "common/model_bundle.h"

namespace nanoserve::bench {

/// \brief The engine's configuration, as `nanoserve serve`'s flags of the same names.
struct EngineBackendOptions {
  std::string model;         ///< --model
  std::string dtype = engine::default_dtype();  ///< --dtype (bf16 on a GPU build, fp32 in the simulator)
  int max_num_seqs = 64;     ///< --max-num-seqs
  int max_num_batched_tokens = 512;  ///< --max-num-batched-tokens
  int block_size = 16;       ///< --block-size
  int num_kv_blocks = 0;     ///< --num-kv-blocks (0: max_num_seqs full-length requests)
  int max_waiting = 256;     ///< --max-waiting
};

/// \brief Runs requests on an engine in this process.
class EngineBackend : public Backend {
 public:
  /// \brief Loads the model onto the device (the simulator in the sim build) and starts the
  /// engine thread.
  explicit EngineBackend(const EngineBackendOptions& options);
  ~EngineBackend() override;
  RequestOutcome run(const BenchRequest& r, Clock::time_point start,
                     Clock::time_point deadline) override;
  std::string name() const override { return "engine"; }
  /// \brief The engine's state (steps, step time, CPU time of its thread).
  engine::EngineSnapshot snapshot() { return engine_->snapshot(); }
  /// \brief The device it runs on, in words.
  const std::string& device() const { return device_; }
  /// \brief Most tokens of one request (prompt + output): the model's context.
  int context() const { return engine_->config().max_model_len; }

 private:
  ModelBundle bundle_;
  std::unique_ptr<engine::DeviceModel> model_;
  std::unique_ptr<engine::AsyncEngine> engine_;
  std::string device_;
};

}  // namespace nanoserve::bench
