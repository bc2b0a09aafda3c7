// The KV cache host benchmark: runs, exercises what it claims, and prints its per-call costs
// (informational: no timing is asserted).
#include <gtest/gtest.h>

#include <cstdio>

#include "common/harness/kv_cache_bench.h"
#include "common/error.h"

namespace nanoserve {
namespace {

TEST(Ch02KVCacheBench, RunsTheWorkloadItDescribes) {
  harness::KVCacheBenchOptions o;
  o.num_seqs = 512;
  const harness::KVCacheBenchResult r = harness::bench_kv_cache_manager(o);
  EXPECT_EQ(r.num_blocks, 512 * 20);  // (256 + 64) / 16 blocks each
  EXPECT_EQ(r.allocate_calls, 512);
  EXPECT_EQ(r.append_calls, 512 * 64);
  EXPECT_EQ(r.free_calls, 512);
  // 15 full blocks are looked up per prompt ((256 - 1) / 16); every prompt after the first
  // finds the 8 blocks of the shared 128-token prefix and nothing more.
  EXPECT_DOUBLE_EQ(r.hit_rate, 8.0 * 511 / (15.0 * 512));
  EXPECT_DOUBLE_EQ(r.utilization, 1.0);  // 320 tokens fill 20 blocks exactly
  std::printf("KV cache manager, %d sequences: allocate %.0f ns, append_slot %.0f ns, "
              "free %.0f ns per call\n", o.num_seqs, r.allocate_ns, r.append_ns, r.free_ns);
}

TEST(Ch02KVCacheBench, RejectsASharedPrefixLongerThanThePrompt) {
  harness::KVCacheBenchOptions o;
  o.shared_prefix_tokens = o.prompt_tokens + 1;
  EXPECT_THROW(harness::bench_kv_cache_manager(o), InvalidArgument);
}

}  // namespace
}  // namespace nanoserve
