// Examples of use of chapter 3's engine types: the static batcher's configuration and what it
// wastes. The code between the `//! [Name]` markers is what the type's documentation shows
// (Doxygen \snippet), and the test asserts what the example claims.
#include <gtest/gtest.h>

#include <vector>

#include "common/engine/serve/executor.h"
#include "common/engine/serve/static_batcher.h"

namespace nanoserve::engine {
namespace {

/// Samples token 7 for every sequence that samples: a stand-in for the model.
class SevensExecutor final : public Executor {
 public:
  std::vector<int> execute(const SchedulerOutput& output) override {
    return std::vector<int>(static_cast<size_t>(output.num_sampled()), 7);
  }
};

TEST(Ch03Examples, StaticBatchConfig) {
  //! [StaticBatchConfig]
  StaticBatchConfig config;
  config.batch_size = 2;
  config.max_model_len = 32;
  config.num_kv_blocks = 16;
  config.block_size = 4;
  config.validate();
  std::vector<Request> workload;
  workload.push_back(make_request(0, {1, 2}, /*max_tokens=*/1));
  workload.push_back(make_request(1, {1, 3, 4, 5}, /*max_tokens=*/3));

  SevensExecutor executor;
  SimulatedClock clock;
  const ServingRun run = run_static(workload, config, executor, clock);
  // The prefill pads request 0's 2-token prompt to 4; then request 1 decodes twice more
  // while finished request 0 keeps its place (an idle row per step).
  EXPECT_EQ(run.waste.padding_rows, 2);
  EXPECT_EQ(run.waste.idle_rows, 2);
  EXPECT_EQ(run.waste.useful_rows, (2 + 4) + 2);
  EXPECT_DOUBLE_EQ(run.waste.waste_fraction(), 4.0 / 12.0);
  EXPECT_EQ(run.requests.at(1).output_tokens(), (std::vector<int>{7, 7, 7}));
  //! [StaticBatchConfig]
}

}  // namespace
}  // namespace nanoserve::engine
