// The served run of the `utilization` scenario: outputs really generated through the paged
// cache, the live manager measured after every step — and the bookkeeping replay of the
// lengths it produced must give the same numbers (the two follow one schedule).
#include <gtest/gtest.h>

#include <numeric>

#include "chapters/ch02_paged_kv_cache/served_utilization.h"
#include "common/model_bundle.h"
#include "ch01/engine_test_support.h"
#include "common/error.h"

namespace nanoserve::ch02 {
namespace {

TEST(Ch02ServedUtilization, MeasuredOnTheLiveCacheEqualsTheReplayOfItsOwnLengths) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model model = load_model_bundle("synthetic:tiny").model;
  const engine::DeviceModel device(model, DType::kF32);
  const std::vector<harness::RequestShape> mix = {{"a", 5, 1}, {"b", 11, 1}, {"c", 2, 1}};
  UtilizationConfig c;
  c.max_seq_len = 40;
  c.regions = 3;
  c.block_size = 4;
  c.bytes_per_token = 1;
  ServedConfig served;
  served.temperature = 1.0f;
  served.seed = 7;
  served.max_new_tokens = 12;
  // Half the vocabulary ends a request: the outputs get the model's (sampled) lengths.
  for (int t = 0; t < model.config.vocab_size; t += 2) served.stop_tokens.push_back(t);
  const ServedUtilization run = serve_utilization(device, mix, c, served);

  ASSERT_EQ(run.served.size(), mix.size());
  int longest = 0;
  std::int64_t generated = 0;
  bool varied = false;
  for (std::size_t i = 0; i < mix.size(); ++i) {
    EXPECT_EQ(run.served[i].prompt_tokens, mix[i].prompt_tokens);
    EXPECT_GE(run.served[i].output_tokens, 1);
    EXPECT_LE(run.served[i].output_tokens, served.max_new_tokens);
    EXPECT_EQ(run.caps[i], served.max_new_tokens);
    varied = varied || run.served[i].output_tokens != run.served[0].output_tokens;
    longest = std::max(longest, run.served[i].output_tokens);
    generated += run.served[i].output_tokens;
  }
  EXPECT_TRUE(varied) << "stop tokens on half the vocabulary give different lengths";
  EXPECT_EQ(run.generated, generated);
  EXPECT_EQ(run.steps, longest);  // the prefill and one pass per later token of the longest

  const std::vector<CacheUtilization> replay = replay_utilization(run.served, c);
  EXPECT_DOUBLE_EQ(run.naive_time_average, replay[0].time_average);
  EXPECT_DOUBLE_EQ(run.paged_time_average, replay[1].time_average);
  EXPECT_GT(run.paged_time_average, run.naive_time_average);
}

TEST(Ch02ServedUtilization, ABatchThatCannotFitIsRefusedBeforeAnythingRuns) {
  NANOSERVE_REQUIRE_DEVICE();
  const Model model = load_model_bundle("synthetic:tiny").model;
  const engine::DeviceModel device(model, DType::kF32);
  UtilizationConfig c;
  c.max_seq_len = 16;
  c.regions = 1;  // one region for two requests
  c.block_size = 4;
  EXPECT_THROW(serve_utilization(device, {{"a", 3, 1}, {"b", 3, 1}}, c, ServedConfig{}),
               InvalidArgument);
}

}  // namespace
}  // namespace nanoserve::ch02
