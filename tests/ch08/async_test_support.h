#pragma once
/// \file
/// \brief Helpers for the tests of `AsyncEngine` (chapter 8): the fake model behind the
/// executor seam, slowed down so that requests are still in flight when a test acts on them.

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "common/engine/serve/async_engine.h"
#include "common/harness/fake_executor.h"

namespace nanoserve::testing {

/// \brief `FakeExecutor` that sleeps `step_ms` per pass (a real step takes time too).
class SlowFakeExecutor : public engine::Executor {
 public:
  SlowFakeExecutor(const engine::SchedulerConfig& c, int vocab, int step_ms)
      : fake_(c.num_kv_blocks, c.block_size, vocab), step_ms_(step_ms) {}
  std::vector<int> execute(const engine::SchedulerOutput& output) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms_));
    return fake_.execute(output);
  }

 private:
  harness::FakeExecutor fake_;
  int step_ms_;
};

/// \brief Reads `stream` to its end (at most `timeout_s`); returns every delta merged.
inline engine::StreamDelta read_all(engine::RequestStream& stream, double timeout_s = 20) {
  engine::StreamDelta all;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int>(timeout_s * 1000));
  while (!all.finished && std::chrono::steady_clock::now() < deadline) {
    engine::StreamDelta d;
    if (!stream.next(d, std::chrono::milliseconds(50))) continue;
    all.tokens.insert(all.tokens.end(), d.tokens.begin(), d.tokens.end());
    all.logprobs.insert(all.logprobs.end(), d.logprobs.begin(), d.logprobs.end());
    if (d.finished) {
      d.tokens = std::move(all.tokens);
      d.logprobs = std::move(all.logprobs);
      all = std::move(d);
    }
  }
  return all;
}

}  // namespace nanoserve::testing
