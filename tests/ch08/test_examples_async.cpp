// Examples of use of the engine's server seam (common/engine/serve/async_engine.h). The code
// between the `//! [Name]` markers is what the type's documentation shows (Doxygen \snippet);
// the test asserts what it claims.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "ch08/async_test_support.h"
#include "common/engine/serve/async_engine.h"
#include "common/harness/fake_executor.h"

namespace nanoserve::engine {
namespace {

TEST(Ch08Examples, AsyncEngine) {
  //! [AsyncEngine]
  SchedulerConfig config;
  config.num_kv_blocks = 64;
  config.block_size = 4;
  // The engine thread owns the scheduler and the executor (here the fake model).
  AsyncEngine engine(config, std::make_unique<harness::FakeExecutor>(64, 4, /*vocab=*/100));

  SamplingParams greedy;
  greedy.temperature = 0.0f;
  Request request = make_request(/*id: assigned by submit*/ 0, {1, 5, 7}, /*max_tokens=*/5, greedy);
  std::shared_ptr<RequestStream> stream = engine.submit(request).front();

  std::vector<int> tokens;
  StreamDelta delta;
  while (!delta.finished) {  // what an HTTP handler does between its writes
    if (stream->next(delta, std::chrono::milliseconds(100))) {
      tokens.insert(tokens.end(), delta.tokens.begin(), delta.tokens.end());
    }
  }
  EXPECT_EQ(delta.finish_reason, FinishReason::kLength);
  EXPECT_EQ(tokens.size(), 5u);
  // The same tokens as the request running alone.
  EXPECT_EQ(tokens, harness::fake_reference_run(request, 100, config.max_model_len).output_tokens());

  EXPECT_TRUE(engine.drain(/*timeout_s=*/1.0));  // nothing left: stops accepting at once
  EXPECT_THROW(engine.submit(request), EngineBusy);
  const EngineSnapshot s = engine.snapshot();
  EXPECT_EQ(s.num_generated_tokens, 5);
  EXPECT_EQ(s.kv.blocks_in_use, 0);  // its blocks went back to the pool
  EXPECT_FALSE(s.accepting);
  //! [AsyncEngine]
}

}  // namespace
}  // namespace nanoserve::engine
