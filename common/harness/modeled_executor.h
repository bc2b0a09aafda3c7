#pragma once
/// \file
/// \brief The roofline model (common/roofline/) applied to a serving run: the shape of the
/// forward pass a `SchedulerOutput` describes, its modeled time, and an `Executor` wrapper
/// that adds up the modeled time of every pass it forwards (chapters 3 and 4 print it next to
/// the time they measured or simulated).

#include <memory>
#include <vector>

#include "common/engine/serve/executor.h"
#include "common/model_config.h"
#include "common/roofline/pass_cost.h"

namespace nanoserve::harness {

/// \brief The pass `output` describes: one chunk per scheduled sequence (its start position,
/// rows, whether it samples), then one 1-row chunk at position 0 per wasted row — a padded
/// static batch pays every linear for them (their attention over padding is not charged).
roofline::PassShape pass_shape(const engine::SchedulerOutput& output);

/// \brief Modeled seconds of one pass of `config` on `device`.
struct PassTimer {
  ModelConfig config;                 ///< the model's shape
  roofline::Precision precision;      ///< weights, activations, KV
  const roofline::Device* device = nullptr;  ///< the GPU (must be set)
  roofline::Assumptions assumptions;  ///< fractions of peak, launch overhead
  /// \brief The executor's CUDA graph buckets (`engine::graph_buckets`; empty: every pass is
  /// launched kernel by kernel). A decode pass that fits one is modeled as the engine runs it:
  /// one graph launch (`Assumptions::cuda_graph`) over its rows padded to the bucket.
  std::vector<int> graph_buckets;
  /// \brief `roofline::pass_cost(...)` of `pass_shape(output)` (padded, as a graph, when it
  /// replays one), in seconds.
  double operator()(const engine::SchedulerOutput& output) const;
};

/// \brief Forwards every pass to an executor and adds its modeled time (`PassTimer`) up.
class ModeledExecutor : public engine::Executor {
 public:
  /// \brief Wraps `inner` (which must outlive this).
  ModeledExecutor(engine::Executor& inner, PassTimer timer) : inner_(inner), timer_(std::move(timer)) {}
  /// \brief `inner.execute(output)`, after adding the pass's modeled time.
  std::vector<int> execute(const engine::SchedulerOutput& output) override {
    modeled_s_ += timer_(output);
    ++passes_;
    return inner_.execute(output);
  }
  /// \brief Σ modeled seconds of the passes run so far.
  double modeled_s() const { return modeled_s_; }
  /// \brief Passes run so far.
  long long passes() const { return passes_; }

 private:
  engine::Executor& inner_;
  PassTimer timer_;
  double modeled_s_ = 0;
  long long passes_ = 0;
};

}  // namespace nanoserve::harness
