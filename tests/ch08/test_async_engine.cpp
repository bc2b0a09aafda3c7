// AsyncEngine (common/engine/serve/async_engine.h): the engine on its own thread behind a
// submission queue and per-request streams. The fake model gives exact expected tokens;
// a slowed-down fake keeps requests in flight while a test cancels, fills the queue or drains.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "ch01/engine_test_support.h"
#include "ch08/async_test_support.h"
#include "common/engine/serve/async_engine.h"
#include "common/engine/serve/model_executor.h"
#include "common/harness/fake_executor.h"
#include "common/model_bundle.h"
#include "common/sampling/logprobs.h"

namespace nanoserve::engine {
namespace {

using testing::read_all;
using testing::SlowFakeExecutor;
constexpr int kVocab = 100;

SchedulerConfig small_config() {
  SchedulerConfig c;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 64;
  c.max_model_len = 128;
  c.num_kv_blocks = 64;
  c.block_size = 4;
  return c;
}

Request request_of(std::vector<int> prompt, int max_tokens, float temperature, uint64_t seed) {
  SamplingParams p;
  p.temperature = temperature;
  p.seed = seed;
  return make_request(0, std::move(prompt), max_tokens, p);
}

// Requests submitted from several threads at once each get the tokens they get alone.
TEST(Ch08AsyncEngine, ConcurrentSubmissionsGetTheirSoloTokens) {
  const SchedulerConfig config = small_config();
  AsyncEngine engine(config, std::make_unique<SlowFakeExecutor>(config, kVocab, 1));
  std::vector<std::vector<std::shared_ptr<RequestStream>>> streams(4);
  std::vector<std::vector<Request>> asked(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        Request r = request_of({1, 3 + t, 5 + i, 7}, 3 + i, i % 2 ? 0.8f : 0.0f, 10 * t + i);
        asked[t].push_back(r);
        streams[t].push_back(engine.submit(r).front());
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    for (int i = 0; i < 5; ++i) {
      const StreamDelta got = read_all(*streams[t][i]);
      ASSERT_TRUE(got.finished);
      const Request solo = harness::fake_reference_run(asked[t][i], kVocab, config.max_model_len);
      EXPECT_EQ(got.tokens, solo.output_tokens()) << "thread " << t << " request " << i;
      EXPECT_EQ(got.finish_reason, FinishReason::kLength);
    }
  }
  EXPECT_EQ(engine.snapshot().num_generated_tokens, 4 * (3 + 4 + 5 + 6 + 7));
}

// A cancelled request (a client that went away) finishes as cancelled and frees its blocks.
TEST(Ch08AsyncEngine, CancelFinishesTheStreamAndFreesItsBlocks) {
  const SchedulerConfig config = small_config();
  AsyncEngine engine(config, std::make_unique<SlowFakeExecutor>(config, kVocab, 2));
  auto stream = engine.submit(request_of({1, 2, 3, 4, 5, 6, 7, 8, 9}, 100, 0, 1)).front();
  StreamDelta first;
  ASSERT_TRUE(stream->next(first, std::chrono::seconds(5)));  // it is running
  EXPECT_GT(engine.snapshot().kv.blocks_in_use, 0);
  engine.cancel(stream->id());
  const StreamDelta rest = read_all(*stream);
  ASSERT_TRUE(rest.finished);
  EXPECT_EQ(rest.finish_reason, FinishReason::kCancelled);
  EXPECT_LT(first.tokens.size() + rest.tokens.size(), 100u);
  const EngineSnapshot s = engine.snapshot();
  EXPECT_EQ(s.kv.blocks_in_use, 0);
  EXPECT_EQ(s.stats.num_cancelled, 1);
  EXPECT_EQ(s.num_running, 0);
}

// Past max_waiting queued requests, submit refuses (not closed: try later).
TEST(Ch08AsyncEngine, FullQueueRefusesWithEngineBusy) {
  SchedulerConfig config = small_config();
  config.max_num_seqs = 1;  // one runs, the others wait
  AsyncEngineOptions options;
  options.max_waiting = 2;
  AsyncEngine engine(config, std::make_unique<SlowFakeExecutor>(config, kVocab, 5), {}, options);
  auto running = engine.submit(request_of({1, 2}, 50, 0, 1)).front();
  StreamDelta d;
  ASSERT_TRUE(running->next(d, std::chrono::seconds(5)));  // admitted: no longer queued
  engine.submit(request_of({1, 3}, 5, 0, 1));
  // One place is left: two samples of one request do not fit (n counts), one does.
  EXPECT_THROW(engine.submit(request_of({1, 4}, 5, 0, 1), 2), EngineBusy);
  engine.submit(request_of({1, 4}, 5, 0, 1));
  try {
    engine.submit(request_of({1, 5}, 5, 0, 1));
    FAIL() << "a third waiting request was accepted";
  } catch (const EngineBusy& e) {
    EXPECT_FALSE(e.closed());
    EXPECT_NE(std::string(e.what()).find("queue is full (2 of 2"), std::string::npos) << e.what();
  }
}

// drain() stops accepting at once; what is still running at its deadline is cancelled with a
// detail saying why (never dropped silently).
TEST(Ch08AsyncEngine, DrainDeadlineCancelsWhatIsLeftAndSaysWhy) {
  const SchedulerConfig config = small_config();
  AsyncEngine engine(config, std::make_unique<SlowFakeExecutor>(config, kVocab, 5));
  auto quick = engine.submit(request_of({1, 2}, 2, 0, 1)).front();
  auto slow = engine.submit(request_of({1, 3}, 120, 0, 1)).front();
  EXPECT_FALSE(engine.drain(0.2));
  const StreamDelta q = read_all(*quick), s = read_all(*slow);
  EXPECT_EQ(q.finish_reason, FinishReason::kLength);
  EXPECT_EQ(s.finish_reason, FinishReason::kCancelled);
  EXPECT_NE(s.finish_detail.find("server shutting down"), std::string::npos) << s.finish_detail;
  try {
    engine.submit(request_of({1, 2}, 2, 0, 1));
    FAIL() << "a draining engine accepted a request";
  } catch (const EngineBusy& e) {
    EXPECT_TRUE(e.closed());
  }
  EXPECT_EQ(engine.snapshot().kv.blocks_in_use, 0);
}

// n samples are chapter 7's parallel samples: one request whose prompt is computed once,
// forked copy-on-write into samples with seeds seed, seed + 1, … — each sample's tokens are
// those of a request alone with its seed.
TEST(Ch08AsyncEngine, ParallelSamplesDrawWithConsecutiveSeeds) {
  const SchedulerConfig config = small_config();
  AsyncEngine engine(config, std::make_unique<harness::FakeExecutor>(64, 4, kVocab));
  const Request r = request_of({1, 9, 8}, 6, 1.0f, 40);
  auto streams = engine.submit(r, 3);
  ASSERT_EQ(streams.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    Request alone = r;
    alone.seq.sampling.seed = 40 + i;
    EXPECT_EQ(read_all(*streams[i]).tokens,
              harness::fake_reference_run(alone, kVocab, config.max_model_len).output_tokens());
    if (i > 0) {
      EXPECT_EQ(streams[i]->id(), parallel_sample_id(streams[0]->id(), i));
    }
  }
  // Forked, not three requests: the 3 prompt rows once, then 5 decode rows per sample.
  const EngineSnapshot snap = engine.snapshot();
  EXPECT_EQ(snap.stats.num_scheduled_tokens, 3 + 3 * 5);
  EXPECT_EQ(snap.num_prompt_tokens, 3);
  EXPECT_EQ(snap.num_generated_tokens, 3 * 6);
  EXPECT_EQ(snap.kv.blocks_in_use, 0);
  EXPECT_THROW(engine.submit(r, 0), InvalidArgument);
  EXPECT_THROW(engine.submit(r, 65), InvalidArgument);
}

// Every sample's stream ends, also when the group never forks: rejected (n > max_num_seqs, or
// a prompt too long), or cancelled through any sample's id before or after the fork.
TEST(Ch08AsyncEngine, EverySampleStreamEndsWhenItsGroupIsRejectedOrCancelled) {
  SchedulerConfig config = small_config();
  config.max_num_seqs = 4;
  AsyncEngine engine(config, std::make_unique<SlowFakeExecutor>(config, kVocab, 2));
  for (auto& s : engine.submit(request_of({1, 2, 3}, 4, 1.0f, 7), 5)) {
    const StreamDelta d = read_all(*s);
    EXPECT_EQ(d.finish_reason, FinishReason::kRejected);
    EXPECT_NE(d.finish_detail.find("max_num_seqs = 4"), std::string::npos) << d.finish_detail;
  }
  for (auto& s : engine.submit(request_of(std::vector<int>(200, 3), 4, 1.0f, 7), 3)) {
    EXPECT_EQ(read_all(*s).finish_reason, FinishReason::kRejected);
  }
  auto blocker = engine.submit(request_of({1, 2}, 1000, 0, 1)).front();  // one seat of 4
  StreamDelta first;
  ASSERT_TRUE(blocker->next(first, std::chrono::seconds(5)));
  // 4 samples need all 4 seats: the group waits, unforked, until it is cancelled.
  auto waiting = engine.submit(request_of({1, 2, 3, 4, 5}, 100, 1.0f, 7), 4);
  engine.cancel(waiting[3]->id());  // a sample that does not exist yet cancels its group
  for (auto& s : waiting) {
    const StreamDelta d = read_all(*s);
    EXPECT_EQ(d.finish_reason, FinishReason::kCancelled);
    EXPECT_TRUE(d.tokens.empty());
  }
  auto running = engine.submit(request_of({1, 2, 3, 4, 5}, 1000, 1.0f, 7), 3);
  for (auto& s : running) {  // every sample has a token: the group forked
    StreamDelta d;
    ASSERT_TRUE(s->next(d, std::chrono::seconds(5)));
    EXPECT_FALSE(d.tokens.empty());
  }
  engine.cancel(running[1]->id());
  for (auto& s : running) EXPECT_EQ(read_all(*s).finish_reason, FinishReason::kCancelled);
  engine.cancel(blocker->id());
  EXPECT_EQ(read_all(*blocker).finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(engine.snapshot().kv.blocks_in_use, 0);
}

// A waiting request with n samples takes n places of the waiting queue until it forks.
TEST(Ch08AsyncEngine, AWaitingGroupCountsItsSamplesInTheQueue) {
  SchedulerConfig config = small_config();
  config.max_num_seqs = 2;  // one request runs; a group of 2 must wait for both seats
  AsyncEngineOptions options;
  options.max_waiting = 3;
  AsyncEngine engine(config, std::make_unique<SlowFakeExecutor>(config, kVocab, 5), {}, options);
  auto running = engine.submit(request_of({1, 2}, 100, 0, 1)).front();
  StreamDelta d;
  ASSERT_TRUE(running->next(d, std::chrono::seconds(5)));
  engine.submit(request_of({1, 3}, 5, 1.0f, 1), 2);
  const long long step = engine.snapshot().step;
  while (engine.snapshot().step < step + 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(engine.snapshot().num_waiting, 2);
  EXPECT_THROW(engine.submit(request_of({1, 4}, 5, 0, 1), 2), EngineBusy);
  engine.submit(request_of({1, 4}, 5, 0, 1));
  engine.cancel(running->id());
}

// A request that can never run comes back finished as rejected, with the reason.
TEST(Ch08AsyncEngine, ImpossibleRequestIsRejectedThroughItsStream) {
  SchedulerConfig config = small_config();
  config.num_kv_blocks = 4;  // 16 slots
  AsyncEngine engine(config, std::make_unique<harness::FakeExecutor>(4, 4, kVocab));
  std::vector<int> prompt(40, 3);
  const StreamDelta d = read_all(*engine.submit(request_of(prompt, 2, 0, 1)).front());
  EXPECT_EQ(d.finish_reason, FinishReason::kRejected);
  EXPECT_FALSE(d.finish_detail.empty());
}

TEST(Ch08Logprobs, LogSoftmaxOfTheTokenAndTheTopK) {
  const float logits[4] = {1.0f, 3.0f, 3.0f, -INFINITY};
  const TokenLogprobs lp = token_logprobs(logits, 4, 0, 3);
  const double z = std::log(std::exp(1.0) + 2 * std::exp(3.0));
  EXPECT_NEAR(lp.logprob, 1.0 - z, 1e-6);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].first, 1);  // a tie: the lower id first
  EXPECT_EQ(lp.top[1].first, 2);
  EXPECT_EQ(lp.top[2].first, 0);
  EXPECT_NEAR(lp.top[0].second, 3.0 - z, 1e-6);
  EXPECT_THROW(token_logprobs(logits, 4, 4, 0), InvalidArgument);
  EXPECT_THROW(token_logprobs(logits, 4, 0, -1), InvalidArgument);
}

// The model's executor: a greedy token is the most likely one, so its logprob is top[0]'s,
// whether the logits were sampled on the device (downloaded for logprobs) or on the host.
TEST(Ch08AsyncEngine, ModelExecutorLogprobsMatchTheGreedyTokens) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model model = load_model_bundle("synthetic:tiny").model;
  const DeviceModel device(model, DType::kF32);
  for (bool device_sampling : {true, false}) {
    SchedulerConfig config = small_config();
    ModelExecutorOptions o = executor_options_for(config);
    o.device_sampling = device_sampling;
    AsyncEngine engine(config, std::make_unique<ModelExecutor>(device, o));
    Request with = request_of({1, 20, 30, 40}, 4, 0, 1);
    with.num_logprobs = 2;
    auto a = engine.submit(with).front();
    auto b = engine.submit(request_of({1, 20, 30}, 3, 0, 1)).front();  // asks for none
    Request sampled = request_of({1, 20, 31}, 4, 1.0f, 5);
    sampled.num_logprobs = 1;
    auto group = engine.submit(sampled, 2);  // the fork's first token too
    for (auto& s : group) {
      const StreamDelta g = read_all(*s);
      ASSERT_EQ(g.logprobs.size(), g.tokens.size());
      for (std::size_t i = 0; i < g.tokens.size(); ++i) EXPECT_EQ(g.logprobs[i].token, g.tokens[i]);
    }
    const StreamDelta got = read_all(*a);
    ASSERT_EQ(got.logprobs.size(), got.tokens.size());
    for (std::size_t i = 0; i < got.tokens.size(); ++i) {
      const TokenLogprobs& lp = got.logprobs[i];
      EXPECT_EQ(lp.token, got.tokens[i]);
      ASSERT_EQ(lp.top.size(), 2u);
      EXPECT_EQ(lp.top[0].first, got.tokens[i]);
      EXPECT_FLOAT_EQ(lp.top[0].second, lp.logprob);
      EXPECT_LE(lp.top[1].second, lp.top[0].second);
      EXPECT_LT(lp.logprob, 0.0f);
    }
    EXPECT_TRUE(read_all(*b).logprobs.empty());
  }
}

}  // namespace
}  // namespace nanoserve::engine
