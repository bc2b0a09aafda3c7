#pragma once
/// \file
/// \brief The runs chapter 4's program makes: one workload through continuous batching (and,
/// to compare, static batching) on the model or on a cost model, and the sweeps behind the
/// tutorial's plots — request rate, chunked prefill on/off, KV pool size.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/engine/model/device_model.h"
#include "common/engine/model/step_counters.h"
#include "common/engine/serve/scheduler.h"
#include "common/harness/clocks.h"
#include "common/harness/modeled_executor.h"
#include "common/harness/workload_options.h"
#include "common/harness/serving_metrics.h"
#include "common/engine/serve/static_batcher.h"

namespace nanoserve::ch04 {

/// \brief What runs the forward passes.
enum class ExecutorKind {
  kModel,      ///< the model through the kernels (ModelExecutor), timed by the chosen clock
  kCostModel,  ///< the FakeExecutor in virtual time: step_s + row_s · rows (a GPU-like shape),
               ///< or the roofline model of `RunSetup::cost` when it has a device
};

/// \brief Everything a run needs besides its workload.
struct RunSetup {
  const engine::DeviceModel* model = nullptr;  ///< used by kModel
  ExecutorKind executor = ExecutorKind::kModel;  ///< model or cost model
  harness::ClockKind clock = harness::ClockKind::kWall;  ///< for kModel
  engine::SchedulerConfig scheduler;   ///< continuous batching
  engine::StaticBatchConfig batcher;   ///< static batching (same pool and context)
  int vocab_size = 0;          ///< for the cost model's fake tokens
  std::optional<DType> kv_dtype;  ///< kModel's KV cache storage type; unset = the model's
  /// \brief Decode steps replay CUDA graphs (kModel's `ModelExecutorOptions::cuda_graphs`; the
  /// cost model then models them as graph launches too). `--no-cuda-graphs` turns it off.
  bool cuda_graphs = true;
  /// \brief `--cost-device`: the roofline model of every pass (device null: none). With
  /// kCostModel it is the virtual clock; with kModel its total is reported beside the clock's.
  harness::PassTimer cost;
};

/// \brief `requests` under continuous batching; with a cost device and kModel, `modeled_s`
/// (when not null) receives the Σ of the passes' roofline times, and with kModel `steps` (when
/// not null) the executor's step counters (graph replays, uploads, …).
engine::ServingRun run_continuous_on(const RunSetup& setup, const std::vector<engine::Request>& requests,
                                     double* modeled_s = nullptr,
                                     engine::StepCounters* steps = nullptr);
/// \brief `requests` under static batching (wasted rows computed on the model); `modeled_s`
/// and `steps` as for `run_continuous_on`.
engine::ServingRun run_static_on(const RunSetup& setup, const std::vector<engine::Request>& requests,
                                 double* modeled_s = nullptr, engine::StepCounters* steps = nullptr);

/// \brief "model …", "cost model (FakeExecutor: 10 ms per pass + 0.2 ms per row …)" or, with a
/// cost device, "cost model (roofline, H200 …)".
std::string describe(const RunSetup& setup);

/// \brief Throughput and latency of static (batch size `setup.batcher.batch_size`) and
/// continuous batching at each rate of `rates` (the workload regenerated per rate with the
/// same seed). Prints a table; appends records with table "rate_sweep".
void sweep_rate(const RunSetup& setup, harness::WorkloadOptions workload, const Tokenizer& tok,
                const std::vector<double>& rates, nlohmann::json& records);
/// \brief Chunked prefill on and off (token budget `budget` when on) on the same workload:
/// TTFT, ITL and TPOT. Appends records with table "chunked".
void sweep_chunked(const RunSetup& setup, const std::vector<engine::Request>& requests,
                   const std::vector<int>& budgets, nlohmann::json& records);
/// \brief Preemptions, throughput and latency as the KV pool shrinks to each of `blocks`.
/// Appends records with table "pool".
void sweep_pool(const RunSetup& setup, const std::vector<engine::Request>& requests,
                const std::vector<int>& blocks, nlohmann::json& records);

}  // namespace nanoserve::ch04
