// CUDA graphs of decode steps (engine::DecodeGraphs): vLLM's buckets; a graph captured once and
// replayed with whatever its inputs hold; captured again when its key changes; a launch that
// breaks a capture rule fails cleanly; and a whole decode through chapter 1's NaiveDecoder gives
// the same tokens with one graph replayed for every decode step as with eager launches.
#include <gtest/gtest.h>

#include <vector>

#include "ch01/engine_test_support.h"
#include "common/engine/decode/naive_decoder.h"
#include "common/engine/model/decode_graphs.h"
#include "common/model_bundle.h"
#include "common/sampling/sampler.h"
#include "kernels/copy.h"
#include "kernels/device_buffer.h"

namespace nanoserve::engine {
namespace {

TEST(Ch01DecodeGraphs, BucketsAreVllmsCaptureSizes) {
  EXPECT_EQ(cuda_graph_buckets(1), (std::vector<int>{1}));
  EXPECT_EQ(cuda_graph_buckets(5), (std::vector<int>{1, 2, 4, 5}));
  EXPECT_EQ(cuda_graph_buckets(8), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(cuda_graph_buckets(30), (std::vector<int>{1, 2, 4, 8, 16, 24, 30}));
  EXPECT_EQ(cuda_graph_buckets(32), (std::vector<int>{1, 2, 4, 8, 16, 24, 32}));
  EXPECT_TRUE(cuda_graph_buckets(0).empty());
  const std::vector<int> b = cuda_graph_buckets(32);
  EXPECT_EQ(graph_bucket(b, 1), 1);
  EXPECT_EQ(graph_bucket(b, 3), 4);
  EXPECT_EQ(graph_bucket(b, 9), 16);
  EXPECT_EQ(graph_bucket(b, 32), 32);
  EXPECT_EQ(graph_bucket(b, 33), 0);  // beyond the largest: launched eagerly
}

class Stream {
 public:
  Stream() { CUDA_CHECK(cudaStreamCreate(&s_)); }
  ~Stream() { cudaStreamDestroy(s_); }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

TEST(Ch01DecodeGraphs, Example) {
  NANOSERVE_REQUIRE_DEVICE();
  Stream stream;
  DeviceBuffer<int> in(std::vector<int>{1, 2}), out(2);
  //! [DecodeGraphs]
  DecodeGraphs graphs(cuda_graph_buckets(2));  // buckets 1 and 2
  const std::vector<std::int64_t> key = {graph_key_of(in.get()), graph_key_of(out.get())};
  auto launches = [&] { launch_copy(out.get(), in.get(), 2 * sizeof(int), stream.get()); };
  graphs.run(2, key, stream.get(), launches);  // captured, then replayed
  in.upload({5, 6});                          // new inputs at the same address
  graphs.run(2, key, stream.get(), launches);  // replayed: `launches` is not called
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  EXPECT_EQ(out.to_host(), (std::vector<int>{5, 6}));
  EXPECT_EQ(graphs.counters().captures, 1);
  EXPECT_EQ(graphs.counters().replays, 2);
  //! [DecodeGraphs]
  EXPECT_EQ(graphs.counters().updates, 0);
}

TEST(Ch01DecodeGraphs, ANewKeyCapturesAgainAndUpdatesTheGraph) {
  NANOSERVE_REQUIRE_DEVICE();
  Stream stream;
  DeviceBuffer<int> a(std::vector<int>{1, 2}), b(std::vector<int>{3, 4}), out(2);
  DecodeGraphs graphs({1});
  for (const DeviceBuffer<int>* in : {&a, &b, &b, &a}) {
    graphs.run(1, {graph_key_of(in->get())}, stream.get(), [&] {
      launch_copy(out.get(), in->get(), 2 * sizeof(int), stream.get());
    });
    CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    EXPECT_EQ(out.to_host(), in->to_host());  // a stale graph would copy the other buffer
  }
  EXPECT_EQ(graphs.counters().captures, 1);
  EXPECT_EQ(graphs.counters().updates, 2);  // a → b, b → a
  EXPECT_EQ(graphs.counters().replays, 4);
}

TEST(Ch01DecodeGraphs, ALaunchThatBreaksACaptureRuleFailsAndLeavesTheStreamUsable) {
  NANOSERVE_REQUIRE_DEVICE();
  if (NANOSERVE_REAL_CUDA) GTEST_SKIP() << "the simulator's checks; a GPU reports them alike";
  Stream stream;
  DeviceBuffer<int> in(std::vector<int>{1, 2}), out(2);
  DecodeGraphs graphs({1});
  EXPECT_THROW(graphs.run(1, {}, stream.get(), [&] { DeviceBuffer<int> scratch(4); }), CudaError);
  EXPECT_THROW(graphs.run(1, {}, stream.get(),
                          [&] { CUDA_CHECK(cudaStreamSynchronize(stream.get())); }),
               CudaError);
  EXPECT_THROW(graphs.run(3, {}, stream.get(), [] {}), InvalidArgument);  // not a bucket
  EXPECT_THROW(graphs.run(1, {}, 0, [] {}), InvalidArgument);             // legacy stream
  graphs.run(1, {}, stream.get(), [&] { launch_copy(out.get(), in.get(), 8, stream.get()); });
  CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  EXPECT_EQ(out.to_host(), (std::vector<int>{1, 2}));
  EXPECT_EQ(graphs.counters().captures, 1);
}

// Chapter 1's decoder: the prompt is a prefill (eager), every later step one row, which replays
// the one graph of bucket 1 — with the same tokens, greedy and sampled.
TEST(Ch01DecodeGraphs, NaiveDecoderGivesTheSameTokensReplayingOneGraph) {
  NANOSERVE_REQUIRE_DEVICE();
  const ModelBundle b = load_model_bundle("synthetic:tiny");
  const DeviceModel device(b.model, DType::kF32);
  const std::vector<int> prompt = {1, 17, 40, 3, 99};
  for (const float temperature : {0.0f, 0.9f}) {
    GenerateOptions opt;
    opt.max_new_tokens = 6;
    opt.sampling.temperature = temperature;
    opt.sampling.seed = 11;
    NaiveDecoder eager(device, CacheMode::kNaiveCache, 64);
    NaiveDecoder graphs(device, CacheMode::kNaiveCache, 64, std::nullopt, std::nullopt, true);
    const std::vector<int> want = generate(eager, prompt, opt).tokens;
    EXPECT_EQ(generate(graphs, prompt, opt).tokens, want) << "temperature " << temperature;
    //! [StepCounters]
    const StepCounters c = graphs.runner().counters();
    EXPECT_EQ(c.eager_passes, 1);  // the prompt
    EXPECT_EQ(c.graph_captures, 1);
    EXPECT_EQ(c.graph_replays, 5);  // every later token
    EXPECT_EQ(c.uploads, c.passes);  // one upload per pass
    EXPECT_EQ(describe(c), "6 passes, 6 uploads (1 per pass); 5 replayed from 1 CUDA graph (0 "
                           "padding rows), 1 launched kernel by kernel");
    //! [StepCounters]
    EXPECT_EQ(c.graph_updates, 0);
    EXPECT_EQ(c.padding_rows, 0);
    EXPECT_EQ(eager.runner().counters().graph_replays, 0);
    EXPECT_EQ(describe(eager.runner().counters()),
              "6 passes, 6 uploads (1 per pass); all launched kernel by kernel");
  }
}

}  // namespace
}  // namespace nanoserve::engine
