// Chapter 9's modeled comparison (chapters/ch09_distributed/modeled_disagg.h): the same tokens
// in every setup, the hand-off's bytes and time by the formula, the second token waiting for
// the KV, and the point of disaggregation — a decode GPU that never runs a prompt chunk keeps
// its inter-token latency flat.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "chapters/ch09_distributed/modeled_disagg.h"
#include "common/harness/serving_metrics.h"
#include "common/loaders/synthetic_model.h"

namespace nanoserve::ch09 {
namespace {

ModeledSetup setup(const char* link) {
  ModeledSetup s;
  s.timer = harness::PassTimer{synthetic_config("llama3-8b"), roofline::Precision::dense(2),
                               &roofline::find_device("h200"), {}, {}};
  s.link = &roofline::find_link(link);
  engine::SchedulerConfig base;
  base.block_size = 16;
  base.max_model_len = 2048;
  base.num_kv_blocks = 4096;
  base.max_num_seqs = 64;
  s.colocated = base;
  s.colocated.max_num_batched_tokens = 256;
  s.prefill = base;
  s.prefill.max_num_batched_tokens = 2048;
  s.decode = base;
  s.decode.max_num_batched_tokens = 64;
  return s;
}

std::vector<engine::Request> workload() {
  LongWorkload w;
  w.num_requests = 12;
  w.rate = 6;
  w.prompt_median = 768;
  w.prompt_max = 1536;
  w.output_min = 48;
  w.output_max = 96;
  return long_workload(w, synthetic_config("llama3-8b").vocab_size);
}

TEST(Ch09Modeled, DisaggregationKeepsEveryTokenAndFlattensTheInterTokenLatency) {
  const std::vector<engine::Request> w = workload();
  const ModeledSetup s = setup("nvlink4");
  const ModeledRun colocated = modeled_colocated(w, s);
  const ModeledRun disagg = modeled_disaggregated(w, s);
  ASSERT_EQ(colocated.run.requests.size(), w.size());
  ASSERT_EQ(disagg.run.requests.size(), w.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    EXPECT_EQ(disagg.run.requests[i].seq.token_ids, colocated.run.requests[i].seq.token_ids) << i;
    EXPECT_EQ(disagg.run.requests[i].num_output_tokens(), w[i].max_tokens) << i;
  }
  const harness::ServingMetrics c = harness::compute_metrics(colocated.run);
  const harness::ServingMetrics d = harness::compute_metrics(disagg.run);
  // Prompt chunks ride in the colocated engines' decode passes; the decode GPU never has one.
  EXPECT_LT(d.itl.p99, 0.8 * c.itl.p99) << "disaggregated " << d.itl.p99 << " s, colocated "
                                        << c.itl.p99 << " s";
  EXPECT_EQ(colocated.handoffs, 0);
  EXPECT_EQ(disagg.handoffs, static_cast<long long>(w.size()));
}

TEST(Ch09Modeled, EachHandOffMovesItsPromptsBlocksAndTheSecondTokenWaitsForThem) {
  const std::vector<engine::Request> w = workload();
  const ModeledSetup fast = setup("nvlink4"), slow = setup("ib400");
  const ModeledRun a = modeled_disaggregated(w, fast);
  const ModeledRun b = modeled_disaggregated(w, slow);
  double bytes = 0;
  for (const engine::Request& r : w) {
    // ceil(P / 16) blocks × 2 (K, V) × 32 layers × 16 tokens × 8 heads × 128 × 2 bytes.
    bytes += double((r.prompt_len + 15) / 16) * 2 * 32 * 16 * 8 * 128 * 2;
  }
  EXPECT_DOUBLE_EQ(a.kv_bytes, bytes);
  EXPECT_DOUBLE_EQ(b.kv_bytes, bytes);
  for (std::size_t i = 0; i < w.size(); ++i) {
    const engine::Request& ra = a.run.requests[i];
    const engine::Request& rb = b.run.requests[i];
    // The first token comes from the prefill GPU, whatever the link; the second only after
    // the KV crossed it.
    EXPECT_DOUBLE_EQ(ra.token_times_s[0], rb.token_times_s[0]) << i;
    const double ib = roofline::transfer_s(roofline::find_link("ib400"),
                                           fast.kv_bytes(w[i].prompt_len));
    EXPECT_GE(rb.token_times_s[1] - rb.token_times_s[0], ib) << i;
  }
  EXPECT_GT(*std::max_element(b.transfer_s.begin(), b.transfer_s.end()),
            *std::max_element(a.transfer_s.begin(), a.transfer_s.end()));
}

}  // namespace
}  // namespace nanoserve::ch09
